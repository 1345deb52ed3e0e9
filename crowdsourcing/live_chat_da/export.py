"""Live-chat DA units -> canonical records: one study, a conversation per chat, seven ratings each.

Read by ``dialeval analyze_live_chat`` unchanged. A conversation's status: ``failed`` (its bot
crashed), ``complete`` (rated), else ``returned`` when the worker returned the HIT, else
``incomplete`` (disconnected, timed out, or the worker stopped before rating it). Its ``submission`` says
what became of the HIT: a rated chat of a HIT the worker never submitted is not finished work.
"""
from __future__ import annotations

from parlai_dialeval.crowdsourcing.live_chat_da.criteria import SCALE_MAX, SCALE_MIN, study_criteria
from parlai_dialeval.crowdsourcing.live_chat_da.protocol import TASK_TYPE
from parlai_dialeval.crowdsourcing.live_chat_da.worlds import RECORD_FILE
from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.export import ExportReport, UnitData, guard_units

ATTENTION_CRITERION = "attention"  # the attention slider's rating record (check.kind attention; analyses set it aside)


@guard_units
def export_units(units: list[UnitData], task_name: str) -> ExportReport:
    records: list[dict] = []
    notes: list[str] = []
    qc_models: set[str] = set()
    rule = None
    for unit in units:
        world = unit.files.get(RECORD_FILE)
        if world is None:
            notes.append(f"unit {unit.unit_id} (worker {unit.worker_id}, agent status {unit.agent_status}): "
                         "no conversation was started, nothing to export")
            continue
        qc_models.update(world.get("qc_models") or [])
        rule = world.get("checks") or rule
        records.extend(_unit_records(unit, world, task_name))
    study = {"type": "study", "name": task_name, "criteria": study_criteria(), "qc_models": sorted(qc_models),
             "description": "Live-chat direct assessment (Ji et al., 2022) collected with dialeval launch live_chat_da"}
    if rule:
        study["meta"] = {"checks": rule}
    return ExportReport(records=[study, *records], notes=notes)


def _conversation_status(conv: dict, unit: UnitData) -> str:
    if conv["status"] in ("failed", "complete"):
        return conv["status"]
    return "returned" if unit.status == "returned" else "incomplete"


def _unit_records(unit: UnitData, world: dict, task_name: str) -> list[dict]:
    end = world.get("ended") or world.get("last_event")
    assignment_duration = end - world["started"] if end else None
    out = []
    # a unit carried on after a restart keeps the half chats it restarted (platform/resume.py), incomplete
    restarted = [(conv, f"{conv['slot']}_restarted{k}") for k, conv in enumerate(world.get("restarted") or [])]
    for conv, id_slot in [(conv, conv["slot"]) for conv in world["conversations"]] + restarted:
        conv_id = unit.conversation_id(task_name, id_slot)
        status = _conversation_status(conv, unit)
        record = {
            "type": "conversation", "study": task_name, "id": conv_id, "task": TASK_TYPE,
            "models": [conv["model"]], "worker_id": unit.worker_id, "assignment_id": unit.unit_id,
            "hit_id": unit.assignment_id, "slot": conv["slot"], "turns": conv["turns"],
            "topic": conv["topic"], "topic_attitude": conv["topic_attitude"], "status": status,
            "submission": unit.submission,
            "feedback": world.get("feedback"),
            "provenance": {"feedback": world["feedback_provenance"]} if world.get("feedback_provenance") else None,
            "meta": {"topic_changes": conv["topic_changes"], "persona": conv["persona"],
                     "ice_breaker": world.get("ice_breaker", False), "qc": conv["qc"],
                     "error": conv.get("error"), "reached": conv.get("started") is not None,
                     "agent_status": unit.agent_status, "mephisto_worker_id": unit.mephisto_worker_id,
                     "task_run_id": unit.task_run_id, "min_inputs": world.get("min_inputs")},
        }
        duration = _span(conv.get("started"), conv.get("ended"))
        if duration is not None:
            record["duration"] = duration
        if assignment_duration is not None:
            record["assignment_duration"] = assignment_duration
        out.append({k: v for k, v in record.items() if v is not None})
        rating_duration = _span(conv.get("rating_started"), conv.get("rating_ended"))
        common = {"type": "rating", "study": task_name, "conversation_id": conv_id, "worker_id": unit.worker_id,
                  "model": conv["model"], "scale": "continuous", "scale_min": SCALE_MIN, "scale_max": SCALE_MAX,
                  "assignment_id": unit.unit_id, "duration": rating_duration,
                  "provenance": conv.get("rating_provenance")}
        for criterion, value in (conv.get("ratings") or {}).items():
            out.append({k: v for k, v in {**common, "criterion": criterion, "value": value}.items() if v is not None})
        attention = conv.get("attention") or {}
        if "answer" in attention:
            tolerance = (world.get("checks") or {}).get("tolerance", checks.ChecksArgs.tolerance)
            check = checks.check_of("attention", checks.near(attention["answer"], attention["value"], tolerance),
                                    [attention["value"] - tolerance, attention["value"] + tolerance])
            out.append({k: v for k, v in {**common, "criterion": ATTENTION_CRITERION, "value": attention["answer"],
                                          "check": check}.items() if v is not None})
    return out


def _span(start, end):
    return end - start if start is not None and end is not None else None
