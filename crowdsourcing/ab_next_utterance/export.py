"""A/B unit data -> canonical comparisons; automatic ties -> comparisons with automatic: true."""
from __future__ import annotations

from parlai_dialeval.crowdsourcing.ab_next_utterance.protocol import CHOICES, QUESTION, ABItem
from parlai_dialeval.crowdsourcing.platform.answer_record import clean_judgment, doubt_totals
from parlai_dialeval.crowdsourcing.platform.checks import check_of
from parlai_dialeval.crowdsourcing.platform.export import submitted_duration
from parlai_dialeval.data.schema import DRAW_FIELDS

TASK = "ab_next_utterance"
AUTOMATIC_WORKER = "automatic"


def study_record(study: str, checks: dict | None = None) -> dict:
    return {"type": "study", "name": study, "description": f"A/B next utterance (ChatEval): {QUESTION}",
            **({"meta": {"checks": checks}} if checks else {})}


def unit_records(hit: list[dict], answers: dict[str, dict], *, study: str, worker_id: str,
                 assignment_id: str, elapsed: float | None = None) -> list[dict]:
    """``answers``: item_id -> {"choice": a|b|tie, "duration"?: seconds, "provenance"?: the page's record}; every
    shown item must be answered. ValueError on anything else (the page submitted it: hostile until checked).
    ``elapsed``: seconds between the page's start and its submission on the server's clock."""
    if not isinstance(answers, dict):
        raise ValueError(f"answers must map item ids to answers, got {type(answers).__name__}")
    records = []
    for pair in hit:
        answer = answers.get(pair["item_id"])
        choice = answer.get("choice") if isinstance(answer, dict) else None
        if not isinstance(choice, str) or choice not in CHOICES:
            raise ValueError(f"item {pair['item_id']}: choice must be one of {', '.join(CHOICES)}, got {answer!r:.60}")
        duration = submitted_duration(answer.get("duration"), f"item {pair['item_id']}")
        record = {"type": "comparison", "study": study, "item_id": pair["item_id"], "worker_id": worker_id,
                  "assignment_id": assignment_id, "model_a": pair["model_a"], "model_b": pair["model_b"],
                  "choice": answer["choice"], "question": QUESTION, "context": list(pair["context"]),
                  "response_a": pair["response_a"], "response_b": pair["response_b"], "meta": {"task": TASK}}
        if duration is not None:
            record["duration"] = duration
        provenance = clean_judgment(answer.get("provenance"), elapsed=elapsed)
        if provenance is not None:
            record["provenance"] = provenance
        if "check" in pair:  # an attention check or gold item (platform/checks.py): right when it chose `expected`
            expected = pair["check"]["expected"]
            record["check"] = check_of(pair["check"]["kind"], answer["choice"] == expected, expected, pair["item_id"])
        record.update({k: pair[k] for k in DRAW_FIELDS if k in pair})  # an adaptive launch with a judge
        records.append(record)
    doubt_totals([r.get("provenance") for r in records], elapsed)
    return records


def automatic_tie_records(ties: list[ABItem], *, study: str) -> list[dict]:
    """One tie per identical-response item, worker_id 'automatic' (no worker saw it)."""
    return [{"type": "comparison", "study": study, "item_id": t.item_id, "worker_id": AUTOMATIC_WORKER,
             "model_a": t.model_x, "model_b": t.model_y, "choice": "tie", "automatic": True,
             "question": QUESTION, "context": list(t.context), "response_a": t.response_x,
             "response_b": t.response_y, "meta": {"task": TASK}} for t in ties]
