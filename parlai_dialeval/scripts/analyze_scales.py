"""dialeval analyze_scales: rating-scale designs (Santhanam et al. 2020): Likert, RME, BME and best-worst
scaling; scores, ICC consistency and agreement (overall, by time spent and by prior experience) and
Spearman correlation between criteria.

CLI glue only: the statistics live in parlai_dialeval.analysis.scale_designs. See docs/single_model_analysis.md.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.analysis import scale_designs as sd
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.report import Report
from parlai_dialeval.utils.script_args import add_data_args, load_data, write_csv

NO_STUDY = "(no study)"


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


def analyze(data, out: Path, criteria: list[str] | None = None) -> dict:
    ratings = data.ratings[data.ratings["scale"].isin(sd.DESIGN_SCALES)]
    if criteria:
        ratings = ratings[ratings["criterion"].isin(criteria)]
    if ratings.empty:
        raise DialevalError("no likert, magnitude or best_worst ratings" + (f" of {', '.join(criteria)}" if criteria
                            else "") + " in the data (see docs/single_model_analysis.md)")
    ratings = ratings.assign(study=ratings["study"].fillna(NO_STUDY))
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
        model_scores.append(sd.item_scores(part, by=("model", "criterion")).assign(study=study, design=design))
        item_scores.append(sd.item_scores(part).assign(study=study, design=design))
    results = {"icc": pd.DataFrame(icc_rows), "spearman": pd.concat(spearman), "model_scores": pd.concat(model_scores),
               "item_scores": pd.concat(item_scores), "workers": pd.concat(worker_tables)}
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in results.items():
        write_csv(frame, out / f"{name}.csv")
    _report(results, out)
    return results


def _report(results, out) -> None:
    report = Report("Rating-scale designs (Likert, magnitude estimation, best-worst scaling)", out)
    report.text("Magnitude estimates are log-normalised as log10((value + 1) / (reference + 1)); best-worst scores "
                "are (#best - #worst) / #appearances. ICC-C: consistency, two-way mixed ICC(C,1); ICC-A: absolute "
                "agreement, two-way random ICC(A,1) (pingouin); items not rated by every worker of the group are "
                "left out of that ICC (n_items_dropped).", note=True)
    overall = results["icc"][results["icc"]["workers"] == "all"]
    report.heading("Reliability per design (Santhanam Table 1)")
    report.table(results["icc"])
    if overall[["icc_c", "icc_a"]].notna().any().any():
        fig, ax = plt.subplots(figsize=(7, 3.5))
        overall.set_index(["design", "criterion"])[["icc_c", "icc_a"]].plot.bar(ax=ax)
        ax.set_ylabel("ICC")
        ax.set_title("ICC consistency (C) and agreement (A)")
        report.figure(fig, "icc", "ICC per design and criterion")
    report.heading("Spearman correlation between criteria (Santhanam Table 9)")
    report.table(results["spearman"])
    report.heading("Scores per model")
    report.table(results["model_scores"])
    report.write()


@register_script("analyze_scales")
class AnalyzeScales(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Rating-scale designs: Likert, RME, BME, best-worst (Santhanam 2020)")
        add_data_args(parser)
        parser.add_argument("--criteria", nargs="+", default=None, metavar="NAME",
                            help="criteria to analyse (default: all, e.g. readability coherence)")
        return parser

    def run(self):
        data = load_data(self.opt)
        out = Path(self.opt["out"])
        analyze(data, out, self.opt["criteria"])
        print(f"wrote icc, spearman, model_scores, item_scores, workers (.csv) and report.html to {out}")
