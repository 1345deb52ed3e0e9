"""The single-model analysis (SM-Turn, SM-Dialog) as one object: every section it computes (the core tables, the
verdict, PPI++ with an LLM judge) in ``parts`` (results/section.py). ``parlai_dialeval.results.single_model``
builds it for a notebook; scripts/analyze_single_model.py writes its tables and report."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.results import section as sections_api
from parlai_dialeval.results.sections import evidence, single_model_core, single_model_ppi, single_model_verdict

SECTIONS = [single_model_core.SECTION, single_model_verdict.SECTION, single_model_ppi.SECTION, evidence.SECTION]
SingleModelConfig = sections_api.config_class("SingleModelConfig", (), SECTIONS, __name__, check=True)


@dataclass
class SingleModelInputs:
    """SM-Turn and SM-Dialog ratings of finished conversations, the model pairs to test, the selected turns in
    words, an LLM judge's ratings, the worker checks applied before, ratings left out by reason, the evidence about
    participants (analysis/evidence.py) and whether the caller left its flagged workers out."""

    turn: pd.DataFrame
    dialog: pd.DataFrame
    pairs: list
    label: str
    judge: pd.DataFrame | None = None
    worker_checks: Any = None
    left_out: dict = field(default_factory=dict)
    evidence: Any = None
    evidence_excluded: bool = False


@dataclass
class SingleModelResult(sections_api.Sectioned):
    """Every section's part by name (also attributes: ``result.core``, ``result.verdict``, ``result.ppi``), the
    config and inputs, the warnings statistics libraries raised per section, the sections in order (``result.evidence``:
    the evidence about participants, where given)."""

    config: Any
    inputs: SingleModelInputs
    parts: dict
    library_warnings: dict
    sections: list


def prepare(data, config, judge=None, worker_checks=None, evidence=None, evidence_excluded=False) -> SingleModelInputs:
    """The SM ratings of finished conversations in ``data`` (an EvalData); one clear error where there are none, or
    where ``config.reference`` has none."""
    from parlai_dialeval.analysis import single_model as sm
    from parlai_dialeval.analysis.completeness import finished_only
    from parlai_dialeval.options import turns_text

    ratings, _, left_out = finished_only(data.ratings, data.comparisons.iloc[:0], data.conversations)
    turn, dialog = sm.sm_turn_ratings(ratings), sm.sm_dialog_ratings(ratings)
    if turn.empty and dialog.empty:
        raise DialevalError("no SM-Turn (binary, per-turn) or SM-Dialog (Likert) ratings of engaging / humanlike / "
                            "interesting in the data; see docs/single_model_analysis.md for the conventions")
    models = set(turn["model"]) | set(dialog["model"])
    if config.reference is not None and config.reference not in models:
        raise DialevalError(f"--reference '{config.reference}' has no SM ratings; models: {', '.join(sorted(models))}")
    return SingleModelInputs(turn, dialog, sm.model_pairs(models, config.reference), turns_text(config.sm_turns),
                             judge, worker_checks, left_out, evidence, bool(evidence_excluded))


def analyse(inputs: SingleModelInputs, config) -> SingleModelResult:
    done = sections_api.run(SECTIONS, inputs, config)
    return SingleModelResult(config, done.inputs, done.parts, done.warnings, SECTIONS)
