"""dialeval significance_time: crowdsourcing time needed for a significant difference, per technique,
metric and model pair (Smith et al. 2022, 4.4.3, App. E, F, G, Table 3 "PW combo", Figures 7-9, 11-13).

CLI glue only: the statistics live in parlai_dialeval.analysis.significance_time. See
docs/single_model_analysis.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from parlai.core.script import register_script
from tqdm import tqdm

from parlai_dialeval.analysis import single_model as sm
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import option, turn_range, turns_text, weightings, weightings_text
from parlai_dialeval.protocols import PROTOCOLS
from parlai_dialeval.report import Report
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs

# Loaded on first use, so --help and option errors do not wait for scipy and matplotlib.
st = lazy_module("parlai_dialeval.analysis.significance_time")


def _ratio(text, flag: str = "--combo-ratio") -> tuple[int, int]:
    if isinstance(text, tuple):
        return text
    try:
        turn, dialog = (int(x) for x in str(text).split(":"))
    except ValueError:
        raise DialevalError(f"{flag} '{text}': expected TURN:DIALOG, e.g. 1:5") from None
    if turn < 0 or dialog < 0 or turn + dialog == 0:
        raise DialevalError(f"{flag} '{text}': expected two non-negative integers, not both 0")
    return turn, dialog


@dataclass
class SignificanceTimeConfig:
    pw_turns: tuple[int, int] | None = option((2, 6), "PW-Turn Bot Speaker turns FIRST-LAST or 'all'",
                                              parse=turn_range, metavar="FIRST-LAST", shown="2-6")
    sm_turns: tuple[int, int] | None = option((3, 6), "SM-Turn Bot Speaker turns FIRST-LAST or 'all'",
                                              parse=turn_range, metavar="FIRST-LAST", shown="3-6")
    power: float = option(0.8, "fraction of resamples that must be significant (0 < power < 1)", kind="probability")
    alpha: float = option(0.05, "significance level (0 < alpha < 1)", kind="probability")
    trials: int = option(400, "resamples per sample size (>= 1)", kind="positive_int")
    max_multiple: float = option(4.0, "largest sample size tried, as a multiple of the collected data (> 0)",
                                 kind="positive")
    chunk_minutes: float = option(45.0, "chunk length for App. E variability (> 0)", kind="positive")
    onboarding_seconds: float = option(0.0, "onboarding time per worker when neither records nor the study say",
                                       kind="non_negative")
    combo_ratio: tuple[int, int] = option((1, 5), "PW-Turn:PW-Dialog(self-chat) ratio of PW combo", parse=_ratio,
                                          metavar="TURN:DIALOG", shown="1:5")
    weights: list = option(list(sm.DEFAULT_WEIGHTS), "SM-Turn:SM-Dialog weightings for the App. G combination",
                           parse=weightings, metavar="T:D,...", shown=weightings_text(sm.DEFAULT_WEIGHTS))
    reference: str | None = option(None, "only pairs involving this model")
    seed: int = option(0, "random seed (>= 0)", kind="non_negative_int")


def _win_rate(sample: st.Sample, n_boot: int = 200, seed: int = 0) -> float:
    if sample.b is None:
        decided = sample.a.values[~np.isnan(sample.a.values)]
        return float(decided.mean()) if len(decided) else np.nan
    return sm.effective_win_rate(sample.a.values, sample.b.values, n_boot, seed)


def _means(sample: st.Sample) -> tuple[float, float]:
    """Each model's mean score in a t-test sample (NaN for binomial ones): the point estimates a ranking
    reads, where the effective win rate is resampled and splits equal models. Sorted first so that equal
    scores in another order give the same mean to the last bit, and equal models tie."""
    if sample.b is None:
        return np.nan, np.nan
    return float(np.sort(sample.a.values).mean()), float(np.sort(sample.b.values).mean())


def _chunk_rate(sample: st.Sample):
    if sample.b is None:
        return None  # default: binomial win rate of the chunk

    def rate(chunk):
        a = chunk.loc[chunk["model"] == sample.model_a, "value"].to_numpy(float)
        b = chunk.loc[chunk["model"] == sample.model_b, "value"].to_numpy(float)
        return sm.effective_win_rate(a, b, 200, 0) if len(a) and len(b) else np.nan

    return rate


def analyze(data, out: Path, pw_turns=(2, 6), sm_turns=(3, 6), power=0.8, alpha=0.05, trials=400,
            max_multiple=4.0, chunk_minutes=45.0, onboarding=0.0, combo_ratio=(1, 5),
            weights=sm.DEFAULT_WEIGHTS, reference=None, seed=0) -> dict:
    samples = (st.pairwise_samples(data, pw_turns, onboarding)
               + st.single_model_samples(data, sm_turns, onboarding))
    if reference is not None:
        samples = [s for s in samples if reference in (s.model_a, s.model_b)]
    if not samples:
        raise DialevalError("no comparisons or SM ratings to resample (see docs/single_model_analysis.md)")
    combos = []
    by_key = {(s.technique, s.metric, s.model_a, s.model_b): s for s in samples}
    for (technique, metric, a, b), turn in by_key.items():
        dialog = by_key.get(("pw_dialog_self", metric, a, b))
        if technique == "pw_turn" and dialog is not None:
            units = st.combo_units(turn.a, dialog.a, combo_ratio, seed=seed)
            combos.append(st.Sample(f"pw_combo {combo_ratio[0]}:{combo_ratio[1]}", metric, a, b, units, None,
                                    pd.DataFrame(columns=["order", "cost", "value"])))
    combination = st.combination_samples(data, weights, sm_turns, onboarding)
    if reference is not None:
        combination = [s for s in combination if reference in (s.model_a, s.model_b)]
    rows, curves, chunk_rows = [], [], []
    for sample in tqdm(samples + combos + combination, desc="resampling", unit="sample"):
        curve = st.power_curve(sample.a, sample.b, trials=trials, alpha=alpha, seed=seed, max_multiple=max_multiple,
                               target=power)
        estimate = st.time_to_significance(curve, power)
        key = {"technique": sample.technique, "metric": sample.metric, "model_a": sample.model_a,
               "model_b": sample.model_b}
        available = len(sample.a) if sample.b is None else min(len(sample.a), len(sample.b))
        mean_a, mean_b = _means(sample)
        rows.append({**key, "test": sample.test, "win_rate_a": _win_rate(sample, seed=seed), "mean_a": mean_a,
                     "mean_b": mean_b, "n_available": available,
                     "n_needed": estimate["n"], "n_needed_is": estimate["bound"],
                     "hours_needed": estimate["time_s"] / 3600,
                     "reached": estimate["reached"], "extrapolated": estimate["extrapolated"],
                     "durations_known": bool(np.isfinite(sample.a.cost).all()
                                             and (sample.b is None or np.isfinite(sample.b.cost).all()))})
        curves.append(curve.assign(**key))
        if len(sample.chunks) and sample.chunks["cost"].notna().all() and sample.chunks["cost"].sum() > 0:
            chunks = st.chunk_win_rates(sample.chunks, chunk_minutes * 60, _chunk_rate(sample))
            chunk_rows.append(chunks.assign(**key))
    table = pd.DataFrame(rows)
    chunk_table = pd.concat(chunk_rows) if chunk_rows else pd.DataFrame(
        columns=["chunk", "n", "time_s", "win_rate", "technique", "metric", "model_a", "model_b"])
    variability = (chunk_table.groupby(["technique", "metric", "model_a", "model_b"])["win_rate"]
                   .agg(sd="std", chunks="size").reset_index())
    results = {"time_to_significance": table, "power_curves": pd.concat(curves), "chunk_win_rates": chunk_table,
               "chunk_variability": variability}
    report = _report(results, out, power, alpha, trials, chunk_minutes, onboarding, pw_turns, sm_turns, weights)
    results["written"] = Outputs(dict(results), report=report).write(out)
    return results


def _report(results, out, power, alpha, trials, chunk_minutes, onboarding, pw_turns, sm_turns, weights) -> Report:
    from parlai_dialeval.analysis.significance_time.plots import hours_by_technique  # pyplot: not for --help

    table = results["time_to_significance"]
    report = Report("Crowdsourcing time needed for significance", out)
    report.text(f"Each technique's ratings are resampled ({trials} resamples per size) at growing sizes; the time "
                f"needed is the worker time at which {power:.0%} of resamples are significant at p < {alpha} "
                "(two-sided binomial test for pairwise techniques, ties excluded; two-sided independent t-test for "
                f"single-model ones). Bot Speaker turns used: PW-Turn "
                f"{turns_text(pw_turns)}, SM-Turn {turns_text(sm_turns)} (Smith App. F). "
                f"Onboarding is charged once per distinct worker (default {onboarding:g} s when records do not say). "
                "'extrapolated' marks sizes beyond the collected data (bootstrap). Every size between the last "
                "one below the target and the first reaching it is evaluated too, so n_needed is the first size "
                "reaching it ('exact' in n_needed_is; resampling noise remains); 'upper' means the smallest size "
                "tried already reached it, 'above N' that no size up to N did.", note=True)
    bounds = table[table["n_needed_is"].isin(["upper", "interpolated"]) | ~table["reached"]]
    if len(bounds):
        report.text(f"{len(bounds)} row(s) give a bound rather than the first size reaching {power:.0%} power: "
                    "see n_needed_is.", note=True)
    unknown = sorted(set(table["metric"]) - {c for p in PROTOCOLS.values() for c in p.criteria()})
    if unknown:
        report.text("Metrics named by their question text (neither meta.criterion nor a question of "
                    "parlai_dialeval.protocols names a criterion): " + "; ".join(unknown), note=True)
    if not table["durations_known"].all():
        report.text("Some techniques have records without a duration (and no conversation duration to share): "
                    "their hours are unknown (blank); sizes are still reported.", note=True)
    report.heading("Time needed per technique (Smith Figures 7-9)")
    main = table[~table["technique"].str.startswith("sm_combo")]
    report.table(main)
    for (a, b), part in main.groupby(["model_a", "model_b"]):
        fig = hours_by_technique(part, f"{a} vs {b}")
        if fig is not None:
            report.figure(fig, _stem("time", a, b), f"Time needed for significance, {a} vs {b}")
    combo = table[table["technique"].str.startswith("sm_combo")]
    if len(combo):
        report.heading("SM-Turn + SM-Dialog weighted combination (Smith App. G, Figures 11-13)")
        report.text(f"Weightings SM-Turn:SM-Dialog {weightings_text(weights)}; per-conversation score, cost = the "
                    "conversation's duration.")
        report.table(combo)
        for (a, b), part in combo.groupby(["model_a", "model_b"]):
            fig = hours_by_technique(part, f"{a} vs {b}: SM-Turn:SM-Dialog weighting")
            if fig is not None:
                report.figure(fig, _stem("combination", a, b), f"Weighted SM combination, {a} vs {b}")
    report.heading(f"Win-rate variability across {chunk_minutes:g}-minute chunks (Smith App. E, Table 8)")
    report.table(results["chunk_variability"])
    return report


def _stem(kind: str, a: str, b: str) -> str:
    return f"{kind}_{a}_vs_{b}".replace("/", "_").replace(" ", "_")


@register_script("significance_time")
class SignificanceTime(AnalysisCommand):
    description = "Crowdsourcing time needed for significance (Smith et al. 2022)"
    options_title = "Time to significance"
    config_class = SignificanceTimeConfig

    def analyse(self, data, config, checks, out):
        return analyze(data, out, config.pw_turns, config.sm_turns, config.power, config.alpha, config.trials,
                       config.max_multiple, config.chunk_minutes, config.onboarding_seconds, config.combo_ratio,
                       config.weights, config.reference, config.seed)
