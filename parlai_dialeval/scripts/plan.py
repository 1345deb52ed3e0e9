"""dialeval plan: judgments, worker-hours and money a study needs before it runs, per protocol, for
fixed-n and sequential (anytime-valid) designs (docs/adaptive_evaluation.md).

CLI glue only: the formulas and simulations live in parlai_dialeval.adaptive.planner.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.options import checked, names, option
from parlai_dialeval.scripts.command_line import add_config_args, add_unverified_arg, config_from_opt


def _rates(text, flag):
    return [checked(flag, "probability")(part) for part in names(text) or []]


@dataclass
class PlanConfig:
    win_rates: list = option([0.55, 0.6, 0.65], "pairwise protocols (A/B, ACUTE, PW-Dialog): assumed win rates of "
                             "the better model, comma-separated", parse=_rates, metavar="P,P,...",
                             shown="0.55,0.6,0.65")
    tie_rate: float = option(0.22, "share of pairwise votes that are ties (ChatEval's median: 0.22)",
                             kind="non_negative")
    models: int = option(2, "models the study compares (K >= 2): the sequential design settles a pair at "
                         "certify's K(K-1)/alpha, the fixed design tests each of the K(K-1)/2 pairs at "
                         "alpha/(K(K-1)/2)", kind="positive_int")
    votes_per_item: int = option(1, "pairwise votes per item: workers per prompt or conversation pair (A/B, "
                                 "ACUTE), turns per conversation (PW-Turn)", kind="positive_int")
    icc: float = option(0.0, "intraclass correlation of decided votes within an item (ChatEval's median: 0.13)",
                        kind="non_negative")
    sm_turn_icc: float = option(0.0, "SM-Turn: intraclass correlation of turn ratings within a conversation",
                                kind="non_negative")
    sm_turn_rates: list = option([0.70, 0.65], "SM-Turn: the two models' assumed success rates", parse=_rates,
                                 metavar="P,P", shown="0.7,0.65")
    sm_dialog_means: list = option([4.19, 3.97], "SM-Dialog: the two models' assumed Likert means (Smith et al.)",
                                   metavar="M,M")
    sm_dialog_sd: float = option(1.0, "SM-Dialog: standard deviation of a dialogue's Likert score", kind="positive")
    turns_per_dialog: int = option(5, "SM-Turn: bot turns judged per conversation", kind="positive_int")
    alpha: float = option(0.05, "significance level (0 < alpha < 1)", kind="probability")
    power: float = option(0.8, "power wanted (0 < power < 1)", kind="probability")
    seconds_per_judgment: float = option(67.0, "seconds a worker spends per judgment (Smith: 67 PW-Dialog, "
                                         "89 PW-Turn)", kind="positive")
    qc_pass_rate: float = option(1.0, "share of workers passing quality control (0 < rate <= 1)", kind="positive")
    hourly_pay: float = option(12.0, "pay per worker-hour, in your currency", kind="non_negative")
    fee: float = option(0.333, "platform fee as a share of pay (Prolific: 0.333)", kind="non_negative")
    simulations: int = option(400, "simulated studies per sequential estimate", kind="positive_int")
    judge_agreement: float | None = option(None, "an LLM judge's agreement with the majority of an item's votes "
                                           "(0 < X < 1): adds the fixed pairwise designs with the judge (PPI++, "
                                           "docs/ppi.md) next to the human-only ones", kind="probability")
    judge_pool: float = option(5.0, "with --judge-agreement or --judge: items the judge alone answers, as a "
                               "multiple of the human-only study's items", kind="non_negative")
    judge: str | None = option(None, "with --pilot: a `dialeval judge` output on the pilot's items: its agreement and "
                               "its correlation with the items' mean votes are measured there and the fixed pairwise "
                               "designs with that judge (PPI++) are added next to the human-only ones (docs/ppi.md)",
                               metavar="F.jsonl")


def plan(config: PlanConfig, out: Path, pilot=None) -> dict:
    """Plan from ``config``'s assumptions; where a ``pilot`` (EvalData) is given, what it measures
    replaces the assumptions it covers."""
    import dataclasses

    import pandas as pd

    from parlai_dialeval.adaptive import planner
    from parlai_dialeval.errors import DialevalError
    from parlai_dialeval.report import Report
    from parlai_dialeval.scripts.analysis_command import Outputs

    measured, judged = {}, None
    if config.judge and pilot is None:
        raise DialevalError("--judge measures the judge on a pilot: give --pilot too (or --judge-agreement "
                            "without one)")
    if pilot is not None:
        from parlai_dialeval.analysis import single_model as sm

        try:
            measured = planner.assumptions_from_pilot(pilot.comparisons, sm.sm_turn_ratings(pilot.ratings),
                                                      sm.sm_dialog_ratings(pilot.ratings))
        except ValueError as error:
            raise DialevalError(f"--pilot: {error}") from None
        config = dataclasses.replace(config, **measured)
        if config.judge:
            from parlai_dialeval.adaptive import ppi_planning
            from parlai_dialeval.judge.output import load_judge

            try:
                judged = ppi_planning.pilot_judge(pilot.comparisons, load_judge(config.judge, "comparisons"))
            except ValueError as error:
                raise DialevalError(f"--judge {config.judge}: {error}") from None
            config = dataclasses.replace(config, judge_agreement=judged["agreement"])
    if config.qc_pass_rate > 1:
        raise DialevalError(f"--qc-pass-rate {config.qc_pass_rate}: expected a share between 0 and 1")
    if len(config.sm_turn_rates) != 2 or len(config.sm_dialog_means) != 2:
        raise DialevalError("--sm-turn-rates and --sm-dialog-means take two values each, one per model")
    costs = planner.Costs(config.seconds_per_judgment, config.qc_pass_rate, config.hourly_pay, config.fee)
    try:
        if config.models < 2:
            raise ValueError(f"--models {config.models}: a study compares at least two models")
        if not (config.icc < 1 and config.sm_turn_icc < 1):
            raise ValueError("--icc and --sm-turn-icc are correlations below 1")
        pairwise = planner.plan_pairwise(config.win_rates, config.tie_rate, costs, config.alpha, config.power,
                                         config.models, config.simulations, config.votes_per_item, config.icc)
        means = [float(m) for m in config.sm_dialog_means]
    except ValueError as error:
        raise DialevalError(str(error)) from None
    if config.sm_turn_rates[0] == config.sm_turn_rates[1] or means[0] == means[1]:
        raise DialevalError("the two models' assumed rates and means must differ: no study can tell equal models apart")
    turn_n = planner.sm_turn_per_model(*config.sm_turn_rates, config.alpha, config.power, config.turns_per_dialog,
                                       config.sm_turn_icc)
    dialog_n = planner.sm_dialog_per_model(*means, config.sm_dialog_sd, config.alpha, config.power)
    single = pd.DataFrame([
        planner.plan_per_model("sm_turn", turn_n / config.turns_per_dialog, costs,
                               f"success {config.sm_turn_rates[0]:.2f} vs {config.sm_turn_rates[1]:.2f}, "
                               f"{config.turns_per_dialog} turns per conversation, ICC {config.sm_turn_icc:g}",
                               config.turns_per_dialog),
        planner.plan_per_model("sm_dialog", dialog_n, costs, f"Likert {means[0]} vs {means[1]}, SD {config.sm_dialog_sd}"),
    ])
    report = Report("Study plan", out)
    report.text(f"Power {config.power} at alpha {config.alpha}; {config.seconds_per_judgment:g} s per judgment, "
                f"{config.qc_pass_rate:g} of workers passing quality control, pay {config.hourly_pay:g} per hour "
                f"plus a fee of {config.fee:g}. Pairwise designs count items (prompts, conversation pairs, "
                f"conversations) of {config.votes_per_item} vote(s) each at within-item ICC {config.icc:g}, the unit "
                "of independence of the analyses: the fixed design is sized for analyze_pairwise's exact binomial "
                f"test over items won and lost, at alpha / {config.models * (config.models - 1) // 2} "
                f"(Bonferroni over the pairs of {config.models} models); the sequential design is the rule of "
                f"`dialeval certify`, simulated: one betting outcome per item, a pair settled at K(K-1)/alpha = "
                f"{config.models * (config.models - 1) / config.alpha:,.0f}, looking after every item (p50 is the "
                "median study, p80 and p90 the costlier ones). SM-Turn sizes are multiplied by the design effect "
                "of turns clustered in conversations.")
    if measured:
        report.text("Measured on the pilot: " + "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in measured.items())
                    + ".", note=True)
    report.heading("Pairwise protocols (per model pair)")
    capped = pairwise[pairwise["items_is"].str.startswith("above")]
    if len(capped):
        report.warn(f"{len(capped)} sequential percentile(s) depend on simulated studies still open at "
                    f"{planner.SEQUENTIAL_CAP:,} items, where a simulation stops: items_is says 'above N' (a lower "
                    "bound) and no items, votes or money are given, as there is no estimate.")
    report.table(pairwise, floatfmt="{:,.1f}")
    report.figure(_plot(pairwise), "pairwise_plan", "Worker-hours per model pair: fixed design vs sequential")
    report.heading("Single-model protocols (per model)")
    report.table(single, floatfmt="{:,.1f}")
    tables = {"pairwise_plan": pairwise, "single_model_plan": single}
    if config.judge_agreement is not None:
        tables["judge_plan"] = _judge_plan(pairwise, config, costs, report, judged)
    outputs = Outputs(tables=tables, report=report)
    return {"pairwise": pairwise, "single_model": single, "judge": tables.get("judge_plan"),
            "written": outputs.write(out)}


def _judge_plan(pairwise, config: PlanConfig, costs, report, judged: dict | None = None):
    """Per fixed pairwise design: the human judgments needed with the judge for the same precision;
    ``judged``: the judge measured on the pilot (its correlation replaces the modelled one)."""
    import pandas as pd

    from parlai_dialeval.adaptive import ppi_planning

    rows = []
    for row in pairwise[pairwise["design"] == "fixed"].itertuples(index=False):
        rate = float(row.assumption.split()[-1])
        rho = judged["correlation"] if judged else ppi_planning.judge_correlation(
            config.judge_agreement, rate, int(row.votes_per_item), float(row.icc))
        share = ppi_planning.human_share(rho, config.judge_pool, row.items)
        rows.append({"protocol": row.protocol, "assumption": row.assumption, "design": "fixed, with judge (PPI++)",
                     "judge_agreement": config.judge_agreement, "judge_correlation": rho, "share_of_human_only": share,
                     "human_only_judgments": row.judgments,
                     "judge_items": config.judge_pool * row.items,
                     **costs.table(share * row.judgments)})
    table = pd.DataFrame(rows)
    report.heading("With an LLM judge (PPI++)")
    if judged:
        report.text(f"The judge measured on the pilot ({config.judge}, {judged['items']} of the pilot's items): "
                    f"it agrees with the majority of an item's votes {judged['agreement']:.0%} of the time and its "
                    f"answers correlate {judged['correlation']:.2f} with the items' mean votes (within each model "
                    "pair); that correlation sizes the designs below. On the pilot itself, its PPI++ win rates were "
                    f"as precise as a human-only study with {judged['pilot_gain']:.2f} times the pilot's human "
                    "judgments (median over pairs; that depends on how many items the judge alone answered there).",
                    note=True)
    report.text(f"A judge that agrees with the majority of an item's votes {config.judge_agreement:.0%} of the time "
                f"answers {config.judge_pool:g} times as many items as the human-only study; people judge a random "
                f"sample of items, {config.votes_per_item} vote(s) each at within-item ICC {config.icc:g} (as above). "
                "judge_correlation is the correlation of an item's mean vote with the judge's answer under that "
                "model (or measured on the pilot); share_of_human_only the human judgments needed for the precision "
                "of the human-only fixed design (PPI++ at its best weight; a normal-theory approximation of the exact "
                "test the human-only design is sized for). The sequential designs above use people's votes only.")
    report.table(table, floatfmt="{:,.3g}")
    if config.icc == 0 and not judged:
        report.warn("--judge-agreement with --icc 0: the votes on an item then share nothing a judge could see, so "
                    "agreement above chance is not attainable and the judge plan is optimistic; give --icc "
                    "(ChatEval's median 0.13) or measure it with --pilot.")
    return table


def _plot(pairwise):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for (design, statistic), part in pairwise.groupby(["design", "statistic"], sort=False):
        ax.plot(part["assumption"], part["worker_hours"], marker="o", label=f"{design} {statistic}")
    ax.set_ylabel("worker-hours")
    ax.set_yscale("log")
    ax.legend()
    return fig


@register_script("plan")
class Plan(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Judgments, worker-hours and money a study needs, per protocol and design")
        parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
        parser.add_argument("--pilot", nargs="+", default=None, metavar="PATH",
                            help="a pilot's export (any importable format): its win rates, tie share, votes per "
                                 "item and ICC, seconds per judgment, SM-Turn rates, turns per conversation and ICC, "
                                 "and SM-Dialog means and SD replace the assumptions below")
        add_unverified_arg(parser)
        add_config_args(parser.add_argument_group("Assumptions"), PlanConfig)
        return parser

    def run(self):
        out = Path(self.opt["out"])
        pilot = None
        if self.opt.get("pilot"):
            from parlai_dialeval.scripts.command_line import load_data

            pilot = load_data(self.opt, key="pilot")
        result = plan(config_from_opt(self.opt, PlanConfig), out, pilot)
        print(f"wrote {', '.join(result['written'])} to {out}")
        return result
