"""Live-chat export mapping on hand-made units: statuses of returned work and units with no data."""
from __future__ import annotations

import parlai_dialeval  # noqa: F401
from parlai_dialeval.crowdsourcing.live_chat_da.criteria import CRITERION_NAMES
from parlai_dialeval.crowdsourcing.live_chat_da.export import export_units
from parlai_dialeval.crowdsourcing.live_chat_da.worlds import RECORD_FILE
from parlai_dialeval.crowdsourcing.platform.export import UnitData
from parlai_dialeval.data import from_records


def conv(slot, model, status, ratings=None, turns=2):
    return {"slot": slot, "model": model, "qc": model == "qc", "status": status, "topic": "dogs" if turns else None,
            "topic_attitude": "like" if turns else None, "persona": None, "topic_changes": [],
            "turns": [{"speaker": "human" if i % 2 == 0 else model, "text": f"t{i}", "time": 100.0 + i}
                      for i in range(turns)],
            "started": 100.0 if turns else None, "ended": 100.0 + turns if status != "chatting" else None,
            "ratings": ratings, "rating_started": 110.0 if ratings else None,
            "rating_ended": 115.0 if ratings else None, "error": None}


def unit(unit_id, status, world):
    return UnitData(worker_id=f"W{unit_id}", mephisto_worker_id="9", unit_id=str(unit_id), assignment_id="7",
                    task_run_id="1", agent_id=str(unit_id), agent_status=status, state={}, task_start=None,
                    task_end=None, files={RECORD_FILE: world} if world else {})


def test_returned_hit_keeps_rated_conversations_and_marks_the_rest_returned():
    rated = dict.fromkeys(CRITERION_NAMES, 40.0)
    world = {"started": 90.0, "ended": None, "last_event": 130.0, "qc_models": ["qc"], "ice_breaker": False,
             "min_inputs": 1, "feedback": None,
             "conversations": [conv(0, "a", "complete", rated), conv(1, "qc", "chatting"),
                               conv(2, "b", "pending", turns=0)]}
    report = export_units([unit(1, "returned", world), unit(2, "disconnect", None)], "study_x")
    data = from_records(report.records)  # valid canonical records
    records = {r["slot"]: r for r in report.records if r["type"] == "conversation"}
    assert [records[s]["status"] for s in range(3)] == ["complete", "returned", "returned"]
    assert records[2]["meta"]["reached"] is False and records[2]["turns"] == []
    assert records[0]["assignment_duration"] == 40.0 and records[0]["duration"] == 2.0
    assert len(data.ratings) == 7 and set(data.ratings["conversation_id"]) == {"study_x_1_1_0"}
    assert data.ratings["duration"].tolist() == [5.0] * 7
    assert data.studies[0]["qc_models"] == ["qc"]
    # the unit that never started a conversation is reported, not silently dropped
    assert len(report.notes) == 1 and "unit 2" in report.notes[0] and "disconnect" in report.notes[0]
