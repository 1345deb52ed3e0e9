"""The evidence about each participant (analysis/evidence.py: one table, one rule) as a section of every crowd
analysis: ``evidence.csv`` and the summary's ``evidence``. The table is built from the whole loaded data
(scripts/evidence_option.py ``build``) and given to the analysis as an input; the pairwise analyses leave the
flagged workers out in their voter section, the others before they start (``--exclude-flagged``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parlai_dialeval.results.section import Section


@dataclass
class Participants:
    evidence: Any  # analysis.evidence.Evidence
    excluded: bool  # whether the records of the workers it flags were left out of the analysis


def compute(inputs, config, done: dict) -> Participants | None:
    """None without evidence; whether its flagged workers are left out: the voter section's doing where the
    analysis has one (the pairwise ones), else the caller's (``inputs.evidence_excluded``)."""
    if inputs.evidence is None:
        return None
    voters = done.get("voters")
    return Participants(inputs.evidence, voters.excluded if voters is not None else inputs.evidence_excluded)


def sentences(part: Participants) -> list[str]:
    flagged, workers = part.evidence.flagged, len(part.evidence.table)
    action = ("their records are left out of everything above" if part.excluded
              else "their records are kept (--exclude-flagged true leaves them out)")
    return [f"{len(flagged)} of {workers} workers flagged; {action}.", *part.evidence.sentences()[:20]]


SECTION = Section(
    "evidence", compute, tables=lambda part: {"evidence": part.evidence.table},
    summary=lambda part: {"evidence": {**part.evidence.summary(), "excluded": part.excluded}},
    sentences=sentences, title="Evidence about each participant")
