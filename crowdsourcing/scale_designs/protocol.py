"""Rating-scale designs (Santhanam & Shaikh 2020, section 4) as plain Python.

The same items (a context, a gold reference response and system responses) are rated for readability
and coherence under one of four designs:
  - ``likert``: 6-point scale (1 lowest, 6 highest);
  - ``rme`` (rank-based magnitude estimation): the reference is fixed at 100, responses get 0..999;
  - ``bme`` (biased magnitude estimation): the reference value comes from an automatic metric,
    supplied per item in ``reference_metrics`` (the paper: Flesch Reading Ease for readability, a
    penalised semantic similarity for coherence). It is not computed here: textstat 0.7's English
    syllable counter downloads NLTK's cmudict at run time, which this project never does;
  - ``best_worst``: the worker marks the best and the worst response of each tuple.
The worker's total time and prior-experience answers are recorded.
"""
from __future__ import annotations

from dataclasses import dataclass

from parlai_dialeval.protocols import santhanam2020

CRITERIA = santhanam2020.CRITERIA
DESIGNS = santhanam2020.DESIGNS
LIKERT_MIN, LIKERT_MAX = santhanam2020.LIKERT_SCALE
ME_MIN, ME_MAX = santhanam2020.MAGNITUDE_SCALE
RME_REFERENCE = santhanam2020.RME_REFERENCE
PRIOR_EXPERIENCE_QUESTIONS = santhanam2020.PRIOR_EXPERIENCE_QUESTIONS
CRITERION_QUESTIONS = santhanam2020.WORDINGS

@dataclass(frozen=True)
class ScaleItem:
    item_id: str
    context: list[str]
    reference: str
    responses: dict[str, str]  # model -> response
    reference_metrics: dict[str, float] | None = None  # criterion -> automatic score (for bme)


def reference_value(item: ScaleItem, design: str, criterion: str) -> float | None:
    """The anchor shown for the reference response: 100 (rme), an automatic score (bme), else None."""
    if design == "rme":
        return RME_REFERENCE
    if design != "bme":
        return None
    supplied = (item.reference_metrics or {}).get(criterion)
    if supplied is None:
        raise ValueError(f"item {item.item_id}: design bme needs the automatic score "
                         f"reference_metrics['{criterion}'] of the reference response")
    # the anchor must be a valid answer on the 0..999 scale the worker uses
    return float(min(max(round(supplied), ME_MIN + 1), ME_MAX))


def scale_of(design: str) -> tuple[str, float, float]:
    """Canonical (scale, min, max) of a design."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r} (expected one of {', '.join(DESIGNS)})")
    return {"likert": ("likert", LIKERT_MIN, LIKERT_MAX), "rme": ("magnitude", ME_MIN, ME_MAX),
            "bme": ("magnitude", ME_MIN, ME_MAX), "best_worst": ("best_worst", -1, 1)}[design]


def validate_answer(design: str, item: ScaleItem, criterion: str, answer: dict) -> dict[str, float]:
    """Worker answer -> model -> canonical value. likert/rme/bme: {"values": {model: number}};
    best_worst: {"best": model, "worst": model} -> 1 / -1 / 0."""
    scale, low, high = scale_of(design)
    models = set(item.responses)
    if scale == "best_worst":
        best, worst = answer.get("best"), answer.get("worst")
        if best not in models or worst not in models or best == worst:
            raise ValueError(f"item {item.item_id} {criterion}: best and worst must be two different "
                             f"responses of {sorted(models)}, got {best!r}/{worst!r}")
        return {m: 1 if m == best else -1 if m == worst else 0 for m in item.responses}
    values = answer.get("values") or {}
    if set(values) != models:
        raise ValueError(f"item {item.item_id} {criterion}: rate every response {sorted(models)}, got {sorted(values)}")
    for model, value in values.items():
        integral = scale == "likert"
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not low <= value <= high or (
                integral and value != int(value)):
            raise ValueError(f"item {item.item_id} {criterion} {model}: {value!r} is not "
                             f"{'an integer' if integral else 'a number'} in {low}..{high}")
    return {m: float(v) for m, v in values.items()}
