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

import random
from dataclasses import dataclass, replace

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
    # an attention check or gold item (crowdsourcing/platform/checks.py): {kind, ...what it expects}
    check: dict | None = None


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


def check_items(chunks: list[list[ScaleItem]], args, design: str, rng: random.Random) -> list[list[ScaleItem]]:
    """Each unit's items with its attention checks (an item whose every question asks for a stated answer: a
    value for every response, or which response is best and which worst) and gold items (an item with one
    response replaced by a clearly broken one, model ``gold_bad``: it must come out lowest, or worst) mixed in
    (crowdsourcing/platform/checks.py). A check item is a copy of an item of another unit under its own id, so
    nothing the page receives tells a gold item from the others (with a single unit, a suffixed copy)."""
    from parlai_dialeval.crowdsourcing.platform import checks

    rule = checks.rule(args)
    scale, low, high = scale_of(design)
    out = []
    for number, chunk in enumerate(chunks):
        others = [item for k, other in enumerate(chunks) if k != number for item in other]
        pool = others or [replace(item, item_id=f"{item.item_id}_{number}c") for item in chunk]
        picked = rng.sample(pool, min(len(pool), rule["attention"] + rule["gold"]))
        picked += [rng.choice(pool) for _ in range(rule["attention"] + rule["gold"] - len(picked))]
        attention = []
        for item in picked[:rule["attention"]]:
            if scale == "best_worst":
                best, worst = rng.sample(range(1, len(item.responses) + 1), 2)
                expected = {"best": best, "worst": worst}
            else:
                expected = {"value": rng.randint(int(low) + 1, int(high) - 1) if scale == "likert"
                            else rng.choice((10, 50, 200, 500))}
            attention.append(replace(item, check={"kind": "attention", **expected}))
        gold = []
        for item in picked[rule["attention"]:]:
            broken = rng.choice(sorted(item.responses))
            responses = {(checks.GOLD_MODEL if m == broken else m): (rng.choice(checks.GOLD_REPLIES) if m == broken
                                                                     else text) for m, text in item.responses.items()}
            gold.append(replace(item, responses=responses, check={"kind": "gold"}))
        seen, checked = {item.item_id for item in chunk}, []
        for index, item in enumerate(attention + gold):  # an item rated twice in a unit needs ids of its own
            if item.item_id in seen:
                item = replace(item, item_id=f"{item.item_id}_{number}_{index}")
            seen.add(item.item_id)
            checked.append(item)
        attention, gold = checked[:len(attention)], checked[len(attention):]
        out.append(checks.mix(chunk, attention, gold, args, rng))
    return out


def check_passed(item: ScaleItem, values: dict[str, dict[str, float]], order: list[str], tolerance: float) -> bool:
    """Whether the answers to a check item (``values``: criterion -> model -> canonical value; ``order``: the
    models as the page listed the responses) are what it expects under every criterion: a gold item's broken
    response lowest (ties allowed, but below the best: best-worst's -1), an attention check's stated value within
    ``tolerance`` (0 on a Likert scale) or its stated best and worst."""
    from parlai_dialeval.crowdsourcing.platform.checks import GOLD_MODEL, near

    check = item.check
    for per_model in values.values():
        if check["kind"] == "gold":
            bad, others = per_model[GOLD_MODEL], [v for m, v in per_model.items() if m != GOLD_MODEL]
            ok = bad <= min(others) and bad < max(others)
        elif "best" in check:
            ok = per_model[order[check["best"] - 1]] == 1 and per_model[order[check["worst"] - 1]] == -1
        else:
            ok = all(near(v, check["value"], tolerance) for v in per_model.values())
        if not ok:
            return False
    return True
