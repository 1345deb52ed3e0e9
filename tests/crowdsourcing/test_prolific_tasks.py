"""Every protocol task on Prolific (MockArchitect in-process, the fake Prolific): a participant who arrives
through the study URL the fake hands out completes one unit, and the fake then shows the submission
awaiting review with the study's completion code."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.providers.prolific.fake import FakeProlific

from .prolific_harness import ProlificMockRun, complete, register

pytestmark = pytest.mark.slow


@pytest.fixture
def fake():
    with FakeProlific() as fake:
        yield fake


def _finish(run, pid: str) -> None:
    """The participant's page submitted: Mephisto has the work; the wrapper sends them to Prolific."""
    agent = run.unit_agent(pid)
    run.wait(lambda: run.live_agent(agent).get_status() == "completed", 20, "the unit completed")
    assert complete(run.fake, run.study["completion_code"], pid).status_code == 200
    assert run.submission(pid)["status"] == "AWAITING REVIEW"
    assert agent.get_worker().worker_name == pid  # the Prolific participant id is the worker


def test_scale_designs_unit_via_prolific(tmp_path, fake, monkeypatch):
    register(tmp_path / "mephisto", fake, monkeypatch)
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"item_id": "i0", "context": ["How was your day?"], "reference": "Great.",
                                 "responses": {"a": "Good.", "b": "Fine."},
                                 "reference_metrics": {"readability": 80, "coherence": 40}}) + "\n")
    run = ProlificMockRun("scale_designs", tmp_path / "mephisto", 3281, fake, [
        f"scale_designs.items_file={items}", "scale_designs.design=bme", "mephisto.blueprint.units_per_assignment=1",
        "mephisto.task.task_name=sd_prolific"])
    try:
        params = run.register("PID_SD_1")
        assert params["STUDY_ID"] == run.study["study_id"]
        agent = run.unit_agent("PID_SD_1")
        inputs = run.live_agent(agent).state.get_data()["inputs"]
        ratings = {item["item_id"]: {c: {"values": {r["key"]: 50 for r in item["responses"]}}
                                     for c in ("readability", "coherence")} for item in inputs["shown"]}
        run.server.submit_mock_unit(agent.get_agent_id(), {"ratings": ratings, "prior_experience": {}, "duration": 5.0,
                                                           "item_durations": {}})
        run.settle()
        _finish(run, "PID_SD_1")
    finally:
        run.shutdown()
