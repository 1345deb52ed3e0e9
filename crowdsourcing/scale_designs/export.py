"""Scale-design unit data -> canonical ratings (one per item x response x criterion)."""
from __future__ import annotations

from parlai_dialeval.crowdsourcing.scale_designs.protocol import (CRITERIA, CRITERION_QUESTIONS,
                                                                   PRIOR_EXPERIENCE_QUESTIONS, ScaleItem,
                                                                   check_passed, reference_value, scale_of,
                                                                   validate_answer)
from parlai_dialeval.crowdsourcing.platform.answer_record import clean_judgment, doubt_totals
from parlai_dialeval.crowdsourcing.platform.checks import ChecksArgs, check_of
from parlai_dialeval.crowdsourcing.platform.export import submitted_duration

TASK = "scale_designs"


def study_record(study: str, design: str, checks: dict | None = None) -> dict:
    scale, low, high = scale_of(design)
    return {"type": "study", "name": study, "description": f"Santhanam & Shaikh 2020 rating design: {design}",
            "criteria": [{"name": c, "positive": True, "scale": scale, "min": low, "max": high,
                          "question": CRITERION_QUESTIONS[c]} for c in CRITERIA],
            **({"meta": {"checks": checks}} if checks else {})}


def unit_records(items: list[ScaleItem], answers: dict, *, design: str, study: str, worker_id: str,
                 assignment_id: str, order: dict | None = None, tolerance: float = ChecksArgs.tolerance,
                 elapsed: float | None = None) -> list[dict]:
    """``answers`` = {"ratings": {item_id: {criterion: answer}}, "prior_experience": {question: bool},
    "duration": seconds for the whole unit, "item_durations"?: {item_id: seconds}, "item_provenance"?:
    {item_id: the page's record}}; ValueError on anything else (the page submitted it: hostile until checked).
    ``order``: item id -> its models as the page listed them (check items); ``tolerance``: of an attention
    check's magnitude; ``elapsed``: seconds between the page's start and its submission (server's clock)."""
    scale, low, high = scale_of(design)
    prior = answers.get("prior_experience") or {}
    if not isinstance(prior, dict):
        raise ValueError(f"prior-experience answers must be an object, got {type(prior).__name__}")
    missing = set(PRIOR_EXPERIENCE_QUESTIONS) - set(prior)
    if missing:
        raise ValueError(f"prior-experience answers missing: {sorted(missing)}")
    bad = [k for k in PRIOR_EXPERIENCE_QUESTIONS if not isinstance(prior[k], bool)]
    if bad:
        raise ValueError(f"prior-experience answers must be true or false: {bad}")
    task_duration = submitted_duration(answers.get("duration"), "the unit")
    if task_duration is None:
        raise ValueError("the unit's duration is missing")
    item_durations = answers.get("item_durations") or {}
    if not isinstance(item_durations, dict):
        raise ValueError(f"item_durations must map item ids to seconds, got {type(item_durations).__name__}")
    meta = {"design": design, **{k: prior[k] for k in PRIOR_EXPERIENCE_QUESTIONS}, "task_duration": task_duration}
    screens = answers.get("item_provenance") or {}
    if not isinstance(screens, dict):
        raise ValueError(f"item_provenance must map item ids to records, got {type(screens).__name__}")
    records, kept = [], []
    for item in items:
        per_item = answers["ratings"].get(item.item_id)
        if per_item is None:
            raise ValueError(f"item {item.item_id} has no answer")
        item_duration = submitted_duration(item_durations.get(item.item_id), f"item {item.item_id}")
        # spread the item's time over its ratings so that a worker's durations sum to their total time
        duration = None if item_duration is None else item_duration / (len(CRITERIA) * len(item.responses))
        provenance = clean_judgment(screens.get(item.item_id), elapsed=elapsed)
        kept.append(provenance)
        answered = {}
        for criterion in CRITERIA:
            if criterion not in per_item:
                raise ValueError(f"item {item.item_id}: no {criterion} answer")
            answered[criterion] = validate_answer(design, item, criterion, per_item[criterion])
        check = None
        if item.check is not None:  # an attention check or gold item (platform/checks.py)
            passed = check_passed(item, answered, (order or {}).get(item.item_id) or list(item.responses),
                                  tolerance if scale == "magnitude" else 0)
            check = check_of(item.check["kind"], passed, {k: v for k, v in item.check.items() if k != "kind"} or None,
                             item.item_id)
        for criterion, values in answered.items():
            ref = reference_value(item, design, criterion)
            for model, value in values.items():
                record = {"type": "rating", "study": study, "conversation_id": item.item_id,
                          "worker_id": worker_id, "assignment_id": assignment_id, "model": model,
                          "criterion": criterion, "scale": scale, "scale_min": low, "scale_max": high,
                          "value": value, "meta": dict(meta)}
                if ref is not None:
                    record["reference_value"] = ref
                if scale == "best_worst":
                    record["meta"]["tuple_id"] = f"{item.item_id}:{criterion}"
                if duration is not None:
                    record["duration"] = float(duration)
                if provenance is not None:
                    record["provenance"] = provenance
                if check is not None:
                    record["check"] = check
                records.append(record)
    doubt_totals(kept, elapsed)
    return records
