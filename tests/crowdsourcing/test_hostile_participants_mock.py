"""Hostile participants through Mephisto (MockArchitect + MockProvider, in-process; issue 26).

Live chat: while an honest worker chats, another sends 1 MB messages, malformed acts and a flood of
1,000 messages; the honest worker's HIT goes on and the export holds exactly their work plus the
hostile one's few accepted messages. ACUTE: a malformed submission becomes a note, `dialeval export`
writes the rest.
"""
from __future__ import annotations

import time

import pytest

from parlai_dialeval.crowdsourcing.platform.participant_input import InputLimits
from parlai_dialeval.testing.ports import free_port

from .test_acute_mock import STUDY, pass_acute_onboarding, start
from .test_live_chat_da_world import ECHO, MockWorker, export_records, launch

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def acute_run(tmp_path):
    run = start(tmp_path, free_port())
    yield run
    run.shutdown()


def test_live_chat_floods_and_megabyte_messages_leave_other_workers_alone(tmp_path):
    run = launch(tmp_path, free_port(), {"qc": ECHO, "a": ECHO, "b": ECHO}, num_slots=3, min_inputs=2)
    try:
        honest, hostile = MockWorker(run, "W1"), MockWorker(run, "W2")
        hostile.wait_phase("topic", 0)
        hostile.send({"action": "topic", "topic": "T" * 1_000_000, "attitude": "like"})
        hostile._wait(lambda: any("characters long" in str((m.get("task_data") or {}).get("warning"))
                                  for m in hostile.agent.state.get_data()["outputs"]["messages"]))
        hostile.send({"action": "topic", "topic": "spam", "attitude": "like"})
        hostile.wait_phase("chat", 0)
        # 1,000 messages within a second, queued for the world as Mephisto's client_io_handler._on_live_update
        # queues what the router delivers (the mock server's own websocket takes seconds per thousand)
        for k in range(1000):
            hostile.agent.pending_actions.put({"text": f"flood {k}", "task_data": {"action": "message"},
                                               "id": hostile.agent_id, "episode_done": False})
            hostile.agent.has_live_update.set()
            time.sleep(0.001)
        hostile.send(["not", "a", "dict"], 12345)
        hostile.send({"action": "message"}, "M" * 1_000_000)

        for slot in range(3):  # the honest worker, meanwhile
            honest.chat(slot, 2)
            honest.rate(slot, [50 + slot] * 7)
        honest.wait_phase("feedback")
        honest.send({"action": "feedback", "feedback": "fine"})
        honest._wait(lambda: honest.record()["finished"])
        honest.server.submit_mock_unit(honest.agent_id, {"final_data": {}})
        honest._wait(lambda: honest.agent.get_status() == "completed")

        # the flood is over once the world has taken or dropped every act of it; then this worker chats on
        hostile._wait(lambda: hostile.agent.pending_actions.empty(), timeout=60)
        time.sleep(1)  # a second's pause refills the bucket with two messages
        hostile.send({"action": "message"}, "after the flood")
        hostile._wait(lambda: hostile.record()["conversations"][0]["turns"][-1]["text"] == "after the flood")
        hostile_record = hostile.record()
        report, data, lines = export_records(run, tmp_path)
    finally:
        run.shutdown()
    limits = InputLimits()
    sent = [t for t in hostile_record["conversations"][0]["turns"] if t["speaker"] == "human"][:-1]
    assert all(t["text"].startswith("flood ") for t in sent)  # neither 1 MB message went through
    # never more than the bucket allows over the time the flood took to arrive
    assert len(sent) <= limits.rate_burst + (sent[-1]["time"] - sent[0]["time"]) * limits.rate_per_minute / 60 + 1
    assert hostile_record["dropped_acts"] + len(sent) >= 1000
    mine = data.conversations[data.conversations["worker_id"] == "W1_sandbox"]
    assert len(mine) == 3 and set(mine["status"]) == {"complete"}
    assert [[t["text"] for t in turns if t["speaker"] == "human"] for turns in mine.sort_values("slot")["turns"]] == [
        [f"message {i} in slot {slot}" for i in range(2)] for slot in range(3)]
    ratings = data.ratings[data.ratings["worker_id"] == "W1_sandbox"]
    assert sorted(ratings["value"].unique()) == [50.0, 51.0, 52.0]
    assert "M" * 1000 not in "".join(map(str, lines)) and "T" * 1000 not in "".join(map(str, lines))
    assert report.malformed == []


def test_acute_malformed_submission_is_a_note_and_export_writes_the_rest(acute_run, tmp_path, capsys):
    from parlai_dialeval.cli import main
    from parlai_dialeval.data import read_jsonl

    run = acute_run
    agents = {}
    for worker, registration in (("W1", "REG_1"), ("W2", "REG_2")):
        run.register(worker, registration)
        pass_acute_onboarding(run, worker)
        agents[worker] = run.unit_agent(worker)
    inputs = run.unit_inputs(agents["W1"])
    honest = [{"pair_id": p["pair_id"], "choice": "left", "justification": "x", "duration": 4} for p in inputs["shown"]]
    run.submit(agents["W1"], {"answers": honest})
    run.server.submit_mock_unit(agents["W2"].get_agent_id(), {"answers": [{"choice": "up", "duration": "soon"}] * 2})
    run.settle()
    for agent in agents.values():
        run.wait(lambda: run.live_agent(agent).state.get_data()["outputs"] is not None, what="submission")

    out = tmp_path / "export.jsonl"
    capsys.readouterr()
    main(["export", STUDY, "--out", str(out), "--mephisto-data", str(tmp_path / "mephisto")])
    printed = capsys.readouterr().out
    data = read_jsonl([out])
    units = data.comparisons[~data.comparisons["onboarding"].eq(True)]
    assert list(units["worker_id"]) == ["W1_sandbox"] * 2
    assert "1 malformed submission(s) not exported" in printed
    assert "(worker W2_sandbox, completed): not exported: pair" in printed and "choice must be left or right" in printed
