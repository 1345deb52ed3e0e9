"""A bot that fails mid-chat in SM-Eval or PW-Turn ends that conversation as failed, tells the worker and
lets them submit; the export keeps it as `failed` (issue 15: never a hung worker page)."""
from __future__ import annotations

import pytest

from parlai_dialeval.crowdsourcing.platform.session_world import BOT_FAILED
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun
from .test_pw_turn_mock import ECHO_ONLY, pass_pw_turn_onboarding

pytestmark = pytest.mark.slow
CRASHING = "parlai_dialeval.crowdsourcing.platform.diagnostic_bots:CrashingAgent"


def submitted_conversation(run, agent, task: str) -> dict:
    """The worker submits; the task's export keeps their conversation as failed, with the bot's error."""
    from parlai_dialeval.crowdsourcing.platform.export import read_units

    run.submit(agent, {"final_data": {}})
    report = run.spec.export(read_units(run.db, task, run.spec.extra["export_files"]), task)
    conversation = next(r for r in report.records if r["type"] == "conversation")
    assert conversation["status"] == "failed"
    assert conversation["meta"]["error"] == "RuntimeError: CrashingAgent: simulated model failure"
    return conversation


def test_sm_eval_bot_failure_ends_the_conversation_as_failed(tmp_path):
    run = MockRun("sm_eval", tmp_path, port=free_port(), overrides=[
        "mephisto.blueprint.num_conversations=1", "sm_eval.num_turns=3", "sm_eval.seed=1",
        "~sm_eval.models.retrieval", f"sm_eval.models.echo.opt.model={CRASHING}", "+sm_eval.models.echo.opt.crash_after=1"])
    try:
        run.register("W1", "REG_1")
        agent = run.unit_agent("W1")
        assert run.last_task_data(agent)["phase"] == "annotate"  # "Hi!" answered: the first act works
        seen = run.message_count(agent)
        run.act(agent, {"checked": ["engaging"]})
        assert run.last_task_data(agent, after=seen)["phase"] == "chat"
        seen = run.message_count(agent)
        run.act(agent, {"action": "message"}, text="tell me more")  # the second act raises
        failed = run.last_task_data(agent, after=seen)
        assert failed["phase"] == "failed" and failed["warning"] == BOT_FAILED
        run.last_task_data(agent, key="task_done")
        submitted_conversation(run, agent, "sm_eval")
    finally:
        run.shutdown()


def test_pw_turn_bot_failure_ends_the_conversation_as_failed_and_releases_both_models(tmp_path):
    run = MockRun("pw_turn", tmp_path, port=free_port(), overrides=[
        "mephisto.blueprint.num_conversations=1", "pw_turn.num_turns=3", "pw_turn.seed=1",
        *ECHO_ONLY, f"+pw_turn.models.crash.opt.model={CRASHING}",
        "+pw_turn.models.crash.opt.crash_after=1"])
    try:
        run.register("W1", "REG_1")
        pass_pw_turn_onboarding(run, "W1")
        agent = run.unit_agent("W1")
        assert run.last_task_data(agent)["phase"] == "choose"  # both bots answered "Hi!"
        seen = run.message_count(agent)
        run.act(agent, {"action": "choose", "choice": "left", "justification": "friendlier"})
        assert run.last_task_data(agent, after=seen)["phase"] == "chat"
        seen = run.message_count(agent)
        run.act(agent, {"action": "message"}, text="tell me more")  # the crashing bot's second act raises
        failed = run.last_task_data(agent, after=seen)
        assert failed["phase"] == "failed" and failed["warning"] == BOT_FAILED
        assert [t["speaker"] for t in failed["history"]] == ["human", "bot", "human"]
        run.last_task_data(agent, key="task_done")
        # the failed HIT's two reservations went back to the pool: the next HIT is balanced as if unused
        assert set(run.live_run.task_runner.shared_state.world_opt["pool"].assigned.values()) == {0}
        conversation = submitted_conversation(run, agent, "pw_turn")
        assert [t["text"] for t in conversation["turns"] if t["speaker"] == "human"] == ["Hi!", "tell me more"]
    finally:
        run.shutdown()
