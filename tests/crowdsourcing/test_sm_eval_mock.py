"""SM-Turn + SM-Dialog through Mephisto (MockArchitect + MockProvider, in-process): a scripted worker
chats six turns, ticks every bot message, rates at the end; the export is canonical and matches."""
from __future__ import annotations

import time

import pytest

from parlai_dialeval.data import from_records
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun, assert_blind

pytestmark = pytest.mark.slow
MARKS = [["engaging"], ["none"], ["humanlike", "interesting"]]
MESSAGES = ["I LOVE PIZZA SO MUCH", "I LOVE PIZZA SO MUCH"]  # trips all_caps and repeated_first


@pytest.fixture
def run(tmp_path):
    run = MockRun("sm_eval", tmp_path, port=free_port(), overrides=[
        "mephisto.blueprint.num_conversations=1", "sm_eval.num_turns=3", "sm_eval.seed=1",
        "sm_eval.block_on_worker_checks=true", "~sm_eval.models.retrieval"])
    yield run
    run.shutdown()


def test_chat_annotate_rate_export_and_block(run):
    run.register("W1", "REG_1")
    agent = run.unit_agent("W1")
    seen = 0
    for turn, marks in enumerate(MARKS):
        shown = run.last_task_data(agent, after=seen)
        assert shown["phase"] == "annotate" and shown["history"][-1]["speaker"] == "bot"
        seen = run.message_count(agent)
        run.act(agent, {"checked": ["none", "engaging"]})  # rejected: 'none' must stand alone
        assert "none of the above" in run.last_task_data(agent, after=seen)["warning"]
        seen = run.message_count(agent)
        run.act(agent, {"checked": marks})
        shown = run.last_task_data(agent, after=seen)
        if turn < len(MESSAGES):
            assert shown["phase"] == "chat"
            seen = run.message_count(agent)
            run.act(agent, {"action": "message"}, text=MESSAGES[turn])
    assert shown["phase"] == "rate" and [q["criterion"] for q in shown["questions"]] == [
        "engaging", "humanlike", "interesting"]
    run.act(agent, {"ratings": {"engaging": 2, "humanlike": 3, "interesting": 4}})
    run.last_task_data(agent, key="task_done")
    # blind: nothing the page received, the end-of-episode save included, names a model
    assert run.world_data(agent) == {"dialeval_record_file": "dialeval_sm_eval.json"}
    assert_blind(run.live_agent(agent).state.get_data()["outputs"], ["echo"])
    run.submit(agent, {"final_data": {}})

    from parlai_dialeval.crowdsourcing.platform.export import read_units

    report = run.spec.export(read_units(run.db, "sm_eval", run.spec.extra["export_files"]), "sm_eval")
    assert not report.notes
    data = from_records(report.records)
    conv = data.conversations.iloc[0]
    # repeat_query echoes the worker, so the turns are predictable
    assert [t["text"] for t in conv["turns"]] == ["Hi!", "Hi!", *[m for m in MESSAGES for _ in (0, 1)]]
    assert conv["models"] == ["echo"] and conv["worker_id"] == "W1_sandbox" and conv["duration"] > 0
    binary = data.ratings[data.ratings["scale"] == "binary"]
    by_turn = binary.pivot_table(index="turn_index", columns="criterion", values="value")
    assert by_turn.to_dict("index") == {
        1: {"engaging": 1, "humanlike": 0, "interesting": 0},
        3: {"engaging": 0, "humanlike": 0, "interesting": 0},
        5: {"engaging": 0, "humanlike": 1, "interesting": 1}}
    likert = data.ratings[data.ratings["scale"] == "likert"].set_index("criterion")["value"].to_dict()
    assert likert == {"engaging": 2, "humanlike": 3, "interesting": 4}
    checks = conv["meta"]["worker_checks"]
    assert checks["all_caps"] and checks["repeated_first"] and not checks["offensive"]
    table = run.spec.worker_checks(report.records)  # what `dialeval qc_workers sm_eval` prints
    assert table.set_index("worker_id").loc["W1_sandbox", "passed"] == False  # noqa: E712
    # block_on_worker_checks: the worker now holds the run's block qualification
    assert run.db.find_workers(worker_name="W1_sandbox")[0].get_granted_qualification("dialeval_sm_eval_blocked")


def test_worker_who_leaves_mid_conversation_keeps_partial_data(run):
    run.register("W2", "REG_2")
    agent = run.unit_agent("W2")
    shown = run.last_task_data(agent)
    assert shown["phase"] == "annotate"
    seen = run.message_count(agent)
    run.act(agent, {"checked": ["engaging"]})
    assert run.last_task_data(agent, after=seen)["phase"] == "chat"
    seen = run.message_count(agent)
    run.act(agent, {"action": "message"}, text="and then I left")
    assert run.last_task_data(agent, after=seen)["phase"] == "annotate"
    run.server.disconnect_mock_agent(agent.get_agent_id())
    record_path = f"{agent.get_data_dir()}/dialeval_sm_eval.json"
    run.wait(lambda: run.db.key_exists(record_path) and run.db.read_dict(record_path)["ended"] is not None,
             what="the world to end the session")

    from parlai_dialeval.crowdsourcing.platform.export import read_units

    report = run.spec.export(read_units(run.db, "sm_eval", run.spec.extra["export_files"]), "sm_eval")
    data = from_records(report.records)
    conv = data.conversations.iloc[0]
    assert conv["status"] == "incomplete" and conv["worker_id"] == "W2_sandbox"
    # every turn up to the moment they left, including the bot reply they had not annotated yet
    assert [t["text"] for t in conv["turns"]] == ["Hi!", "Hi!", "and then I left", "and then I left"]
    # the one annotation they gave is kept; no end-of-conversation Likert ratings were given
    assert data.ratings[["turn_index", "criterion", "value", "scale"]].to_dict("records") == [
        {"turn_index": 1, "criterion": c, "value": int(c == "engaging"), "scale": "binary"}
        for c in ("engaging", "humanlike", "interesting")]


def test_a_run_stopped_just_after_its_start_does_not_wait_out_mephistos_ten_second_sleeps(tmp_path):
    """A stop joins the unit launcher's thread, asleep for 10 s after each pass (compat: 1 s), and the harness
    closes the channels before the mock server stops (else each close waits on a server that is gone): this
    stop took 10.5 s, 5 s for each wait, force_shutdown's cap."""
    run = MockRun("sm_eval", tmp_path, port=free_port(), overrides=[
        "mephisto.blueprint.num_conversations=1", "sm_eval.num_turns=1", "~sm_eval.models.retrieval"])
    start = time.monotonic()
    run.shutdown()
    assert time.monotonic() - start < 5  # 1.7 s here (force_shutdown polls each of its 3 steps every 0.5 s)

