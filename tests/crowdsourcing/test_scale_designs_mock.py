"""Rating-scale designs through Mephisto (MockArchitect + MockProvider, in-process): neutral response
keys mapped back to models (the key map kept server-side: no model name reaches the browser), BME anchors
from the items' automatic scores, time and prior experience, the task told from the run at export."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.data import from_records
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun, assert_blind

pytestmark = pytest.mark.slow
RESPONSES = {"s2s": "i i i", "hred": "Good, I went hiking by the lake.", "vhred": "Fine."}


@pytest.fixture
def run(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({
        "item_id": f"i{n}", "context": ["How was your day?"], "reference": "It was great, thanks.",
        "responses": RESPONSES, "reference_metrics": {"readability": 80 + n, "coherence": 40}}) + "\n"
        for n in range(2)))
    run = MockRun("scale_designs", tmp_path / "mephisto", port=free_port(), overrides=[
        f"scale_designs.items_file={items}", "scale_designs.design=bme", "scale_designs.seed=2",
        "mephisto.blueprint.units_per_assignment=1",
        "mephisto.task.task_name=sd_study_1"])
    yield run
    run.shutdown()


def test_bme_unit_and_export(run):
    run.register("W1", "REG_1")
    agent = run.unit_agent("W1")
    inputs = run.unit_inputs(agent)
    assert inputs["scale"] == {"kind": "magnitude", "min": 0, "max": 999}
    run.wait(lambda: run.sent_init_data(), what="W1's unit data sent towards the page")  # sent after the state is set
    assert run.sent_init_data() == [inputs]
    assert_blind(run.sent_init_data(), RESPONSES)
    ratings = {}
    for item in inputs["shown"]:
        assert item["reference_values"]["coherence"] == 40.0
        # rate by text so the mapping back to models is checked: hred 300, vhred 100, s2s 5
        by_text = {"Good, I went hiking by the lake.": 300, "Fine.": 100, "i i i": 5}
        values = {r["key"]: by_text[r["text"]] for r in item["responses"]}
        ratings[item["item_id"]] = {"readability": {"values": values}, "coherence": {"values": values}}
    run.submit(agent, {
        "ratings": ratings, "prior_experience": {"prior_experience_evaluating": True, "prior_experience_agents": False},
        "duration": 61.0, "item_durations": {"i0": 30.0, "i1": 24.0}})
    run.wait(lambda: run.live_agent(agent).state.get_data()["outputs"] is not None, what="submission")

    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db

    report, spec = collect_from_db(run.db, "sd_study_1")  # no task type given: recorded in the run
    assert spec.name == "scale_designs"
    data = from_records(report.records)
    ratings = data.ratings
    assert len(ratings) == 12
    assert ratings.groupby("model")["value"].first().to_dict() == {"hred": 300, "s2s": 5, "vhred": 100}
    read = ratings[ratings["criterion"] == "readability"].groupby("conversation_id")["reference_value"].first()
    assert read.to_dict() == {"i0": 80.0, "i1": 81.0}
    assert ratings["duration"].sum() == pytest.approx(54.0)
    assert all(m["prior_experience_evaluating"] is True and m["task_duration"] == 61.0 for m in ratings["meta"])
