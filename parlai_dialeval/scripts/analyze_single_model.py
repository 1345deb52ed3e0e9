"""dialeval analyze_single_model: SM-Turn and SM-Dialog analysis (Smith et al. 2022, 4.3, 4.4.1, App. G).

CLI glue only: analysis/single_model_result.py computes the results (from analysis.single_model) and this
command writes them; the figure in analysis.single_model_plots. See docs/single_model_analysis.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from parlai.core.script import register_script

from parlai_dialeval import verdict
from parlai_dialeval.analysis.completeness import finished_only
from parlai_dialeval.analysis.multiple_testing import CORRECTIONS, DEFAULT_CORRECTION, HELP, describe
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import option, turn_range, turns_text, weightings, weightings_text
from parlai_dialeval.report import Report
from parlai_dialeval.scripts import evidence_option
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs
from parlai_dialeval.scripts.judge_option import HELP as JUDGE_HELP

# Loaded on first use, so --help and option errors do not wait for scipy and matplotlib.
sm = lazy_module("parlai_dialeval.analysis.single_model")
single_model_plots = lazy_module("parlai_dialeval.analysis.single_model_plots")
single_model_result = lazy_module("parlai_dialeval.analysis.single_model_result")

# Fewer conversations than this per model in a test: the report warns that the test is weak.
SMALL_N = 5


@dataclass
class SingleModelConfig:
    sm_turns: tuple[int, int] | None = option(
        sm.DEFAULT_SM_TURNS, "Bot Speaker turns FIRST-LAST for the subset (WTA, t-tests, win rates, combination), "
                             "or 'all' (default: 3-6, Smith 4.4.1)", parse=turn_range, metavar="FIRST-LAST")
    reference: str | None = option(None, "compare this model with each other model (default: every pair)")
    n_boot: int = option(1000, "bootstrap resamples for effective win rates (>= 1)", kind="positive_int")
    seed: int = option(0, "random seed", kind="int")
    weights: list = option(list(sm.DEFAULT_WEIGHTS), "SM-Turn:SM-Dialog weightings for the App. G combination, "
                           "comma separated", parse=weightings, metavar="T:D,...")
    alpha: float = option(0.05, "significance level; intervals are 1 - alpha (0 < alpha < 1)", kind="probability")
    correction: str = option(DEFAULT_CORRECTION, HELP, choices=CORRECTIONS)
    judge: str | None = option(None, JUDGE_HELP, metavar="F.jsonl")


def analyze(data, out: Path, config: SingleModelConfig = SingleModelConfig(), worker_checks=None,
            judge: pd.DataFrame | None = None, evidence=None, excluded: bool = False) -> dict:
    """Every table, written to ``out`` with report.html. ``worker_checks``: a WorkerChecks (already
    applied to the data) or None; ``judge``: an LLM judge's ratings (``dialeval judge`` output) for the
    PPI++ section, or None; ``evidence``: the evidence about participants (scripts/evidence_option.py) or None,
    ``excluded`` whether its flagged workers were left out. Ratings of conversations that were not finished
    are left out."""
    ratings, _, left_out = finished_only(data.ratings, data.comparisons.iloc[:0], data.conversations)
    for reason, count in left_out.items():
        print(f"left out {count} {reason}")
    turn = sm.sm_turn_ratings(ratings)
    dialog = sm.sm_dialog_ratings(ratings)
    if turn.empty and dialog.empty:
        raise DialevalError("no SM-Turn (binary, per-turn) or SM-Dialog (Likert) ratings of engaging / humanlike / "
                            "interesting in the data; see docs/single_model_analysis.md for the conventions")
    models = set(turn["model"]) | set(dialog["model"])
    if config.reference is not None and config.reference not in models:
        raise DialevalError(f"--reference '{config.reference}' has no SM ratings; models: {', '.join(sorted(models))}")
    label = turns_text(config.sm_turns)
    report = Report("Single-model evaluation (SM-Turn, SM-Dialog)", out, "single_model.html", turns=label,
                    turn_conversations=turn["conversation_id"].nunique(), turn_ratings=len(turn),
                    dialog_conversations=dialog["conversation_id"].nunique(), dialog_ratings=len(dialog),
                    n_boot=config.n_boot, weights=weightings_text(config.weights),
                    confidence=f"{100 * (1 - config.alpha):g}%")
    with report.library_warnings():
        results = single_model_result.analyse(turn, dialog, config, sm.model_pairs(models, config.reference),
                                              label).tables
    if worker_checks is not None:
        results["worker_checks"] = worker_checks.table
    for reason, count in left_out.items():
        report.warn(f"Left out {count} {reason}: partial work is kept in the data, not counted here.")
    _report(report, results, turn, config, worker_checks)
    if judge is not None:
        _judge_section(turn, dialog, judge, results, config, report)
    summary = {}
    if evidence is not None:
        evidence_option.section(report, evidence, results, summary, excluded)
    written = Outputs(results, {"evidence_summary": summary["evidence"]} if summary else {}, report).write(out)
    return {**results, "written": written}


def _warn(report: Report, tests: pd.DataFrame, config: SingleModelConfig) -> None:
    small = tests[(tests["n_a"] < SMALL_N) | (tests["n_b"] < SMALL_N)]
    if len(small):
        report.warn(f"{len(small)} of {len(tests)} test(s) rest on fewer than {SMALL_N} conversations for a model: "
                    "their intervals are wide and their tests weak.")
    untested = tests[tests["note"] != ""]
    for note, count in untested["note"].value_counts().items():
        report.warn(f"{count} comparison(s) without a test ({note.removeprefix('no test: ')}).")
    if not len(tests):
        report.warn("Nothing could be tested: fewer than two models have SM ratings.")
    elif tests["p"].isna().all():
        report.warn("Nothing could be tested: no pair of models has two or more conversations each with "
                    "varying scores.")
    elif not (tests["p_adjusted"] < config.alpha).any():
        report.warn(f"No difference reached p < {config.alpha:g}"
                    + (" after correction." if config.correction != "none" else "."))


def _report(report: Report, results: dict, turn, config: SingleModelConfig, worker_checks) -> None:
    for paragraph in verdict.single_model(results["likert"], results["success_rates"], results["ttests"],
                                          config.alpha, turns_text(config.sm_turns)):
        report.verdict(paragraph)
    _warn(report, results["ttests"], config)
    if worker_checks is not None:
        worker_checks.add_to(report)
    report.heading("SM-Turn success rates and SM-Dialog Likert scores (Smith Table 2)")
    report.table(results["success_rates"], caption="lin: responses pooled, with a t interval over conversations "
                 "(n_conversations per model), clustered by worker where a worker rated several "
                 "(unit_of_independence); wta: share of conversations won, Wilson interval (by worker likewise); "
                 "icc_within_conversation: intraclass correlation of the turn ratings within conversations, "
                 "design_effect: how many times a count of turns overstates the evidence; icc_within_worker: the "
                 "same for one worker's conversations")
    rates = results["success_rates"]
    correlated = rates[rates["icc_within_conversation"] > 0.05]
    if len(correlated):
        report.text(f"Turn ratings move together within conversations for {len(correlated)} model and criterion "
                    "row(s) (intraclass correlation above 0.05): a test that counted each turn as independent would "
                    "give p-values that are too small, so every SM-Turn test here is by conversation.", note=True)
    report.table(results["likert"], caption="SM-Dialog Likert mean, SD and interval over conversations (n; a "
                 "conversation rated several times counts once, with its mean), clustered by worker where a worker "
                 "rated several (unit_of_independence)")
    report.heading("Success rate by Bot Speaker turn (Smith Table 5)")
    report.table(results["per_turn"], floatfmt="{:.0f}")
    if not turn.empty:
        report.figure(single_model_plots.success_by_turn(turn), "success_by_turn",
                      "SM-Turn success rate by Bot Speaker turn")
    report.heading("Tests (two-sided; unit_of_independence: conversation, Student t; worker, clustered by worker)")
    by_worker = results["ttests"]["unit_of_independence"].eq("worker")
    if by_worker.any():
        report.text(f"{int(by_worker.sum())} test(s) are clustered by worker: a worker rated several of the "
                    "conversations compared, and one worker's ratings share a personal bias (icc_within_worker), so "
                    "conversations are not independent there. The worker-level test needs many workers: with "
                    "fewer than about 20 its p-values are approximate.", note=True)
    report.text(describe(config.correction, int(results["ttests"]["p"].notna().sum())))
    report.table(results["ttests"])
    report.heading(f"Effective win rates (Smith 4.4.1; {config.n_boot} bootstrap resamples)")
    report.table(results["effective_win_rates"])
    if len(results["combination"]):
        report.heading("SM-Turn + SM-Dialog weighted combination (Smith App. G)")
        report.table(results["combination"])


def _judge_section(turn, dialog, judge: pd.DataFrame, results: dict, config: SingleModelConfig,
                   report: Report) -> None:
    """PPI++ SM-Turn success rates (every turn) and SM-Dialog Likert means with the judge."""
    from parlai_dialeval.adaptive.ppi_single_model import ppi_means
    from parlai_dialeval.scripts.judge_option import report_ppi

    with report.library_warnings():
        table = pd.concat([ppi_means(turn, sm.sm_turn_ratings(judge), "sm_turn success rate (all turns)", config.alpha),
                           ppi_means(dialog, sm.sm_dialog_ratings(judge), "sm_dialog likert mean", config.alpha)],
                          ignore_index=True)
    results["ppi_means"] = table
    report_ppi(report, table, "means", "mean",
               "per model and criterion: mean rating (SM-Turn: every turn pooled) human-only and PPI++ on the same "
               "ratings, clustered by conversation")
    unjudged = int(table["human_unjudged"].sum())
    if unjudged:
        report.warn(f"{unjudged} human rating(s) are on items the judge did not rate: they are in every table "
                    "above but not in the PPI estimates (ppi_means.csv, human_unjudged).")


@register_script("analyze_single_model")
class AnalyzeSingleModel(AnalysisCommand):
    description = "SM-Turn / SM-Dialog analysis (Smith et al. 2022)"
    options_title = "Single-model analysis"
    config_class = SingleModelConfig
    worker_checks = True
    evidence_applies = True

    def analyse(self, data, config, checks, out):
        judge = None
        if config.judge:
            from parlai_dialeval.judge.output import load_judge

            judge = load_judge(config.judge, "ratings")
        result = analyze(data, out, config, checks, judge, self.evidence, self.excluded)
        if checks is not None and len(checks.table):
            print(checks.table.to_string(index=False))
        return result
