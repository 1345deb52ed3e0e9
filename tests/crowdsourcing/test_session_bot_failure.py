"""A bot that fails mid-chat in SM-Eval ends that conversation as failed, tells the worker and lets them
submit; the export keeps it as `failed` (issue 15: never a hung worker page)."""
from __future__ import annotations

import pytest

from parlai_dialeval.crowdsourcing.platform.session_world import BOT_FAILED

from .protocol_harness import MockRun

pytestmark = pytest.mark.slow
CRASHING = "parlai_dialeval.crowdsourcing.platform.diagnostic_bots:CrashingAgent"


def test_sm_eval_bot_failure_ends_the_conversation_as_failed(tmp_path):
    run = MockRun("sm_eval", tmp_path, port=3241, overrides=[
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
        run.server.submit_mock_unit(agent.get_agent_id(), {"final_data": {}})
        run.settle()

        from parlai_dialeval.crowdsourcing.platform.export import read_units

        report = run.spec.export(read_units(run.db, "sm_eval", run.spec.extra["export_files"]), "sm_eval")
        conversation = next(r for r in report.records if r["type"] == "conversation")
        assert conversation["status"] == "failed"
        assert conversation["meta"]["error"] == "RuntimeError: CrashingAgent: simulated model failure"
    finally:
        run.shutdown()
