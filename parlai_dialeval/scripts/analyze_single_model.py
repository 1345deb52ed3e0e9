"""dialeval analyze_single_model: SM-Turn and SM-Dialog analysis (Smith et al. 2022, 4.3, 4.4.1, App. G).

CLI glue only: results/single_model_result.py computes every section into a SingleModelResult (the same object
``parlai_dialeval.results.single_model`` gives a notebook) and this command writes it; the figure in
analysis.single_model_plots. See docs/single_model_analysis.md.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from parlai.core.script import register_script

from parlai_dialeval.analysis.multiple_testing import describe
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import weightings_text
from parlai_dialeval.report import Report
from parlai_dialeval.results.single_model_result import SingleModelConfig
from parlai_dialeval.scripts import evidence_report
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs

# Loaded on first use, so --help and option errors do not wait for scipy and matplotlib.
single_model_plots = lazy_module("parlai_dialeval.analysis.single_model_plots")

__all__ = ["SingleModelConfig", "analyze", "AnalyzeSingleModel"]


def analyze(data, out: Path, config=None, worker_checks=None, judge: pd.DataFrame | None = None, evidence=None,
            excluded: bool = False) -> dict:
    """Every table, written to ``out`` with report.html. ``worker_checks``: a WorkerChecks (already
    applied to the data) or None; ``judge``: an LLM judge's ratings (``dialeval judge`` output) for the
    PPI++ section, or None; ``evidence``: the evidence about participants (scripts/evidence_option.py) or None,
    ``excluded`` whether its flagged workers were left out. Ratings of conversations that were not finished
    are left out."""
    from parlai_dialeval.results import single_model_result

    config = config if config is not None else SingleModelConfig()
    inputs = single_model_result.prepare(data, config, judge, worker_checks, evidence, excluded)
    for reason, count in inputs.left_out.items():
        print(f"left out {count} {reason}")
    result = single_model_result.analyse(inputs, config)
    turn, dialog = inputs.turn, inputs.dialog
    report = Report("Single-model evaluation (SM-Turn, SM-Dialog)", out, "single_model.html", turns=inputs.label,
                    turn_conversations=turn["conversation_id"].nunique(), turn_ratings=len(turn),
                    dialog_conversations=dialog["conversation_id"].nunique(), dialog_ratings=len(dialog),
                    n_boot=config.n_boot, weights=weightings_text(config.weights),
                    confidence=f"{100 * (1 - config.alpha):g}%")
    for caught in result.library_warnings.values():
        for message in caught:
            report.warn(message)
    tables = result.tables
    for reason, count in inputs.left_out.items():
        report.warn(f"Left out {count} {reason}: partial work is kept in the data, not counted here.")
    _report(report, result, turn, config, worker_checks)
    if result.ppi is not None:
        _judge_section(result.ppi, report)
    evidence_report.view(report, result.evidence)
    documents = {"evidence_summary": result.summary["evidence"]} if result.evidence is not None else {}
    written = Outputs(tables, documents, report).write(out)
    return {**tables, "written": written, "result": result}


def _report(report: Report, result, turn, config, worker_checks) -> None:
    for paragraph in result.verdict:
        report.verdict(paragraph)
    for message in result.core.warnings:
        report.warn(message)
    if worker_checks is not None:
        worker_checks.add_to(report)
    results = result.core.tables
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
                    "conversations are not independent there. The worker-level test needs many workers, and a few who "
                    "rated most conversations count as few (its t takes Kish's effective number of workers): with "
                    "fewer than about 20 effective workers its p-values are approximate.", note=True)
    report.text(describe(config.correction, int(results["ttests"]["p"].notna().sum())))
    report.table(results["ttests"])
    report.heading(f"Effective win rates (Smith 4.4.1; {config.n_boot} bootstrap resamples)")
    report.table(results["effective_win_rates"])
    if len(results["combination"]):
        report.heading("SM-Turn + SM-Dialog weighted combination (Smith App. G)")
        report.table(results["combination"])


def _judge_section(table: pd.DataFrame, report: Report) -> None:
    """PPI++ SM-Turn success rates (every turn) and SM-Dialog Likert means with the judge."""
    from parlai_dialeval.scripts.judge_option import report_ppi

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
