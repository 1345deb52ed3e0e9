"""Issue 20, item 2: a unit served again keeps both workers' conversations (MockArchitect, in-process).

A worker who disconnects frees their unit and Mephisto serves it to the next worker under the same unit id;
conversation ids once were TASK-UNIT-SLOT, so both workers' conversations shared ids and analyses kept one.
"""
from __future__ import annotations

import pytest

from parlai_dialeval.data import from_records

from parlai_dialeval.crowdsourcing.platform import runner
from parlai_dialeval.testing.ports import free_port

from .test_live_chat_da_world import ECHO, MockWorker, export_records

pytestmark = pytest.mark.slow


def test_reserved_unit_exports_both_workers_rated_conversations(tmp_path):
    port = free_port()
    run = runner.start("live_chat_da", [  # one unit: the second worker can only be given the first's
        "mephisto/architect=mock", "mephisto.architect.should_run_server=true", f"mephisto.architect.port={port}",
        "mephisto.task.task_name=lcda_test", "mephisto.blueprint.num_conversations=1",
        "mephisto.task.maximum_units_per_worker=0"], data_dir=tmp_path / "mephisto", update={
        "live_chat.models": {"qc": ECHO, "a": ECHO, "b": ECHO}, "live_chat.qc_models": ["qc"],
        "live_chat.num_slots": 3, "live_chat.min_inputs": 1, "live_chat.seed": 0})
    try:
        first = MockWorker(run, "LEAVER")
        first.chat(0, 1)
        first.rate(0, [30] * 7)
        first.wait_phase("topic", 1)
        first.server.disconnect_mock_agent(first.agent_id)
        first._wait(lambda: first.record()["conversations"][1]["status"] == "incomplete")
        second = MockWorker(run, "TAKER")
        second.chat(0, 1)
        second.rate(0, [70] * 7)
        second.wait_phase("topic", 1)
        units = {first.agent.unit_id, second.agent.unit_id}
        report, data, lines = export_records(run, tmp_path)
    finally:
        run.shutdown()
    assert len(units) == 1, "the second worker should have been served the first worker's unit"
    convs = [r for r in lines if r["type"] == "conversation"]
    ids = [c["id"] for c in convs]
    assert len(ids) == len(set(ids)) == 6
    rated = data.conversations[data.conversations["status"] == "complete"]
    assert sorted(rated["worker_id"]) == ["LEAVER_sandbox", "TAKER_sandbox"]
    values = data.ratings.groupby("worker_id")["value"].unique().map(list).to_dict()
    assert values == {"LEAVER_sandbox": [30.0], "TAKER_sandbox": [70.0]}
    from_records(lines)  # the canonical loader accepts the file
