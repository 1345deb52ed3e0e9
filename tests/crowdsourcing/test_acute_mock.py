"""ACUTE-Eval through Mephisto (MockArchitect + MockProvider, in-process): onboarding with known answers
(fail -> soft block; pass -> units), random sides, and the export with the compared conversations."""
from __future__ import annotations

import pytest

from parlai_dialeval.data import from_records, write_jsonl

from .protocol_harness import MockRun

pytestmark = pytest.mark.slow


def write_conversations(path):
    rows = []
    for model in ("good_bot", "bad_bot"):
        for i in range(3):
            text = "I love talking about books, what are you reading?" if model == "good_bot" else "no."
            rows.append({"type": "conversation", "id": f"{model}_{i}", "models": [model], "task": "self_chat",
                         "turns": [{"speaker": model, "text": f"Hi number {i}"}, {"speaker": model, "text": text}]})
    write_jsonl(rows, path)


@pytest.fixture
def run(tmp_path):
    convs = tmp_path / "convs.jsonl"
    write_conversations(convs)
    run = MockRun("acute", tmp_path / "mephisto", port=3231, overrides=[
        f"acute.conversations=[{convs}]", "acute.seed=5", "acute.matchups_per_pair=4", "acute.subtasks_per_unit=2"])
    yield run
    run.shutdown()


def onboarding_choices(onboarding_data: dict, correct: bool) -> list[dict]:
    answers = []
    for pair in onboarding_data["shown"]:
        # the good onboarding speaker answers in full sentences; the bad one does not
        good_left = "?" in pair["left"][-1]["text"] or len(pair["left"][1]["text"]) > len(pair["right"][1]["text"])
        side = "left" if good_left == correct else "right"
        answers.append({"pair_id": pair["pair_id"], "choice": side, "justification": "x"})
    return answers


def test_onboarding_then_units_and_export(run):
    run.register("W1", "REG_1")
    onboarding = run.onboarding_agent("W1")
    data = run.live_agent(onboarding).state.get_data()["inputs"]
    run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(),
                                                    {"answers": onboarding_choices(data, correct=False)})
    run.settle()
    worker = onboarding.get_worker()
    run.wait(lambda: worker.is_disqualified("dialeval_acute_onboarded"), what="failed onboarding")

    run.register("W2", "REG_2")
    onboarding = run.onboarding_agent("W2")
    run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(),
                                                    {"answers": onboarding_choices(data, correct=True)})
    run.settle()
    agent = run.unit_agent("W2")
    inputs = run.live_agent(agent).state.get_data()["inputs"]
    assert len(inputs["shown"]) == 2
    answers = []
    for pair in inputs["shown"]:
        good_left = pair["left"][1]["text"] != "no."
        answers.append({"pair_id": pair["pair_id"], "choice": "left" if good_left else "right",
                        "justification": "asks questions", "duration": 9.5})
    run.server.submit_mock_unit(agent.get_agent_id(), {"answers": answers})
    run.settle()
    run.wait(lambda: run.live_agent(agent).state.get_data()["outputs"] is not None, what="submission")

    from parlai_dialeval.crowdsourcing.platform.export import read_units

    report = run.spec.export(read_units(run.db, "acute"), "acute")
    data = from_records(report.records)
    comps = data.comparisons
    assert len(comps) == 2 and set(comps["worker_id"]) == {"W2_sandbox"}
    for row in comps.itertuples():
        assert (row.model_a if row.choice == "a" else row.model_b) == "good_bot"
        assert {row.conversation_a, row.conversation_b} <= set(data.conversations["id"])
    assert comps["question"].iloc[0] == "Who would you prefer to talk to for a long conversation?"
