"""The evidence section of every crowd analysis's report (results/sections/evidence.py computes it): one row per
worker, the one rule, who is flagged and whether their records were left out."""
from __future__ import annotations


def view(report, part, result=None, section=None) -> None:
    from parlai_dialeval.analysis.evidence import RULE
    from parlai_dialeval.results.sections.evidence import sentences

    if part is None:
        return
    found = part.evidence
    report.heading("Evidence about each participant")
    report.text("One row per worker: the task's own quality test, attention checks and gold items, the voter tests, "
                "how their answers were made (pasted text, typing faster than people type, leaving the page while "
                "working, answers without the page's record, time per judgment, constant answers), text shared with "
                "other participants, the LLM-text score and agreement with the others (docs/data_model.md, "
                f"\"Evidence about participants\"). The rule: {RULE}. A flag is evidence for review, not a "
                "rejection; only failed attention checks qualify for one under Prolific's policy (column rejection; "
                "`dialeval review` suggests it).")
    for note in found.notes:
        report.text(note, note=True)
    said = sentences(part)
    report.text(said[0], note=bool(found.flagged))
    for line in said[1:]:
        report.text(line)
    shown = found.table.drop(columns=["rejection_message"], errors="ignore").head(50)
    report.table(shown, caption="evidence.csv holds every worker and every column", floatfmt="{:.3g}")


def add(report, found, excluded: bool, tables: dict, summary: dict) -> None:
    """The section beside an analysis that is not a sectioned result (certify, analyze_scales): its table and
    summary added to ``tables`` and ``summary``, its view to ``report``."""
    from parlai_dialeval.results.sections.evidence import SECTION, Participants

    part = Participants(found, bool(excluded))
    tables.update(SECTION.tables(part))
    summary.update(SECTION.summary(part))
    view(report, part)
