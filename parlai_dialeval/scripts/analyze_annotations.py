"""dialeval analyze_annotations: FED-style quality annotations (Mehri & Eskenazi 2020): per-quality
agreement next to the paper's Table 3 and per-system means with the paper's outlier rule (Table 4).

CLI glue only: the statistics live in parlai_dialeval.analysis.fed_annotations.
See docs/pairwise_analysis.md.
"""
from __future__ import annotations

from pathlib import Path

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.analysis import fed_annotations as fed
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.report import Report
from parlai_dialeval.utils.script_args import add_data_args, load_data, write_csv


def analyze(data, out: Path, remove_outliers: bool = True) -> dict:
    if data.ratings.empty:
        raise DialevalError("no rating records in the data (analyze_annotations needs annotator labels)")
    ratings = fed.with_level(data.ratings, data.conversations)
    agreement = fed.compare_table3(fed.quality_agreement(ratings, remove_outliers))
    means = fed.system_means(ratings, remove_outliers)
    table4 = fed.compare_table4(means)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(agreement, out / "agreement.csv")
    write_csv(means, out / "system_means.csv")
    write_csv(table4, out / "system_means_vs_paper.csv")

    report = Report("Annotation analysis", out)
    rule = ("the label furthest from the item's mean is dropped when its distance exceeds half the population "
            "SD of the item's labels" if remove_outliers else "no outlier removal (--no-outlier-rule)")
    report.text(f"{len(ratings)} labels on {ratings['conversation_id'].nunique()} items. Outlier rule "
                f"(Mehri & Eskenazi 3.4): {rule}.", note=True)
    report.heading("Agreement per quality (Table 3)")
    compared = agreement.dropna(subset=["paper"])
    report.text("spearman: each annotation against the mean of the item's annotations including itself "
                "(section 4.1's wording); spearman_others: against the mean of the other annotations (Table "
                "3's caption). difference = spearman - paper. "
                + (f"Largest absolute difference {compared['difference'].abs().max():.3f} "
                   f"({compared.loc[compared['difference'].abs().idxmax(), 'criterion']}); mean absolute "
                   f"difference {compared['difference'].abs().mean():.3f}." if len(compared) else ""))
    report.table(agreement)
    report.heading("Per-system means (Table 4)")
    report.text("Mean over items of each item's mean label; 0-2 and 0-4 qualities shifted by +1 to read 1-3 "
                "and 1-5 as in the paper; 0-1 qualities unshifted.")
    report.table(table4, floatfmt="{:.2f}")
    report.write()
    return {"agreement": agreement, "means": means, "table4": table4}


@register_script("analyze_annotations")
class AnalyzeAnnotations(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Agreement and per-system means of quality annotations (FED)")
        add_data_args(parser)
        parser.add_argument("--no-outlier-rule", dest="outlier_rule", action="store_false", default=True,
                            help="keep every label (default: Mehri & Eskenazi's outlier rule)")
        return parser

    def run(self):
        data = load_data(self.opt)
        out = Path(self.opt["out"])
        result = analyze(data, out, remove_outliers=self.opt["outlier_rule"])
        print(f"wrote agreement.csv, system_means.csv, system_means_vs_paper.csv and report.html to {out}")
        return result
