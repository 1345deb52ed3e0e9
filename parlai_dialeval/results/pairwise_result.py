"""The pairwise analysis as one object: ``PairwiseResult`` holds every section the analysis computes (the core
tables, the verdict, voter flags, "both bad" ties, provisional places, style control, ties as information
(Davidson), position effects per model, categories, results by the people who judged (--participants), fragility,
PPI with an LLM judge, the evidence about participants), built by ``analyse`` (``parlai_dialeval.results.pairwise`` for a notebook; scripts/analyze_pairwise.py
writes its tables, summary and report). ``SECTIONS`` lists the sections in order (results/section.py): a new
statistic is a module under results/sections/ and one line here; ``PairwiseConfig`` holds every section's
options (the command's options, with their help)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.results import section as sections_api
from parlai_dialeval.results.sections import (both_bad, categories, core, evidence, fragility, groups, position, ppi,
                                              provisional, style, ties, verdict, voters)

SECTIONS = [
    voters.SECTION,  # first: with --exclude-flagged every later section sees the votes without flagged workers'
    core.SECTION,
    both_bad.SECTION,
    verdict.SECTION,
    provisional.SECTION,
    style.SECTION,
    ties.SECTION,
    position.SECTION,
    categories.SECTION,
    groups.SECTION,
    fragility.SECTION,
    ppi.SECTION,
    evidence.SECTION,
]
# the core options first in --help, then each section's in order
PairwiseConfig = sections_api.config_class("PairwiseConfig", core.SECTION.config, SECTIONS, __name__, check=True)


@dataclass
class PairwiseInputs:
    """What the sections read: comparisons without onboarding and voided votes, with sections (question, unit); the
    counts of automatic ties among them, of onboarding comparisons left out and of voided votes by reason
    (data.schema.VOIDED); an LLM judge's comparisons; the style of the conversations ACUTE / PW-Dialog votes compare;
    the worker checks applied before; judgments the caller left out, by reason; the evidence about participants
    (analysis/evidence.py's Evidence, built from the whole data: scripts/evidence_option.py), whose rule the voter
    section applies with ``exclude_flagged``."""

    comparisons: pd.DataFrame
    automatic: int = 0
    onboarding: int = 0
    judge: pd.DataFrame | None = None
    conversation_style: pd.DataFrame | None = None
    worker_checks: Any = None
    left_out: dict = field(default_factory=dict)
    voided: dict = field(default_factory=dict)
    evidence: Any = None


@dataclass
class PairwiseResult(sections_api.Sectioned):
    """Every section's part (``parts``, by section name; also attributes: ``result.style``, ``result.fragility``
    ...; None where a section did not apply), the config and inputs they came from, the warnings statistics
    libraries raised per section, and the sections in order; ``tables`` (every table the command writes, by file
    stem), ``summary`` (agreement.json) and ``sentences()`` (what each section says)."""

    config: Any
    inputs: PairwiseInputs
    parts: dict
    library_warnings: dict
    sections: list


def prepare(comparisons: pd.DataFrame, **inputs) -> PairwiseInputs:
    """Canonical comparison records as the sections read them: onboarding items and voided votes (data.schema.VOIDED)
    set aside, sections added; one clear error where nothing is left to analyse."""
    from parlai_dialeval.analysis import pairwise

    if comparisons.empty:
        raise DialevalError("no comparison records in the data (analyze_pairwise needs pairwise votes)")
    required(comparisons)
    comparisons, onboarding = pairwise.split_onboarding(comparisons)
    comparisons, voided = pairwise.split_voided(comparisons)
    automatic = int(comparisons["automatic"].eq(True).sum()) if "automatic" in comparisons else 0
    if comparisons.empty and not voided:
        raise DialevalError(f"all {onboarding} comparisons are onboarding items (onboarding: true); nothing to analyse")
    if comparisons.empty:
        reasons = ([f"{onboarding} onboarding items"] if onboarding else []) + [f"{n} {why}" for why, n in voided.items()]
        raise DialevalError(f"every comparison is left out ({'; '.join(reasons)}); nothing to analyse")
    return PairwiseInputs(pairwise.with_sections(comparisons), automatic, onboarding, voided=voided, **inputs)


def required(comparisons: pd.DataFrame) -> None:
    """The importer's schema check (data/validate.py) of the fields every comparison needs, on a caller's frame as
    on a file: a missing column or value, a wrong type or choice is one line naming the field and the row (its file
    and line where the frame holds them), not a KeyError sections later."""
    from parlai_dialeval.data import schema
    from parlai_dialeval.data.validate import validate_frame

    fields = [f.name for f in schema.fields_of("comparison") if f.required and f.name != "type"]
    frame = comparisons[[name for name in fields if name in comparisons]].assign(type="comparison")
    given = "the comparisons given"
    frame["_file"] = comparisons["_file"].fillna(given) if "_file" in comparisons else given
    rows = [f"row {label!r}" for label in comparisons.index] if "_line" not in comparisons else None
    frame["_line"] = comparisons["_line"] if rows is None else pd.Series(rows, comparisons.index, dtype=object)
    validate_frame("comparison", frame)


def analyse(inputs: PairwiseInputs, config, sections: list | None = None) -> PairwiseResult:
    """Every section of ``sections`` (default SECTIONS) in order."""
    sections = list(SECTIONS if sections is None else sections)
    done = sections_api.run(sections, inputs, config)
    return PairwiseResult(config, done.inputs, done.parts, done.warnings, sections)
