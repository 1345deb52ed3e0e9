"""PW-Turn unit data -> canonical records (docs/data_model.md): the continued conversation + one
comparison per bot turn (model_a = the response shown on the left)."""
from __future__ import annotations

from parlai_dialeval.analysis.worker_checks import check_messages, worker_messages
from parlai_dialeval.crowdsourcing.platform.checks import GOLD_MODEL, check_of
from parlai_dialeval.crowdsourcing.pw_turn.protocol import CRITERION, question_text

TASK = "pw_turn"
SIDE = {"left": "a", "right": "b"}
TURN_KEYS = ("speaker", "text", "time", "meta", "provenance")


def study_record(study: str, question: str, checks: dict | None = None) -> dict:
    return {"type": "study", "name": study, "description": f"PW-Turn ({question}): {question_text(question)}",
            **({"meta": {"checks": checks}} if checks else {})}


def _checked(choice: dict, item: str) -> dict:
    """A turn's check fields (platform/checks.py): a gold turn's known-bad side is model ``gold_bad`` and the
    other side is right; an attention check is right when it chose the side the instruction named."""
    if choice.get("gold"):
        bad = choice["gold"]["side"]
        models = {bad: GOLD_MODEL, ("right" if bad == "left" else "left"): choice[("right" if bad == "left" else "left")]}
        return {"model_a": models["left"], "model_b": models["right"],
                "check": check_of("gold", choice["choice"] != bad, SIDE["right" if bad == "left" else "left"], item)}
    if choice.get("attention"):
        side = choice["attention"]["choose"]
        return {"check": check_of("attention", choice["choice"] == side, SIDE[side], item)}
    return {}


def unit_records(state: dict, *, study: str, worker_id: str, assignment_id: str, conversation_id: str,
                 status: str = "complete") -> list[dict]:
    """Records of one unit: ``state`` is ``PairwiseTurnSession.state()`` as saved with the unit."""
    question = question_text(state["question"])
    turns = [{k: v for k, v in t.items() if k in TURN_KEYS} for t in state["turns"]]
    checks = check_messages(worker_messages(turns))
    records = [{"type": "conversation", "study": study, "id": conversation_id, "models": list(state["models"]),
                "worker_id": worker_id, "assignment_id": assignment_id, "task": TASK, "turns": turns,
                "status": status, "meta": {"question": state["question"], "worker_checks": checks,
                                           **({"error": state["error"]} if state.get("error") else {})}}]
    for choice in state["choices"]:
        left, right = choice["left"], choice["right"]
        records.append({
            "type": "comparison", "study": study, "item_id": conversation_id, "worker_id": worker_id,
            "assignment_id": assignment_id, "turn_index": choice["turn_index"], "model_a": left,
            "model_b": right, "choice": SIDE[choice["choice"]], "question": question,
            "justification": choice["justification"], "response_a": choice["responses"][left],
            "response_b": choice["responses"][right],
            "context": [{"speaker": t["speaker"], "text": t["text"]} for t in choice["context"]],
            "duration": choice["duration"],
            "meta": {"criterion": CRITERION[state["question"]], "observed": choice["observed"]},
            **({"provenance": choice["provenance"]} if choice.get("provenance") else {}),
            **_checked(choice, f"{conversation_id}:{choice['turn_index']}"),
        })
    return records



def onboarding_records(saved: dict, *, study: str, worker_id: str, item_prefix: str) -> list[dict]:
    """One comparison per reply pair per try of an onboarding attempt, ``onboarding: true``; ``saved`` is
    ``OnboardingWorld.prep_save_data()["onboarding"]``. The known-better reply's side is model
    ``onboarding_good``, the other ``onboarding_bad``; ``meta`` keeps the try and the outcome."""
    records = []
    for number, choices in enumerate(saved["tries"], 1):
        for index, (pair, answer, choice) in enumerate(zip(saved["pairs"], saved["answers"], choices)):
            left, right = ("onboarding_good", "onboarding_bad") if answer == "left" else ("onboarding_bad",
                                                                                        "onboarding_good")
            record = {"type": "comparison", "study": study, "item_id": f"{item_prefix}_pair{index}",
                      "worker_id": worker_id, "model_a": left, "model_b": right, "choice": SIDE[choice],
                      "context": [pair["human"]], "response_a": pair["left"], "response_b": pair["right"],
                      "onboarding": True, "meta": {"try": number, "passed": bool(saved["passed"])}}
            if saved.get("question"):
                record["question"] = question_text(saved["question"])
                record["meta"]["criterion"] = CRITERION[saved["question"]]
            records.append(record)
    return records
