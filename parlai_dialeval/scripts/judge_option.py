"""``--judge F.jsonl`` of the analysis commands (read by ``judge/output.py``): the reports' section of a ``dialeval
judge`` output's PPI++ estimates next to the human-only ones (docs/ppi.md). CLI glue only: the statistics live
in parlai_dialeval.adaptive.ppi* and results/sections/ppi.py."""
from __future__ import annotations

from parlai_dialeval.adaptive.ppi import WEIGHT_NEGLIGIBLE
from parlai_dialeval.results.sections.ppi import HELP, ppi_summary

__all__ = ["HELP", "report_ppi"]


def report_ppi(report, table, what: str, estimate: str, caption: str) -> dict:
    """The report's PPI section for one table (rows with ``judge_weight``, ``note`` and, where a mean,
    ``effective_human_judgments``); returns its summary (rows estimated, judge set aside)."""
    report.heading(f"With the LLM judge: prediction-powered {what} (PPI++)")
    report.text(
        f"The judge's answers on items no person judged, corrected by how far it differed from the people on the "
        f"items both judged (Angelopoulos et al. 2023; PPI++ power tuning, Angelopoulos, Duchi and Zrnic 2023). "
        f"The weight on the judge (judge_weight) is chosen from the data: 0 gives the human-only {estimate}, so a "
        f"judge that does not track the people costs (asymptotically) nothing. Intervals are clustered by item "
        f"(t with clusters - 1 degrees of freedom), valid whatever the judge's quality when the people's items "
        f"are a random sample of all judged items. effective_human_judgments: how many human judgments a human-only "
        f"study would need for the same precision; judge_worth_judgments: how many of those the judge supplied.")
    report.table(table, caption=caption, floatfmt="{:.4g}")
    estimated = table[table["judge_weight"].notna()]
    summary = ppi_summary(table)
    if summary["judge_set_aside"]:
        report.warn(f"The judge was set aside (weight below {WEIGHT_NEGLIGIBLE:g}) in {summary['judge_set_aside']} of {len(estimated)} "
                    f"{what} rows: its answers do not track the people's there, so those intervals are the "
                    "human-only ones.")
    if not len(estimated):
        report.warn("No PPI estimate: no item judged by people was also answered by the judge.")
    elif "effective_human_judgments" in estimated:
        worth = (estimated["effective_human_judgments"] / estimated["human_judgments"]).median()
        report.text(f"In plain words: with the judge, the {what} are as precise as a human-only study with "
                    f"{worth:.2f} times the human judgments (median over rows; 1 = the judge added nothing).")
    return summary

