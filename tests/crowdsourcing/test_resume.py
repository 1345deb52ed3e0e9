"""Issue 20, item 4 and issue 32: a launch killed mid-run, then launched again under the same task name,
resumes (MockArchitect + MockProvider, in-process through ``runner.start``, as `dialeval launch` does).

The kill is Mephisto's force shutdown without the clean-stop mark a finished ``serve`` leaves, in this
process: what a killed launch leaves behind, save that the worlds could still mark their records partial.
Checked: the resumed run offers only the work left; a returning worker carries on where they stopped, a
half-finished live chat, PW-Turn or SM-Eval conversation included; the page's resent acts are taken once
(a stored copy dropped, another unit's refused); the killed run's partial HITs are never counted as
finished, and no unit is exported twice.
"""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from parlai_dialeval.crowdsourcing.platform import runner
from parlai_dialeval.crowdsourcing.platform.export import collect_from_db, export_task
from parlai_dialeval.crowdsourcing.platform.registry import get_task
from parlai_dialeval.data import from_records
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun, WriteThreads
from .test_acute_mock import pass_acute_onboarding, write_conversations
from .test_pw_turn_mock import ECHO_ONLY, pass_pw_turn_onboarding

pytestmark = pytest.mark.slow


class LaunchedRun(MockRun):
    """MockRun's scripted-worker helpers on a run started by ``runner.start`` (markers, resume)."""

    def __init__(self, task: str, data_dir, port: int, overrides: list[str]):
        self.launched = runner.start(task, ["mephisto/architect=mock", f"mephisto.architect.port={port}",
                                            "mephisto.architect.should_run_server=true", *overrides], data_dir=data_dir)
        self.spec, self.db, self.config = get_task(task), self.launched.db, self.launched.config
        self.operator = self.launched.operator
        self._hold_live_run()

    def kill(self) -> None:
        self.operator.force_shutdown(timeout=5)
        self.server.shutdown_mock()

    def shutdown(self) -> None:
        try:
            self.launched.shutdown()
        finally:
            self.server.shutdown_mock()

    def unit_agent(self, worker: str):
        """The worker's agent in this run (a returning worker has one in the killed run too)."""
        def mine():
            return [a for a in self.db.find_agents(task_run_id=self.launched.task_run_id)
                    if a.get_worker().worker_name == f"{worker}_sandbox"]
        self.wait(lambda: bool(mine()), what=f"unit agent of {worker}")
        return mine()[-1]

    def units(self) -> list:
        return self.db.find_units(task_run_id=self.launched.task_run_id)


def agent_status(run, worker: str) -> list[str]:
    return [a.get_status() for a in run.db.find_agents() if a.get_worker().worker_name == f"{worker}_sandbox"]


def submit_chat(run, agent, export: str | None = None):
    """The worker submits once the world is done; then the export report of task ``export``, if named."""
    run.last_task_data(agent, key="task_done")
    run.submit(agent, {"final_data": {}})
    return collect_from_db(run.db, export)[0] if export else None


def live_chat_step(run, agent, task_data, text="", after=None):
    seen = run.message_count(agent) if after is None else after
    run.act(agent, task_data, text)
    return run.last_task_data(agent, after=seen)


def resent(run, agent, update_id: str, sent_to: str, task_data: dict, text: str = "") -> None:
    """What the page does after a relaunch (frontend/src/components/transport.js): an act it sent before the
    crash, never confirmed, sent again to its new agent, naming the agent it was first sent to."""
    run.server.send_agent_act(agent.get_agent_id(), {"text": text, "task_data": task_data, "id": "worker",
                                                     "episode_done": False, "update_id": update_id,
                                                     "dialeval_sent_to": sent_to})
    run.settle()


def test_live_chat_worker_returns_after_a_kill_and_finishes_the_same_hit_half_chat_included(tmp_path):
    overrides = ["mephisto.task.task_name=lc_resume", "mephisto.blueprint.num_conversations=2",
                 "mephisto.task.maximum_units_per_worker=0", "live_chat.min_inputs=2", "live_chat.seed=2"]
    run = LaunchedRun("live_chat_da", tmp_path, free_port(), overrides)
    try:
        run.register("W1", "REG_1")
        agent = run.unit_agent("W1")
        run.last_task_data(agent)
        for slot in range(2):  # two rated conversations
            live_chat_step(run, agent, {"action": "topic", "topic": "books", "attitude": "like"})
            run.act(agent, {"action": "message"}, f"hello {slot}")
            run.act(agent, {"action": "message"}, f"more {slot}")
            assert live_chat_step(run, agent, {"action": "next"})["phase"] == "rate"
            assert live_chat_step(run, agent, {"action": "rating", "values": [40 + slot] * 7})["slot"] == slot + 1
        live_chat_step(run, agent, {"action": "topic", "topic": "films", "attitude": "dislike"})
        stored = run.message_count(agent)
        resent(run, agent, "u-stored", agent.get_agent_id(), {"action": "message"}, "half a chat")
        run.wait(lambda: run.message_count(agent) > stored + 1, what="the bot's reply")  # stored, then the kill
        old_agent = agent.get_agent_id()
        old_record = run.db.read_dict(f"{agent.get_data_dir()}/dialeval_live_chat.json")
        assert old_record["acts"][-1] == "u-stored"
    finally:
        run.kill()

    run = LaunchedRun("live_chat_da", tmp_path, free_port(), overrides)
    try:
        assert run.launched.resume_note.startswith("Resuming task 'lc_resume': its run 1 was interrupted with 0 of 2")
        assert "1 worker(s) who were mid-HIT get their HIT back" in run.launched.resume_note
        run.register("W1", "REG_1")  # the same page address: the same registration (the unit is bound to it)
        agent = run.unit_agent("W1")
        shown = run.last_task_data(agent)
        assert (shown["phase"], shown["slot"], shown["inputs"]) == ("chat", 2, 1)  # where they were, mid-chat
        messages = run.live_agent(agent).state.get_data()["outputs"]["messages"]
        assert [m["text"] for m in messages if m.get("text")][:2] == ["half a chat", old_record["conversations"][2][
            "turns"][1]["text"] or " "]  # the page shows the half chat again
        # the page resends: a copy of the stored message (dropped), one never confirmed (taken, shown), and one
        # first sent to some other unit (dropped)
        resent(run, agent, "u-stored", old_agent, {"action": "message"}, "half a chat")
        resent(run, agent, "u-lost", old_agent, {"action": "message"}, "sent as the server died")
        resent(run, agent, "u-other", "999", {"action": "message"}, "not for this unit")
        assert live_chat_step(run, agent, {"action": "next"})["phase"] == "rate"
        live_chat_step(run, agent, {"action": "rating", "values": [50] * 7})
        for slot in range(3, 6):
            live_chat_step(run, agent, {"action": "topic", "topic": "music", "attitude": "like"})
            run.act(agent, {"action": "message"}, f"again {slot}")
            run.act(agent, {"action": "message"}, f"and again {slot}")
            live_chat_step(run, agent, {"action": "next"})
            live_chat_step(run, agent, {"action": "rating", "values": [60] * 7})
        assert run.last_task_data(agent)["phase"] == "feedback"
        run.act(agent, {"action": "feedback", "feedback": "fine"})
        report = submit_chat(run, agent, export="lc_resume")
    finally:
        run.shutdown()
    assert agent_status(run, "W1") == ["disconnect", "completed"]
    records = report.records
    convs = [r for r in records if r["type"] == "conversation"]
    # one unit, exported once, with all six conversations in the order planned before the kill
    assert [c["slot"] for c in convs] == list(range(6)) and {c["status"] for c in convs} == {"complete"}
    assert len({c["assignment_id"] for c in convs}) == 1
    assert [c["models"][0] for c in convs] == [c["model"] for c in old_record["conversations"]]
    assert [t["text"] for t in convs[0]["turns"] if t["speaker"] == "human"] == ["hello 0", "more 0"]
    # the half chat: every stored message once, in order, then the one the page resent, then the bot's reply
    third = [t["speaker"] == "human" and t["text"] for t in convs[2]["turns"]]
    assert third == ["half a chat", False, "sent as the server died", False]
    assert any("continued after a restart" in note for note in report.notes)
    ratings = from_records(records).ratings
    assert len(ratings) == 6 * 7 and ratings.groupby("conversation_id").size().eq(7).all()


def test_pw_turn_resume_offers_only_the_units_left_and_carries_on_the_killed_hit(tmp_path):
    overrides = ["mephisto.task.task_name=pw_resume", "mephisto.blueprint.num_conversations=2", "pw_turn.seed=4",
                 "pw_turn.num_turns=2", *ECHO_ONLY, "+pw_turn.models.parrot.opt.model=repeat_label"]

    def chat_turn(run, agent, finish: bool) -> int:
        """A choice, then (unless ``finish``) a message; the agent's message count before the last act."""
        run.last_task_data(agent)
        seen = run.message_count(agent)
        run.act(agent, {"action": "choose", "choice": "left", "justification": "clearer"})
        if not finish:
            assert run.last_task_data(agent, after=seen)["phase"] == "chat"
            seen = run.message_count(agent)
            run.act(agent, {"action": "message"}, "tell me more")
        return seen

    def onboard(run, worker):
        run.register(worker, f"REG_{worker}")
        pass_pw_turn_onboarding(run, worker)
        return run.unit_agent(worker)

    run = LaunchedRun("pw_turn", tmp_path, free_port(), overrides)
    try:
        done = onboard(run, "W1")
        chat_turn(run, done, finish=False)
        chat_turn(run, done, finish=True)
        submit_chat(run, done)
        half = onboard(run, "W2")
        waiting = run.last_task_data(half, after=chat_turn(run, half, finish=False))  # the two replies to choose
        assert waiting["phase"] == "choose"
    finally:
        run.kill()

    run = LaunchedRun("pw_turn", tmp_path, free_port(), overrides)
    try:
        assert "1 of 2 unit(s) finished; 1 unit(s) offered now. 1 worker(s) who were mid-HIT" in run.launched.resume_note
        assert len(run.units()) == 1
        agent = onboard_or_unit(run, "W2")
        shown = run.last_task_data(agent)  # where they were: the same two replies, the same history
        assert {k: shown[k] for k in ("phase", "left", "right", "history", "turn")} == {
            k: waiting[k] for k in ("phase", "left", "right", "history", "turn")}
        chat_turn(run, agent, finish=True)
        report = submit_chat(run, agent, export="pw_resume")
    finally:
        run.shutdown()
    assert agent_status(run, "W2") == ["disconnect", "completed"]  # the killed HIT: partial, not submitted
    data = from_records(report.records)
    statuses = sorted(zip(data.conversations["worker_id"], data.conversations["status"]))
    assert statuses == [("W1_sandbox", "complete"), ("W2_sandbox", "complete")]  # the carried-on unit once
    assert data.conversations["id"].is_unique
    w2 = [r for r in report.records if r["type"] == "conversation" and r["worker_id"] == "W2_sandbox"][0]
    assert [t["text"] for t in w2["turns"] if t["speaker"] == "human"][1:] == ["tell me more"]
    assert len([t for t in w2["turns"] if t["speaker"] != "human"]) == 2
    assert any("continued after a restart" in note for note in report.notes)


def test_acute_resume_offers_the_unfinished_units_once(tmp_path):
    convs = tmp_path / "convs.jsonl"
    write_conversations(convs)
    overrides = [f"acute.conversations=[{convs}]", "acute.seed=5", "acute.matchups_per_pair=6",
                 "acute.subtasks_per_unit=2", "mephisto.task.task_name=acute_resume"]

    def onboard(run, worker):
        run.register(worker, f"REG_{worker}")
        pass_acute_onboarding(run, worker)
        return run.unit_agent(worker)

    def submit(run, agent):
        shown = run.unit_inputs(agent)["shown"]
        run.submit(agent, {"answers": [
            {"pair_id": p["pair_id"], "choice": "left", "justification": "x"} for p in shown]})
        run.wait(lambda: run.live_agent(agent).state.get_data()["outputs"] is not None, what="submission")
        return shown

    run = LaunchedRun("acute", tmp_path, free_port(), overrides)
    # a run started as `dialeval launch` starts it writes on the server's loop too: without it a loaded
    # adaptive run got one registration twice and waited on an onboarding that was never served
    watched = [WriteThreads(run.server)]
    try:
        planned = [u.get_assignment_data().shared["shown"] for u in run.units()]
        assert len(planned) == 3
        first = submit(run, onboard(run, "W1"))
        half = onboard(run, "W2")  # opens a unit and never submits it
        held = run.unit_inputs(half)["shown"]
    finally:
        run.kill()

    run = LaunchedRun("acute", tmp_path, free_port(), overrides)
    watched.append(WriteThreads(run.server))
    try:
        assert "1 of 3 unit(s) finished; 2 unit(s) offered now" in run.launched.resume_note
        offered = [u.get_assignment_data().shared["shown"] for u in run.units()]
        assert sorted(map(str, offered)) == sorted(str(p) for p in planned if p != first)
        assert held in offered
        again = submit(run, onboard_or_unit(run, "W2"))
        out = tmp_path / "out" / "acute.jsonl"
        report = export_task("acute_resume", out, data_dir=tmp_path)
    finally:
        run.shutdown()
    # the summary counts what the file holds (it once counted 14 comparisons for a file of 4)
    wrote = report.summary().splitlines()[0].split("; wrote ")[1].split(" (")[0]
    in_file = Counter(json.loads(line)["type"] for line in out.read_text().splitlines())
    assert {kind: int(n) for n, kind in re.findall(r"(\d+) (\w+)", wrote)} == in_file
    assert again != first
    data = from_records(report.records)
    comps = data.comparisons[~data.comparisons["onboarding"].eq(True)]
    assert sorted(comps["worker_id"]) == ["W1_sandbox"] * 2 + ["W2_sandbox"] * 2  # each finished unit once
    assert agent_status(run, "W2") == ["disconnect", "completed"]
    assert all(w.writes for w in watched) and sum(w.off_the_loop() for w in watched) == 0


def onboard_or_unit(run, worker, registration=None):
    """A returning worker passed onboarding already: registering (from the same page address: the same
    registration, to which their unit is bound) gives them a unit straight away."""
    run.register(worker, registration or f"REG_{worker}")
    return run.unit_agent(worker)


def test_sm_eval_resume_carries_on_the_conversation_where_it_stopped(tmp_path):
    overrides = ["mephisto.task.task_name=sm_resume", "mephisto.blueprint.num_conversations=1", "sm_eval.num_turns=3",
                 "sm_eval.seed=1", "~sm_eval.models.retrieval"]

    def annotate_then(run, agent, marks, text=None):
        seen = run.message_count(agent)
        run.act(agent, {"checked": marks})
        shown = run.last_task_data(agent, after=seen)
        if text is not None:
            assert shown["phase"] == "chat"
            seen = run.message_count(agent)
            run.act(agent, {"action": "message"}, text=text)
            shown = run.last_task_data(agent, after=seen)
        return shown

    run = LaunchedRun("sm_eval", tmp_path, free_port(), overrides)
    try:
        run.register("W1", "REG_1")
        agent = run.unit_agent("W1")
        assert run.last_task_data(agent)["phase"] == "annotate"
        annotate_then(run, agent, ["engaging"], text="first message")
        before = annotate_then(run, agent, ["none"])
        assert before["phase"] == "chat"
    finally:
        run.kill()

    run = LaunchedRun("sm_eval", tmp_path, free_port(), overrides)
    try:
        assert "1 worker(s) who were mid-HIT get their HIT back" in run.launched.resume_note
        agent = onboard_or_unit(run, "W1", "REG_1")
        shown = run.last_task_data(agent)
        assert shown["phase"] == "chat" and shown["history"] == before["history"]  # where they stopped
        seen = run.message_count(agent)
        run.act(agent, {"action": "message"}, text="second message")
        shown = run.last_task_data(agent, after=seen)
        # a fresh bot answers (repeat_query echoes the last line of the conversation it is given whole;
        # test_sm_eval.py checks what it is given)
        assert shown["phase"] == "annotate" and shown["history"][-1]["text"] == "second message"
        shown = annotate_then(run, agent, ["interesting"])
        assert shown["phase"] == "rate"
        run.act(agent, {"ratings": {"engaging": 2, "humanlike": 3, "interesting": 4}})
        report = submit_chat(run, agent, export="sm_resume")
    finally:
        run.shutdown()
    data = from_records(report.records)
    assert len(data.conversations) == 1  # the unit carried on, exported once
    conv = data.conversations.iloc[0]
    assert [t["text"] for t in conv["turns"] if t["speaker"] == "human"] == ["Hi!", "first message", "second message"]
    binary = data.ratings[data.ratings["scale"] == "binary"]
    assert sorted(binary["turn_index"].unique()) == [1, 3, 5]  # the annotations before the kill kept
    assert any("continued after a restart" in note for note in report.notes)
