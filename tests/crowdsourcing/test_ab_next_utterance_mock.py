"""A/B next-utterance through Mephisto (MockArchitect + MockProvider, in-process): HITs of 10 with
random A/B order, identical responses never shown and exported as automatic ties, worker ties kept, no
model name in what the worker's browser receives, the task told from the run at export."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.data import from_records
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun, assert_blind

pytestmark = pytest.mark.slow
X, Y = "xavier_bot", "yolanda_bot"
STUDY = "ab_study_1"


def write_items(path):
    rows = []
    for i in range(12):
        same = i in (4, 9)
        rows.append({"item_id": f"p{i}", "context": ["Hello there", f"What is {i} plus {i}?"], "model_a": X,
                     "model_b": Y, "response_a": f"x says {2 * i}", "response_b": f"x says {2 * i}" if same
                     else f"y says {i}{i}"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def run(tmp_path):
    items = tmp_path / "items.jsonl"
    write_items(items)
    run = MockRun("ab_next_utterance", tmp_path / "mephisto", port=free_port(), overrides=[
        f"ab.items_file={items}", "ab.seed=3", "mephisto.blueprint.units_per_assignment=1",
        f"mephisto.task.task_name={STUDY}"])
    yield run
    run.shutdown()


def test_hits_ties_and_export(run):
    run.register("W1", "REG_1")
    agent = run.unit_agent("W1")
    inputs = run.unit_inputs(agent)
    shown = inputs["shown"]
    assert len(shown) == 10 and {s["item_id"] for s in shown}.isdisjoint({"p4", "p9"})
    assert "model_a" not in shown[0]
    # the agent's state is set before its details go out to the page (failed once under two suites at once)
    run.wait(lambda: run.sent_init_data(), what="W1's unit data sent towards the page")
    assert run.sent_init_data() == [inputs]
    assert_blind(run.sent_init_data(), (X, Y))
    # answer: A when A is x's response, B otherwise, tie on the first item
    answers = {}
    for n, item in enumerate(shown):
        choice = "tie" if n == 0 else ("a" if item["response_a"].startswith("x") else "b")
        answers[item["item_id"]] = {"choice": choice, "duration": 2.0}
    run.submit(agent, {"answers": answers})
    run.wait(lambda: run.live_agent(agent).state.get_data()["outputs"] is not None, what="submission")

    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db

    report, spec = collect_from_db(run.db, STUDY)  # no task type given: recorded in the run
    assert spec.name == "ab_next_utterance"
    comps = from_records(report.records).comparisons
    auto = comps[comps["automatic"] == True]  # noqa: E712  (True or null)
    assert sorted(auto["item_id"]) == ["p4", "p9"] and set(auto["choice"]) == {"tie"}
    worker = comps[comps["worker_id"] == "W1_sandbox"]
    assert len(worker) == 10
    # x won every non-tie item whichever side it was shown on
    for row in worker.itertuples():
        if row.choice != "tie":
            assert (row.model_a if row.choice == "a" else row.model_b) == X
    assert (worker["choice"] == "tie").sum() == 1
    assert 1 <= (worker["model_a"] == X).sum() <= 9  # both orders occur (seeded)
