"""Issue 20, item 1: SM-Eval and PW-Turn let a worker pause (MockArchitect + MockProvider, in-process).

Their worlds once waited one second per poll with ``agent.act(timeout=...)``, and Mephisto marks an agent
timed out when nothing arrives within that time, so a person pausing ~1 s was ended. Here the scripted
worker really sleeps longer than that before acting; only the task's configured ``turn_timeout`` may end
a worker, and a worker it ends is exported as incomplete.
"""
from __future__ import annotations

import time

import pytest

from parlai_dialeval.data import from_records
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun
from .test_pw_turn_mock import ECHO_ONLY, answer_onboarding, pass_pw_turn_onboarding

pytestmark = pytest.mark.slow
PAUSE = 2.5  # seconds a person may look away: longer than the old one-second poll


def export(run, task: str):
    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db

    return from_records(collect_from_db(run.db, task)[0].records)


def test_sm_eval_worker_who_pauses_completes(tmp_path):
    run = MockRun("sm_eval", tmp_path, port=free_port(), overrides=[
        "mephisto.blueprint.num_conversations=1", "sm_eval.num_turns=2", "sm_eval.seed=1",
        "~sm_eval.models.retrieval"])
    try:
        run.register("W1", "REG_1")
        agent = run.unit_agent("W1")
        run.last_task_data(agent)
        time.sleep(PAUSE)  # reading the first bot message
        seen = run.message_count(agent)
        run.act(agent, {"checked": ["engaging"]})
        assert run.last_task_data(agent, after=seen)["phase"] == "chat"
        time.sleep(PAUSE)  # thinking of a reply
        seen = run.message_count(agent)
        run.act(agent, {"action": "message"}, text="I like hiking")
        assert run.last_task_data(agent, after=seen)["phase"] == "annotate"
        seen = run.message_count(agent)
        run.act(agent, {"checked": ["none"]})
        assert run.last_task_data(agent, after=seen)["phase"] == "rate"
        time.sleep(PAUSE)
        run.act(agent, {"ratings": {"engaging": 4, "humanlike": 3, "interesting": 5}})
        run.last_task_data(agent, key="task_done")
        assert run.live_agent(agent).get_status() != "timeout"
        run.submit(agent, {"final_data": {}})
        data = export(run, "sm_eval")
        assert list(data.conversations["status"]) == ["complete"]
        assert len(data.ratings[data.ratings["scale"] == "likert"]) == 3
    finally:
        run.shutdown()


def test_pw_turn_onboarding_and_chat_at_human_pace_then_idle_timeout(tmp_path):
    run = MockRun("pw_turn", tmp_path, port=free_port(), overrides=[
        "mephisto.blueprint.num_conversations=2", "pw_turn.seed=4", "pw_turn.num_turns=1",
        "pw_turn.turn_timeout=6", *ECHO_ONLY, "+pw_turn.models.parrot.opt.model=repeat_label"])
    try:
        run.register("W1", "REG_1")
        onboarding = run.onboarding_agent("W1")
        time.sleep(PAUSE)  # reading the four onboarding pairs
        answer_onboarding(run, onboarding, correct=True)
        assert run.last_task_data(onboarding, key="passed")["passed"] is True
        run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(), {})
        run.settle()
        agent = run.unit_agent("W1")
        assert run.last_task_data(agent)["phase"] == "choose"
        time.sleep(PAUSE)
        run.act(agent, {"action": "choose", "choice": "left", "justification": "more on topic"})
        run.last_task_data(agent, key="task_done")
        run.submit(agent, {"final_data": {}})

        # a second worker goes quiet past the configured turn_timeout (6 s): ended, exported incomplete
        run.register("W2", "REG_2")
        pass_pw_turn_onboarding(run, "W2")
        idle = run.unit_agent("W2")
        run.last_task_data(idle)
        run.wait(lambda: run.live_agent(idle).get_status() == "timeout", timeout=20, what="the idle timeout")
        data = export(run, "pw_turn")
        status = data.conversations.set_index("worker_id")["status"].to_dict()
        assert status == {"W1_sandbox": "complete", "W2_sandbox": "incomplete"}
    finally:
        run.shutdown()
