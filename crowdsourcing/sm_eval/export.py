"""SM-Turn + SM-Dialog unit data -> canonical records: the conversation, binary per-turn ratings
(turn_index = the bot turn) and 1-5 Likert per-dialogue ratings."""
from __future__ import annotations

from parlai_dialeval.analysis.worker_checks import check_messages, worker_messages
from parlai_dialeval.crowdsourcing.platform.checks import GOLD_MODEL, check_of
from parlai_dialeval.crowdsourcing.sm_eval.protocol import CRITERIA, LIKERT_MAX, LIKERT_MIN, LIKERT_QUESTIONS, TURN_LABELS

TASK = "sm_eval"
TURN_KEYS = ("speaker", "text", "time", "meta", "provenance")


def study_record(study: str, checks: dict | None = None) -> dict:
    # SM-Turn and SM-Dialog share criterion names; their scales differ per record (binary vs likert).
    criteria = [{"name": c, "positive": True, "scale": "likert", "min": LIKERT_MIN, "max": LIKERT_MAX,
                 "question": LIKERT_QUESTIONS[c], "label": TURN_LABELS[c]} for c in CRITERIA]
    return {"type": "study", "name": study, "criteria": criteria,
            "description": "SM-Turn (per bot turn, binary) + SM-Dialog (end of dialogue, 1-5 Likert)",
            **({"meta": {"checks": checks}} if checks else {})}


def _turn_check(state: dict, turn_index: int, marks: dict, conversation_id: str) -> dict | None:
    """The check an annotation answered (platform/checks.py): a gold turn's known-bad reply (none of the
    qualities is right), or an attention check asking to tick one quality alone; None for a plain one."""
    turns = state["turns"]
    item = f"{conversation_id}:{turn_index}"
    if ((turns[turn_index].get("meta") or {}).get("gold")) is not None:
        return check_of("gold", not any(marks.values()), ["none"], item)
    bot_turns = [i for i, t in enumerate(turns) if t["speaker"] == state["model"]]
    tick = (state.get("attention") or {}).get(str(bot_turns.index(turn_index)))
    if tick is not None:
        return check_of("attention", marks == {c: int(c == tick) for c in CRITERIA}, [tick], item)
    return None


def unit_records(state: dict, *, study: str, worker_id: str, assignment_id: str, conversation_id: str,
                 duration: float | None = None, status: str = "complete") -> list[dict]:
    model = state["model"]
    turns = [{k: v for k, v in t.items() if k in TURN_KEYS} for t in state["turns"]]
    conversation = {"type": "conversation", "study": study, "id": conversation_id, "models": [model],
                    "worker_id": worker_id, "assignment_id": assignment_id, "task": TASK, "turns": turns,
                    "status": status, "meta": {"worker_checks": check_messages(worker_messages(turns)),
                                               **({"error": state["error"]} if state.get("error") else {})}}
    if state.get("persona"):
        conversation["personas"] = {"human": list(state["persona"])}
    if duration is not None:
        conversation["duration"] = duration
    common = {"type": "rating", "study": study, "conversation_id": conversation_id, "worker_id": worker_id,
              "model": model, "assignment_id": assignment_id}
    records = [conversation]
    screens = state.get("provenance") or {}
    for turn_index, marks in sorted(state["annotations"].items(), key=lambda kv: int(kv[0])):
        check = _turn_check(state, int(turn_index), marks, conversation_id)
        extra = {**({"provenance": screens[str(turn_index)]} if screens.get(str(turn_index)) else {}),
                 **({"check": check} if check else {}),
                 **({"model": GOLD_MODEL} if check and check["kind"] == "gold" else {})}
        records += [{**common, "criterion": c, "scale": "binary", "scale_min": 0, "scale_max": 1,
                     "value": marks[c], "turn_index": int(turn_index), **extra} for c in CRITERIA]
    final = {"provenance": state["final_provenance"]} if state.get("final_provenance") else {}
    records += [{**common, "criterion": c, "scale": "likert", "scale_min": LIKERT_MIN, "scale_max": LIKERT_MAX,
                 "value": state["final_ratings"][c], **final} for c in CRITERIA if c in state["final_ratings"]]
    return records
