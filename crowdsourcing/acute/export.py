"""ACUTE unit data -> canonical records: one comparison per pair (model_a = left speaker) plus the
conversation records of every compared dialogue (once each; onboarding dialogues with status onboarding)."""
from __future__ import annotations

from parlai_dialeval.crowdsourcing.acute.protocol import question_text
from parlai_dialeval.crowdsourcing.platform.answer_record import clean_judgment, doubt_totals
from parlai_dialeval.crowdsourcing.platform.checks import check_of
from parlai_dialeval.crowdsourcing.platform.export import submitted_duration
from parlai_dialeval.crowdsourcing.pw_turn.protocol import CRITERION  # the same three metrics
from parlai_dialeval.data.schema import DRAW_FIELDS

TASK = "acute"
SIDE = {"left": "a", "right": "b"}


def study_record(study: str, question: str, checks: dict | None = None) -> dict:
    return {"type": "study", "name": study, "description": f"PW-Dialog / ACUTE ({question}): {question_text(question)}",
            **({"meta": {"checks": checks}} if checks else {})}


def _conversation(conv: dict, study: str, onboarding: bool) -> dict:
    record = {"type": "conversation", "study": study, **{k: v for k, v in conv.items() if k != "type"}}
    if onboarding:
        record["status"] = "onboarding"
    return record


def unit_records(pairs: list[dict], answers: list[dict], *, question: str, study: str, worker_id: str,
                 assignment_id: str, onboarding: bool = False, elapsed: float | None = None) -> list[dict]:
    """``answers[i]`` = {"choice": "left"|"right", "justification": str, "duration"?: seconds, "provenance"?: the
    page's record} for ``pairs[i]``; ValueError on anything else (the page submitted it: hostile until checked).
    ``elapsed``: seconds between the page's start and its submission on the server's clock."""
    if not isinstance(answers, list) or len(answers) != len(pairs):
        raise ValueError(f"answers must be a list of {len(pairs)} (one per pair), got {type(answers).__name__}"
                         + (f" of {len(answers)}" if isinstance(answers, list) else ""))
    text = question_text(question)
    records, seen = [], set()
    for pair, answer in zip(pairs, answers):
        where = f"pair {pair['pair_id']}"
        if not isinstance(answer, dict):
            raise ValueError(f"{where}: an answer must be an object, got {type(answer).__name__}")
        if not isinstance(answer.get("choice"), str) or answer["choice"] not in SIDE:
            raise ValueError(f"{where}: choice must be left or right, got {answer.get('choice')!r:.60}")
        justification = answer.get("justification", "")
        if not isinstance(justification, str):
            raise ValueError(f"{where}: justification must be text, got {type(justification).__name__}")
        duration = submitted_duration(answer.get("duration"), where)
        for side in ("left", "right"):
            conv = pair[side]["conversation"]
            if conv["id"] not in seen and "check" not in pair:  # a check pair's dialogues are no study data
                seen.add(conv["id"])
                records.append(_conversation(conv, study, onboarding))
        record = {"type": "comparison", "study": study, "item_id": pair["pair_id"], "worker_id": worker_id,
                  **({"assignment_id": assignment_id} if assignment_id else {}), "model_a": pair["left"]["model"],
                  "model_b": pair["right"]["model"], "choice": SIDE[answer["choice"]], "question": text,
                  "justification": justification,
                  "conversation_a": pair["left"]["conversation"]["id"],
                  "conversation_b": pair["right"]["conversation"]["id"],
                  "meta": {"criterion": CRITERION[question]}}
        if duration is not None:
            record["duration"] = duration
        if onboarding:
            record["onboarding"] = True
        provenance = clean_judgment(answer.get("provenance"), justification=justification, elapsed=elapsed)
        if provenance is not None:
            record["provenance"] = provenance
        if "check" in pair:  # an attention check or gold item (platform/checks.py): right when it chose `expected`
            expected = pair["check"]["expected"]
            record["check"] = check_of(pair["check"]["kind"], answer["choice"] == expected, SIDE[expected],
                                       pair["pair_id"])
        record.update({k: pair[k] for k in DRAW_FIELDS if k in pair})  # an adaptive launch with a judge
        records.append(record)
    doubt_totals([r.get("provenance") for r in records if r["type"] == "comparison"], elapsed)
    return records


def dedupe_conversations(records: list[dict]) -> list[dict]:
    """Keep the first record of each conversation id (several units may show the same dialogue)."""
    seen, kept = set(), []
    for record in records:
        if record["type"] == "conversation":
            if record["id"] in seen:
                continue
            seen.add(record["id"])
        kept.append(record)
    return kept
