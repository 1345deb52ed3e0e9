"""dialeval analyze_annotations: FED-style quality annotations (Mehri & Eskenazi 2020): per-quality
agreement next to the paper's Table 3 and per-system means with the paper's outlier rule (Table 4).

CLI glue only: the statistics live in parlai_dialeval.analysis.fed_annotations, the report's prose in
templates/annotations.html. See docs/pairwise_analysis.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from parlai.core.script import register_script

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import option
from parlai_dialeval.report import Report
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs

# Loaded on first use, so --help and option errors do not wait for scipy and matplotlib.
fed = lazy_module("parlai_dialeval.analysis.fed_annotations")


@dataclass
class AnnotationsConfig:
    outlier_rule: bool = option(True, "Mehri & Eskenazi's outlier rule on graded (not binary) qualities; false "
                                      "keeps every label")


def analyze(data, out: Path, remove_outliers: bool = True) -> dict:
    if data.ratings.empty:
        raise DialevalError("no rating records in the data (analyze_annotations needs annotator labels)")
    ratings = fed.with_level(data.ratings, data.conversations)
    report = Report("Annotation analysis", out, "annotations.html", labels=len(ratings),
                    items=ratings["conversation_id"].nunique(), outlier_rule=remove_outliers)
    with report.library_warnings():
        agreement = fed.compare_table3(fed.quality_agreement(ratings, remove_outliers))
        means = fed.system_means(ratings, remove_outliers)
        table4 = fed.compare_table4(means)
    report.heading("Agreement per quality (Table 3)")
    for sentence in _undefined(agreement, ratings):
        report.text(sentence)
    compared = agreement.dropna(subset=["paper", "difference"])
    if len(compared):
        worst = compared.loc[compared["difference"].abs().idxmax()]
        report.text(f"Largest absolute difference from the paper {abs(worst['difference']):.3f} "
                    f"({worst['criterion']}); mean absolute difference {compared['difference'].abs().mean():.3f}.")
    report.table(agreement)
    report.heading("Per-system means (Table 4)")
    report.table(table4, floatfmt="{:.2f}")
    tables = {"agreement": agreement, "system_means": means, "system_means_vs_paper": table4}
    written = Outputs(tables, {}, report).write(out)
    return {"agreement": agreement, "means": means, "table4": table4, "written": written}


def _undefined(agreement, ratings) -> list[str]:
    """Why a quality's correlation is empty: a rank correlation needs labels (and items' mean labels) that vary;
    said in words, where the table can only leave the cell blank."""
    sentences = []
    for row in agreement[agreement["spearman"].isna()].itertuples(index=False):
        labels = ratings.loc[(ratings["level"] == row.level) & (ratings["criterion"] == row.criterion), "value"]
        why = (f"every label is {labels.iloc[0]:g}, so the labels never vary" if labels.nunique() == 1
               else "the items' mean labels never vary")
        sentences.append(f"{row.criterion} ({row.level}): the Spearman correlation is undefined ({why}); its cells "
                         f"are left empty and it is not compared with the paper.")
    return sentences


@register_script("analyze_annotations")
class AnalyzeAnnotations(AnalysisCommand):
    description = "Agreement and per-system means of quality annotations (FED)"
    options_title = "Annotation analysis"
    config_class = AnnotationsConfig

    def analyse(self, data, config, checks, out):
        return analyze(data, out, remove_outliers=config.outlier_rule)
