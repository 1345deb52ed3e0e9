"""dialeval analyze_scales: rating-scale designs (Santhanam et al. 2020): Likert, RME, BME and best-worst
scaling; scores, ICC consistency and agreement (overall, by time spent and by prior experience) and
Spearman correlation between criteria.

CLI glue only: the statistics live in parlai_dialeval.analysis.scale_designs. See docs/single_model_analysis.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from parlai.core.script import register_script

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import option
from parlai_dialeval import verdict
from parlai_dialeval.report import Report
from parlai_dialeval.scripts import evidence_report
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs

# Loaded on first use, so --help and option errors do not wait for scipy and matplotlib.
sd = lazy_module("parlai_dialeval.analysis.scale_designs")
scale_designs_plots = lazy_module("parlai_dialeval.analysis.scale_designs_plots")

NO_STUDY = "(no study)"


@dataclass
class ScalesConfig:
    criteria: list[str] | None = option(None, "comma-separated criteria to analyse (default: all, e.g. "
                                              "readability,coherence)", metavar="NAME,...")


def _groups(ratings: pd.DataFrame, workers: pd.DataFrame):
    """('all', ratings), then each worker split the data supports: time above/below average, experience."""
    yield "all", ratings
    for column, labels in (("above_average_time", ("above-average time", "below-average time")),
                           *((key, (f"{key}=yes", f"{key}=no")) for key in sd.PRIOR_EXPERIENCE_KEYS)):
        if column in workers:
            for value, label in zip((True, False), labels):
                chosen = set(workers.loc[workers[column] == value, "worker_id"])
                if chosen:
                    yield label, ratings[ratings["worker_id"].isin(chosen)]


def analyze(data, out: Path, criteria: list[str] | None = None, evidence=None, excluded: bool = False) -> dict:
    """Every table, written to ``out`` with report.html; ``evidence``: the evidence about participants
    (scripts/evidence_option.py) or None, ``excluded`` whether its flagged workers were left out."""
    ratings = data.ratings[data.ratings["scale"].isin(sd.DESIGN_SCALES)]
    if criteria:
        ratings = ratings[ratings["criterion"].isin(criteria)]
    if ratings.empty:
        raise DialevalError("no likert, magnitude or best_worst ratings" + (f" of {', '.join(criteria)}" if criteria
                            else "") + " in the data (see docs/single_model_analysis.md)")
    ratings = ratings.assign(study=ratings["study"].fillna(NO_STUDY))
    report = Report("Rating-scale designs (Likert, magnitude estimation, best-worst scaling)", out, "scales.html")
    with report.library_warnings():
        results = _tables(ratings)
    _report(results, report)
    summary = {}
    if evidence is not None:
        evidence_report.add(report, evidence, excluded, results, summary)
    documents = {"evidence_summary": summary["evidence"]} if summary else {}
    return {**results, "written": Outputs(results, documents, report).write(out)}


def _tables(ratings: pd.DataFrame) -> dict:
    icc_rows, spearman, model_scores, item_scores, worker_tables = [], [], [], [], []
    for study, part in ratings.groupby("study", sort=True):
        try:
            design = sd.design_name(part)
        except ValueError as error:
            raise DialevalError(f"study '{study}': {error} (put each design in its own study)") from None
        workers = sd.worker_groups(part)
        worker_tables.append(workers.assign(study=study, design=design))
        for criterion, frame in part.groupby("criterion", sort=True):
            for group, subset in _groups(frame, workers):
                icc_rows.append({"study": study, "design": design, "criterion": criterion, "workers": group,
                                 **sd.icc(subset)})
        spearman.append(sd.criteria_spearman(part).assign(study=study, design=design))
        model_scores.append(sd.model_scores(part).assign(study=study, design=design))
        item_scores.append(sd.item_scores(part).assign(study=study, design=design))
    return {"icc": pd.DataFrame(icc_rows), "spearman": pd.concat(spearman), "model_scores": pd.concat(model_scores),
            "item_scores": pd.concat(item_scores), "workers": pd.concat(worker_tables)}


def _report(results, report: Report) -> None:
    overall = results["icc"][results["icc"]["workers"] == "all"]
    for paragraph in verdict.scales(results["icc"]):
        report.verdict(paragraph)
    report.heading("Reliability per design (Santhanam Table 1)")
    report.table(results["icc"])
    if overall[["icc_c", "icc_a"]].notna().any().any():
        report.figure(scale_designs_plots.icc_bars(overall), "icc", "ICC per design and criterion")
    report.heading("Spearman correlation between criteria (Santhanam Table 9)")
    report.table(results["spearman"])
    report.heading("Scores per model")
    report.table(results["model_scores"], caption="score over all ratings; the unit of analysis is the rated "
                 "response (n_responses per model), with a 95% t interval of the mean over responses")


@register_script("analyze_scales")
class AnalyzeScales(AnalysisCommand):
    description = "Rating-scale designs: Likert, RME, BME, best-worst (Santhanam 2020)"
    options_title = "Scale designs"
    config_class = ScalesConfig
    evidence_applies = True

    def analyse(self, data, config, checks, out):
        return analyze(data, out, config.criteria, self.evidence, self.excluded)
