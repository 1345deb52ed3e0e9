"""dialeval replicate: agreement between two runs of the same live-chat evaluation (Ji et al. 2022, 4.2).

Reads two output folders of ``dialeval analyze_live_chat`` and writes replication.json, replication.csv,
scatter.png and report.html. CLI glue only: the statistics live in parlai_dialeval.analysis.replication.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.csv_safe import restore
from parlai_dialeval.data.dataset import refuse_repeated_files
from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import checked
from parlai_dialeval.report import Report
from parlai_dialeval.scripts.analysis_command import Outputs
from parlai_dialeval.scripts.command_line import output_folder

# Loaded on first use, so --help and option errors do not wait for scipy.
replication = lazy_module("parlai_dialeval.analysis.replication")


def read_run(folder: str | Path) -> dict:
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(folder, "no such folder", expected="an output folder of dialeval analyze_live_chat")
    run = {"path": str(folder)}
    expected = {"system_scores": ("model", "n", "overall"), "significance": ("model_a", "model_b", "p_value")}
    for name, required in expected.items():
        path = folder / f"{name}.csv"
        if not path.is_file():
            raise DataError(path, "file missing", expected=f"{name}.csv written by dialeval analyze_live_chat")
        frame = restore(pd.read_csv(path))
        missing = [c for c in required if c not in frame.columns]
        if missing:
            raise DataError(path, "missing column", line=1, field=missing[0], expected=", ".join(required))
        frame[[c for c in frame.columns if c.startswith("model")]] = frame[
            [c for c in frame.columns if c.startswith("model")]].astype(str)
        run[name] = frame
    summary = folder / "summary.json"
    run["summary"] = json.loads(summary.read_text(encoding="utf-8")) if summary.is_file() else {}
    return run


def scatter(a: pd.DataFrame, b: pd.DataFrame, columns: list[str], labels: dict, names: tuple[str, str],
            correlations: pd.DataFrame):
    models = replication.common_models(a, b)
    left, right = a.set_index("model").loc[models], b.set_index("model").loc[models]
    n = len(columns)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    import matplotlib.pyplot as plt  # here: only the figure needs it (the report set the Agg backend)

    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.4 * rows), squeeze=False)
    r_of = correlations.set_index("score")["pearson"]
    for ax, column in zip(axes.flat, columns):
        x, y = left[column].to_numpy(float), right[column].to_numpy(float)
        ax.scatter(x, y, color="tab:blue", s=18)
        if column == "overall" or n <= 2:
            for model, xi, yi in zip(models, x, y):
                ax.annotate(labels.get(model, model), (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
        low, high = np.nanmin([x.min(), y.min()]), np.nanmax([x.max(), y.max()])
        pad = 0.05 * (high - low or 1)
        ax.plot([low - pad, high + pad], [low - pad, high + pad], color="#bbb", linewidth=0.8, zorder=0)
        ax.set_title(f"{column} (r = {r_of.get(column, float('nan')):.3f})", fontsize=10)
        ax.set_xlabel(names[0], fontsize=8)
        ax.set_ylabel(names[1], fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    return fig


def replicate(dir_a, dir_b, out, levels=None, column: str = "p_value", log=print) -> dict:
    levels = replication.LEVELS if levels is None else levels
    refuse_repeated_files([Path(dir_a), Path(dir_b)])  # a run against itself would report a perfect replication
    a, b = read_run(dir_a), read_run(dir_b)
    scores_a, scores_b = a["system_scores"], b["system_scores"]
    statements = [c for c in scores_a.columns if c not in ("model", "n", "overall") and c in scores_b.columns]
    columns = ["overall", *statements]
    correlations = replication.score_correlations(scores_a, scores_b, columns)
    models = replication.common_models(scores_a, scores_b)
    for run, name in ((a, "first"), (b, "second")):
        if column not in run["significance"].columns:
            raise DialevalError(f"the {name} run's significance.csv has no '{column}' column (run analyze_live_chat "
                                "with --correction to get p_adjusted)")
    agreement = replication.significance_agreement(a["significance"], b["significance"], models, levels, column)
    only_a = [m for m in scores_a["model"] if m not in models]
    only_b = [m for m in scores_b["model"] if m not in models]
    by_score = {row["score"]: {k: row[k] for k in ("pearson", "spearman", "kendall", "n_models")}
                for row in correlations.to_dict(orient="records")}
    result = {
        "runs": [a["path"], b["path"]],
        "studies": [a["summary"].get("study"), b["summary"].get("study")],
        "models": models,
        "models_only_in_first": only_a,
        "models_only_in_second": only_b,
        "overall": by_score["overall"],
        "statements": {k: v for k, v in by_score.items() if k != "overall"},
        "significance_agreement": {f"{row['level']:g}": {k: row[k] for k in row if k != "level"}
                                   for row in agreement.to_dict(orient="records")},
        "significance_column": column,
    }
    out = Path(out)
    labels = {**(b["summary"].get("model_labels") or {}), **(a["summary"].get("model_labels") or {})}
    names = tuple(r["summary"].get("study") or Path(r["path"]).name for r in (a, b))
    report = Report("Self-replication: " + " vs ".join(names), out)
    overall = result["overall"]
    if all(np.isfinite(overall[k]) for k in ("pearson", "spearman", "kendall")):
        correlate = (f"Overall system scores correlate at Pearson r = {overall['pearson']:.3f} (Spearman "
                     f"{overall['spearman']:.3f}, Kendall {overall['kendall']:.3f}).")
    else:  # a run whose models all scored the same: a correlation does not exist
        correlate = "Overall system scores have no correlation: in at least one run every model scored the same."
    report.text(f"{len(models)} models scored in both runs. {correlate} Pairwise significance conclusions agree for "
                + ", ".join(f"{100 * row['share']:.0f}% of pairs at p < {row['level']:g}"
                            for row in agreement.to_dict(orient="records")) + ".")
    if only_a or only_b:
        report.text(f"Left out (scored in one run only): {', '.join(only_a + only_b)}.", note=True)
    report.figure(scatter(scores_a, scores_b, columns, labels, names, correlations), "scatter",
                  "System scores (z) of the two runs, one point per model; the grey line is y = x.")
    report.table(correlations, caption="Correlation between the runs' system scores")
    report.table(agreement, caption="Pairwise significance conclusions (a beats b, b beats a, or neither) that "
                 f"agree between the runs ({column})")
    for level in levels:
        pairs = replication.pair_table(a["significance"], b["significance"], models, level, column)
        differing = pairs[~pairs["same"]]
        if len(differing):
            report.table(differing.drop(columns="same"), caption=f"Pairs with different conclusions at p < {level:g}")
    Outputs({"replication": correlations, "significance_agreement": agreement}, {"replication": result},
            report).write(out)
    pearson = result["overall"]["pearson"]
    said = f"overall Pearson r = {pearson:.3f}" if np.isfinite(pearson) else "no overall correlation (a run's scores all equal)"
    log(f"{said}; wrote {out}/replication.json and report.html")
    return result


@register_script("replicate")
class Replicate(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Agreement between two runs of a live-chat evaluation "
                                            "(outputs of analyze_live_chat)")
        parser.add_argument("--runs", nargs=2, required=True, metavar="DIR",
                            help="two output folders of dialeval analyze_live_chat")
        parser.add_argument("--out", required=True, metavar="DIR", help="output folder", type=output_folder)
        parser.add_argument("--levels", default="0.05,0.1",
                            help="comma-separated significance levels for the agreement of conclusions")
        parser.add_argument("--p-column", default="p_value", choices=("p_value", "p_adjusted"),
                            help="which p-values of significance.csv to compare")
        return parser

    def run(self):
        level = checked("--levels", "probability")
        levels = tuple(level(x) for x in str(self.opt["levels"]).split(",") if x.strip())
        return replicate(*self.opt["runs"], self.opt["out"], levels, self.opt.get("p_column", "p_value"))
