"""Arena unit data -> canonical records (docs/data_model.md): per battle, each side's conversation
(``<battle>/a`` and ``/b``: the participant's prompts and that model's replies) and one comparison per voted
turn, which analyze_pairwise, certify, publish and the dashboard read as they are. How the page saw each prompt
made is kept once, in side a's turn (side b's copy says ``meta.copy_of``); each vote's screen record is its
comparison's ``provenance``; answers to check items carry ``check`` (platform/checks.py)."""
from __future__ import annotations

from parlai_dialeval.crowdsourcing.arena.protocol import SIDES, turn_check
from parlai_dialeval.crowdsourcing.platform.checks import check_of
from parlai_dialeval.protocols import get_protocol

TASK = "arena"
QUESTION = get_protocol("arena").questions[0].wording
STATUS = {"complete": "complete", "failed": "failed"}  # any other battle (open when the session ended): incomplete


def study_record(study: str, policy: dict, checks: dict | None = None) -> dict:
    return {"type": "study", "name": study, "description": f"Arena battles: {QUESTION} (A, B, tie or both bad), "
            "two anonymous models answering the participant's own prompts side by side",
            "meta": {"arena": policy, **({"checks": checks} if checks else {})}}


def side_turns(battle: dict, side: str, item: str) -> list[dict]:
    """One side's conversation: every prompt (also one the models never answered) and that side's replies. The
    prompt's record goes with side a's copy alone, so that the evidence table counts each prompt once."""
    turns = []
    for turn in battle["turns"]:
        prompt = {"speaker": "human", "text": turn["prompt"], "time": turn["time"]}
        if side != SIDES[0]:
            prompt["meta"] = {"copy_of": f"{item}/{SIDES[0]}"}
        elif turn.get("provenance") is not None:
            prompt["provenance"] = turn["provenance"]
        turns.append(prompt)
        if turn.get("replies"):
            reply = turn["replies"][side]
            turns.append({"speaker": battle["models"][side], "text": reply["text"], "time": turn["shown_at"],
                          **({"meta": reply["meta"]} if reply["meta"] else {})})
    return turns


def graded(battle: dict, number: int, choice: str, item: str) -> dict | None:
    """The ``check`` of the vote on turn ``number`` when that turn is a check item: a gold battle's right answer is
    the model's side (a tie or both bad is wrong beside a clearly broken reply), an attention battle's the answer
    its instruction named."""
    check = turn_check(battle, number)
    if check is None:
        return None
    expected = ("b" if check["side"] == "a" else "a") if check["kind"] == "gold" else check["choose"]
    return check_of(check["kind"], choice == expected, expected, f"{item}:{number + 1}")


def unit_records(record: dict, *, study: str, task_name: str, worker_id: str, assignment_id: str,
                 submission: str) -> list[dict]:
    """Records of one participant's session (``record``: the world's saved record, worlds.py)."""
    out = []
    for battle in record["battles"]:
        item = f"{task_name}_{battle['id']}"
        duplicate = battle.get("duplicate") or {}
        conversations = {side: f"{item}/{side}" for side in SIDES}
        meta = {**({"error": battle["error"]} if battle.get("error") else {}),
                **({"check": battle["check"]["kind"]} if battle.get("check") else {})}
        for side in SIDES:
            out.append({"type": "conversation", "study": study, "id": conversations[side],
                        "models": [battle["models"][side]], "worker_id": worker_id, "assignment_id": assignment_id,
                        "task": TASK, "turns": side_turns(battle, side, item),
                        "status": STATUS.get(battle["status"], "incomplete"), "submission": submission,
                        "meta": {"battle": item, "side": side, **meta}})
        for number, turn in enumerate(battle["turns"]):
            vote = turn.get("vote")
            if not vote or not turn.get("replies"):
                continue
            leak = (turn.get("void") or {}).get("anonymity_leak")
            choice = vote["choice"]
            comparison = {
                "type": "comparison", "study": study, "item_id": item, "worker_id": worker_id,
                "assignment_id": assignment_id, "turn_index": 2 * number + 1, "model_a": battle["models"]["a"],
                "model_b": battle["models"]["b"], "choice": "tie" if choice == "both_bad" else choice,
                "question": QUESTION, "context": turn["prompt"], "response_a": turn["replies"]["a"]["text"],
                "response_b": turn["replies"]["b"]["text"], "conversation_a": conversations["a"],
                "conversation_b": conversations["b"], "duration": vote["duration"],
                "sampling_probability": battle["sampling_probability"], "weight": battle["weight"],
                "meta": {"task": TASK, "battle_turn": number + 1}}
            if choice in ("tie", "both_bad"):
                comparison["tie_kind"] = choice
            if turn.get("void") is not None:
                comparison["anonymity_leak"] = True
                comparison["meta"]["leak"] = leak or "a reply earlier in the battle named a model or maker"
            if duplicate.get("void"):
                comparison["duplicate_prompt"] = True
            if duplicate:
                comparison["meta"]["duplicate"] = duplicate
            if vote.get("provenance") is not None:
                comparison["provenance"] = vote["provenance"]
            check = graded(battle, number, choice, item)
            if check is not None:
                comparison["check"] = check
            out.append(comparison)
    return out
