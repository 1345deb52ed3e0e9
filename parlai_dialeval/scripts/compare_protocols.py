"""dialeval compare_protocols: runs of different protocols on the same models, side by side: worker-hours
and money to significance per model pair, the ranking each protocol gives and how far they agree, and
worker agreement per protocol (docs/adaptive_evaluation.md).

CLI glue only: the time to significance comes from analysis.significance_time (its own report is written
to OUT/significance_time/), the comparison from analysis.protocol_comparison.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from parlai.core.script import register_script

from parlai_dialeval.options import option, turn_range
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs


@dataclass
class CompareConfig:
    power: float = option(0.8, "power at which a difference counts as reached (0 < power < 1)", kind="probability")
    alpha: float = option(0.05, "significance level (0 < alpha < 1)", kind="probability")
    trials: int = option(200, "resamples per sample size", kind="positive_int")
    hourly_pay: float = option(12.0, "pay per worker-hour, in your currency", kind="non_negative")
    fee: float = option(0.333, "platform fee as a share of pay (Prolific: 0.333)", kind="non_negative")
    pw_turns: tuple[int, int] | None = option((2, 6), "PW-Turn Bot Speaker turns FIRST-LAST or 'all'",
                                              parse=turn_range, metavar="FIRST-LAST", shown="2-6")
    sm_turns: tuple[int, int] | None = option((3, 6), "SM-Turn Bot Speaker turns FIRST-LAST or 'all'",
                                              parse=turn_range, metavar="FIRST-LAST", shown="3-6")
    seed: int = option(0, "random seed of the resampling (>= 0)", kind="non_negative_int")


def analyze(data, out: Path, config: CompareConfig = CompareConfig()) -> dict:
    from parlai_dialeval.analysis import protocol_comparison as pc
    from parlai_dialeval.errors import DialevalError
    from parlai_dialeval.report import Report
    from parlai_dialeval.scripts import significance_time

    times = significance_time.analyze(data, out / "significance_time", pw_turns=config.pw_turns,
                                      sm_turns=config.sm_turns, power=config.power, alpha=config.alpha,
                                      trials=config.trials, seed=config.seed)["time_to_significance"]
    times = times[~times["technique"].str.contains("combo")]
    if times["technique"].nunique() < 2:
        raise DialevalError(f"only one protocol in the data ({', '.join(times['technique'].unique())}): "
                            "compare_protocols needs runs of two or more protocols on the same models")
    priced = pc.costs(times, config.hourly_pay, config.fee)
    ranked = pc.rankings(times)
    tables = {"cost_to_significance": priced, "rankings": ranked, "ranking_agreement": pc.ranking_agreement(ranked),
              "cheapest_protocol": pc.cheapest(priced), "worker_agreement": pc.worker_agreement(data.comparisons)}
    report = Report("Protocols compared", out)
    report.text(f"Time to significance: each protocol's judgments resampled at growing sizes until {config.power:.0%} "
                f"of resamples are significant at p < {config.alpha} (details in significance_time/report.html). "
                f"Money = worker-hours x {config.hourly_pay:g} x (1 + fee {config.fee:g}). Rankings, within one "
                "protocol: pairwise, each model's mean win rate over its pairs; single-model, its mean score (mean "
                "A / mean B), not the effective win rate (win rate A, from 200 bootstrap resamples, which splits "
                "equal models by chance). Equal scores share a rank.")
    report.heading("What significance costs, per model pair")
    report.table(priced[["technique", "metric", "model_a", "model_b", "win_rate_a", "mean_a", "mean_b",
                         "n_needed", "n_needed_is",
                         "hours_needed", "money_needed", "reached", "extrapolated"]], floatfmt="{:,.2f}")
    if priced["hours_needed"].notna().any():
        report.figure(_hours_plot(priced), "hours_to_significance", "Worker-hours to significance per protocol")
    else:
        report.text("No protocol's judgments carry durations, so hours and money are unknown.", note=True)
    report.heading("Cheapest protocol per model pair")
    report.table(tables["cheapest_protocol"], floatfmt="{:,.2f}",
                 empty="no protocol reached significance for any pair")
    report.heading("Rankings, side by side")
    report.table(ranked.pivot_table(index="model", columns=pc.PROTOCOL, values="rank").reset_index(),
                 floatfmt="{:.0f}")
    report.table(tables["ranking_agreement"], caption="Kendall's tau between protocols (blank: one of the two "
                                                      "ranks every model equal)")
    report.heading("Worker agreement (pairwise protocols)")
    report.table(tables["worker_agreement"], empty="no pairwise judgments")
    return {**tables, "written": Outputs(tables=tables, report=report).write(out)}


def _hours_plot(priced):
    import matplotlib.pyplot as plt

    frame = priced.assign(pair=priced["model_a"] + " vs " + priced["model_b"],
                          protocol=priced["technique"] + " / " + priced["metric"])
    pivot = frame.pivot_table(index="pair", columns="protocol", values="hours_needed", aggfunc="first")
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * len(pivot) * max(1, len(pivot.columns) / 3)))
    pivot.plot.barh(ax=ax)
    ax.set_xlabel("worker-hours to significance")
    ax.legend(fontsize=7)
    return fig


@register_script("compare_protocols")
class CompareProtocols(AnalysisCommand):
    description = "Protocols side by side: money and time to significance, rankings, agreement"
    options_title = "Protocol comparison"
    config_class = CompareConfig

    def analyse(self, data, config, checks, out):
        return analyze(data, out, config)
