"""Every protocol task on Prolific (MockArchitect in-process, the fake Prolific): a participant who arrives
through the study URL the fake hands out completes one unit, and the fake then shows the submission
awaiting review with the study's completion code."""
from __future__ import annotations

import pytest

from parlai_dialeval.testing.ports import free_port

from .prolific_harness import fake  # noqa: F401,F811  (the fixture)
from .prolific_harness import (Finished, ProlificMockRun, completed_on_prolific, finish, register, scale_items,
                               scale_overrides, submit_scale_unit, submit_static_unit)

pytestmark = pytest.mark.slow


def test_scale_designs_unit_via_prolific(tmp_path, fake, monkeypatch):
    register(tmp_path / "mephisto", fake, monkeypatch)
    run = ProlificMockRun("scale_designs", tmp_path / "mephisto", free_port(), fake,
                          scale_overrides(scale_items(tmp_path / "items.jsonl", 1), "sd_prolific"))
    try:
        finished = submit_scale_unit(run, "PID_SD_1")
    finally:
        run.shutdown()
    assert finished == completed_on_prolific(run, "PID_SD_1")


def _chat_until_done(run, agent, answers) -> None:
    """Answer whatever phase the world shows (``answers[phase](task_data) -> (task_data, text)``) until done."""
    seen = 0

    def shown():
        messages = run.live_agent(agent).state.get_data()["outputs"]["messages"][seen:]
        data = [m["task_data"] for m in messages if "phase" in (m.get("task_data") or {})]
        return data[-1] if data else None

    while True:
        run.wait(lambda: _done(run, agent) or shown() is not None, what="the world's next step")
        if _done(run, agent):
            return
        task_data, text = answers[shown()["phase"]](shown())
        seen = run.message_count(agent)
        run.act(agent, task_data, text=text)


def _done(run, agent) -> bool:
    messages = run.live_agent(agent).state.get_data()["outputs"]["messages"]
    return any("task_done" in (m.get("task_data") or {}) for m in messages)


def _submit_live(run, pid) -> Finished:
    agent = run.unit_agent(pid)
    run.last_task_data(agent, key="task_done")
    run.submit(agent, {"final_data": {}})
    return finish(run, pid)


def test_sm_eval_unit_via_prolific(tmp_path, fake, monkeypatch):
    register(tmp_path / "mephisto", fake, monkeypatch)
    run = ProlificMockRun("sm_eval", tmp_path / "mephisto", free_port(), fake, [
        "mephisto.blueprint.num_conversations=1", "sm_eval.num_turns=2", "sm_eval.seed=1", "~sm_eval.models.retrieval"])
    try:
        run.register("PID_SM_1")
        _chat_until_done(run, run.unit_agent("PID_SM_1"), {
            "annotate": lambda shown: ({"checked": ["engaging"]}, ""),
            "chat": lambda shown: ({"action": "message"}, "I like hiking in the hills"),
            "rate": lambda shown: ({"ratings": {q["criterion"]: 4 for q in shown["questions"]}}, "")})
        finished = _submit_live(run, "PID_SM_1")
    finally:
        run.shutdown()
    assert finished == completed_on_prolific(run, "PID_SM_1")


def test_pw_turn_unit_via_prolific(tmp_path, fake, monkeypatch):
    from .test_pw_turn_mock import ECHO_ONLY, answer_onboarding

    register(tmp_path / "mephisto", fake, monkeypatch)
    run = ProlificMockRun("pw_turn", tmp_path / "mephisto", free_port(), fake, [
        "mephisto.blueprint.num_conversations=1", "pw_turn.seed=4", "pw_turn.num_turns=2",
        *ECHO_ONLY, "+pw_turn.models.parrot.opt.model=repeat_label"])
    try:
        run.register("PID_PW_1")
        onboarding = run.onboarding_agent("PID_PW_1")
        answer_onboarding(run, onboarding, correct=True)
        run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(), {})
        run.settle()
        _chat_until_done(run, run.unit_agent("PID_PW_1"), {
            "choose": lambda shown: ({"action": "choose", "choice": "left", "justification": "more natural"}, ""),
            "chat": lambda shown: ({"action": "message"}, "Do you have any pets at home?")})
        finished = _submit_live(run, "PID_PW_1")
    finally:
        run.shutdown()
    assert finished == completed_on_prolific(run, "PID_PW_1")


def test_acute_unit_via_prolific(tmp_path, fake, monkeypatch):
    from .test_acute_mock import pass_acute_onboarding, write_conversations

    register(tmp_path / "mephisto", fake, monkeypatch)
    convs = tmp_path / "convs.jsonl"
    write_conversations(convs)
    run = ProlificMockRun("acute", tmp_path / "mephisto", free_port(), fake, [
        f"acute.conversations=[{convs}]", "acute.seed=5", "acute.matchups_per_pair=2", "acute.subtasks_per_unit=2",
        "mephisto.task.task_name=acute_prolific"])
    try:
        run.register("PID_AC_1")
        pass_acute_onboarding(run, "PID_AC_1")
        finished = submit_static_unit(run, "PID_AC_1", lambda inputs: {"answers": [
            {"pair_id": p["pair_id"], "choice": "left", "justification": "asks questions", "duration": 3.0}
            for p in inputs["shown"]]})
    finally:
        run.shutdown()
    assert finished == completed_on_prolific(run, "PID_AC_1")
    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db

    records = collect_from_db(run.db, "acute_prolific")[0].records  # onboarding and unit: confirmed on arrival
    assert any(r.get("onboarding") for r in records) and not any(r.get("unverified") for r in records)


def test_ab_next_utterance_unit_via_prolific(tmp_path, fake, monkeypatch):
    from .test_ab_next_utterance_mock import write_items

    register(tmp_path / "mephisto", fake, monkeypatch)
    items = tmp_path / "items.jsonl"
    write_items(items)
    run = ProlificMockRun("ab_next_utterance", tmp_path / "mephisto", free_port(), fake, [
        f"ab.items_file={items}", "ab.seed=3", "mephisto.blueprint.units_per_assignment=1",
        "mephisto.task.task_name=ab_prolific"])
    try:
        run.register("PID_AB_1")
        finished = submit_static_unit(run, "PID_AB_1", lambda inputs: {
            "answers": {item["item_id"]: {"choice": "a", "duration": 2.0} for item in inputs["shown"]}})
    finally:
        run.shutdown()
    assert finished == completed_on_prolific(run, "PID_AB_1")


def test_arena_unit_via_prolific(tmp_path, fake, monkeypatch):
    register(tmp_path / "mephisto", fake, monkeypatch)
    run = ProlificMockRun("arena", tmp_path / "mephisto", free_port(), fake, [
        "mephisto.blueprint.num_conversations=1", "arena.seed=0", "arena.min_battles=1", "arena.max_battles=1"])

    def until(agent, phase):
        run.wait(lambda: any((m.get("task_data") or {}).get("phase") == phase for m in
                             run.live_agent(agent).state.get_data()["outputs"]["messages"]), 60, f"phase {phase}")

    try:
        run.register("PID_AR_1")
        agent = run.unit_agent("PID_AR_1")
        until(agent, "prompt")
        for phase, task_data, text in (("vote", {"action": "message"}, "Which book should I read next?"),
                                       ("voted", {"action": "vote", "choice": "both_bad"}, ""),
                                       ("revealed", {"action": "end"}, ""), ("done", {"action": "finish"}, "")):
            run.act(agent, task_data, text=text)
            until(agent, phase)
        finished = _submit_live(run, "PID_AR_1")
    finally:
        run.shutdown()
    assert finished == completed_on_prolific(run, "PID_AR_1")
