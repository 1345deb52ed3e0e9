"""PW-Turn through Mephisto (MockArchitect + MockProvider, in-process): onboarding pass and fail,
soft block of failed workers, identical histories for both models, the chosen reply continuing the
dialogue, and the export of the unit and of both onboarding attempts into canonical records."""
from __future__ import annotations

import pytest

from parlai_dialeval.crowdsourcing.pw_turn.protocol import ONBOARDING_CONVERSATION
from parlai_dialeval.data import from_records
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun, assert_blind

pytestmark = pytest.mark.slow
# the default pair (retrieval, random) left out: an echo bot, whose replies the tests know, and one they add
ECHO_ONLY = ["~pw_turn.models.retrieval", "~pw_turn.models.random", "+pw_turn.models.echo.opt.model=repeat_query"]
GOOD = {pair.good for _, pair in ONBOARDING_CONVERSATION}


@pytest.fixture
def run(tmp_path):
    run = MockRun("pw_turn", tmp_path, port=free_port(), overrides=[
        "mephisto.blueprint.num_conversations=2", "pw_turn.seed=4", "pw_turn.num_turns=3",
        *ECHO_ONLY, "+pw_turn.models.parrot.opt.model=repeat_label"])
    yield run
    run.shutdown()


def answer_onboarding(run, agent, correct: bool) -> int:
    """Answer the onboarding the world last sent; returns the agent's message count before the answer."""
    data = run.last_task_data(agent)
    choices = [("left" if pair["left"] in GOOD else "right") for pair in data["pairs"]]
    if not correct:
        choices = [{"left": "right", "right": "left"}[c] for c in choices]
    seen = run.message_count(agent)
    run.act(agent, {"action": "onboarding", "choices": choices})
    return seen


def pass_pw_turn_onboarding(run, worker: str):
    """Pass PW-Turn's onboarding for a registered ``worker``, who then gets a unit; returns the onboarding agent."""
    onboarding = run.onboarding_agent(worker)
    answer_onboarding(run, onboarding, correct=True)
    run.last_task_data(onboarding, key="passed")  # the world has judged the answers
    run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(), {})
    run.settle()
    return onboarding


def test_onboarding_fail_twice_blocks_then_pass_and_chat(run):
    # worker 1 fails both tries: Mephisto gives them the failed-onboarding qualification (soft block)
    run.register("W1", "REG_1")
    onboarding = run.onboarding_agent("W1")
    retry = run.last_task_data(onboarding, after=answer_onboarding(run, onboarding, correct=False))
    assert retry["try"] == 2 and "last try" in retry["warning"]
    answer_onboarding(run, onboarding, correct=False)
    assert run.last_task_data(onboarding, key="passed")["passed"] is False
    run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(), {})
    run.settle()
    worker = onboarding.get_worker()
    run.wait(lambda: worker.is_disqualified("dialeval_pw_turn_onboarded"), what="failed-onboarding qualification")
    assert not any(a.get_worker().worker_name == "W1_sandbox" for a in run.db.find_agents())

    # worker 2 passes on the first try and chats
    run.register("W2", "REG_2")
    onboarding = run.onboarding_agent("W2")
    answer_onboarding(run, onboarding, correct=True)
    assert run.last_task_data(onboarding, key="passed")["passed"] is True
    run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(), {})
    run.settle()
    agent = run.unit_agent("W2")

    seen = 0
    messages = ["I like to go hiking on weekends", "Do you have any pets at home?"]
    for turn in range(3):
        shown = run.last_task_data(agent, after=seen)
        assert shown["phase"] == "choose" and shown["turn"] == turn + 1
        assert shown["question"] == "Which next response from your partner would you prefer in a long conversation?"
        side = "left" if turn % 2 == 0 else "right"
        seen = run.message_count(agent)
        run.act(agent, {"action": "choose", "choice": side, "justification": f"reason {turn}"})
        if turn < 2:
            after_choice = run.last_task_data(agent, after=seen)
            assert after_choice["phase"] == "chat"
            assert after_choice["history"][-1] == {"speaker": "bot", "text": shown[side]}
            seen = run.message_count(agent)
            run.act(agent, {"action": "message"}, text=messages[turn])
    run.last_task_data(agent, key="task_done")
    # blind: nothing the page received, the end-of-episode save included, names a model
    assert run.world_data(agent) == {"dialeval_record_file": "dialeval_pw_turn.json"}
    assert_blind(run.live_agent(agent).state.get_data()["outputs"], ["echo", "parrot"])
    run.submit(agent, {"final_data": {}})

    from parlai_dialeval.analysis.pairwise import split_onboarding
    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db

    report, _ = collect_from_db(run.db, "pw_turn")
    data = from_records(report.records)
    # onboarding: W1 tried twice with every pair wrong, W2 once with every pair right (4 pairs a try)
    onboarding = data.comparisons[data.comparisons["onboarding"].eq(True)]
    assert sorted(onboarding["worker_id"]) == ["W1_sandbox"] * 8 + ["W2_sandbox"] * 4
    for row in onboarding.itertuples():
        picked = row.model_a if row.choice == "a" else row.model_b
        assert picked == ("onboarding_bad" if row.worker_id == "W1_sandbox" else "onboarding_good")
        assert (row.response_a if row.choice == "a" else row.response_b) in GOOD or row.worker_id == "W1_sandbox"
    assert sorted(m["try"] for m in onboarding[onboarding["worker_id"] == "W1_sandbox"]["meta"]) == [1] * 4 + [2] * 4
    assert sum(report.onboarding_by_status.values()) == 2 and "(12 of them onboarding)" in report.summary()
    worker_comps, excluded = split_onboarding(data.comparisons)  # what analyze_pairwise sets aside
    assert excluded == 12
    data.comparisons = worker_comps.astype({"turn_index": int})  # onboarding rows had none
    conv = data.conversations.iloc[0]
    assert conv["worker_id"] == "W2_sandbox" and len(conv["turns"]) == 6
    assert [t["text"] for t in conv["turns"] if t["speaker"] == "human"] == ["Hi!", *messages]
    comps = data.comparisons.sort_values("turn_index")
    assert list(comps["justification"]) == ["reason 0", "reason 1", "reason 2"]
    for row in comps.itertuples():
        # both models observed exactly the same history, and the dialogue continued with the chosen reply
        observed = row.meta["observed"]
        assert observed[row.model_a] == observed[row.model_b] == "\n".join(
            t["text"] for t in conv["turns"][: row.turn_index])
        chosen = row.response_a if row.choice == "a" else row.response_b
        assert conv["turns"][row.turn_index]["text"] == chosen
        assert conv["turns"][row.turn_index]["speaker"] == (row.model_a if row.choice == "a" else row.model_b)
    assert set(comps["model_a"]) | set(comps["model_b"]) == {"echo", "parrot"}


def test_the_onboarding_thread_ends_on_the_submit_without_looking_every_0_3_s(run, monkeypatch):
    """ParlAI-chat's run_onboarding ends with ``while not agent.await_submit(timeout=None): time.sleep(0.3)``, so
    the unit came up to 0.3 s after the participant's "Continue" (bench_load.py, PW-Turn's "onboarded" step: p50
    337 ms, and 36 ms with compat/mephisto.py's prompt_onboarding_end). With it the onboarding thread waits for
    the submit and never sleeps in that loop."""
    import threading
    import time

    from mephisto.abstractions.blueprints.parlai_chat import parlai_chat_task_runner

    slept, real_sleep = [], time.sleep

    def sleep(seconds):
        if threading.current_thread().name.startswith("Onboard-thread"):
            slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(parlai_chat_task_runner.time, "sleep", sleep)
    run.register("W1", "REG_1")
    onboarding = run.onboarding_agent("W1")
    answer_onboarding(run, onboarding, correct=True)
    assert run.last_task_data(onboarding, key="passed")["passed"] is True
    real_sleep(0.5)  # the onboarding thread is in its last loop before the participant reads and clicks
    run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(), {})
    run.settle()
    run.unit_agent("W1")
    assert slept == []
    live = run.live_run.worker_pool.final_onboardings[onboarding.get_agent_id()]  # the object the thread used
    assert "await_submit" not in vars(live) and live.await_submit(timeout=None)  # its own look again
