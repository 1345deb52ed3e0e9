"""Live-chat DA world logic in-process: MockArchitect + MockProvider, no node, npm or browser.

A mock worker drives whole HITs through Mephisto's mock server; we then export Mephisto's database
to the canonical model and check what the protocol of Ji et al. (2022, Sec. 3) requires.
"""
from __future__ import annotations

import json

import pytest

import parlai_dialeval  # noqa: F401  (Python 3.11 fix before mephisto)
from parlai_dialeval.crowdsourcing.live_chat_da.criteria import CRITERION_NAMES
from parlai_dialeval.crowdsourcing.live_chat_da.worlds import RECORD_FILE
from parlai_dialeval.crowdsourcing.platform import export, runner
from parlai_dialeval.data import read_jsonl
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import writes_on_the_server_loop

pytestmark = pytest.mark.timeout(240)

ECHO = {"opt": {"model": "repeat_query"}}
CRASH = {"opt": {"model": "parlai_dialeval.crowdsourcing.platform.diagnostic_bots:CrashingAgent", "crash_after": 1}}


def launch(tmp_path, port, models, qc=("qc",), num_slots=4, min_inputs=2, seed=0, task_name="lcda_test", **extra):
    return runner.start("live_chat_da", [
        "mephisto/architect=mock", "mephisto.architect.should_run_server=true", f"mephisto.architect.port={port}",
        f"mephisto.task.task_name={task_name}", "mephisto.blueprint.num_conversations=6",
        "mephisto.task.maximum_units_per_worker=0",
    ], data_dir=tmp_path / "mephisto", update={
        "live_chat.models": models, "live_chat.qc_models": list(qc), "live_chat.num_slots": num_slots,
        "live_chat.min_inputs": min_inputs, "live_chat.seed": seed, **{f"live_chat.{k}": v for k, v in extra.items()}})


class MockWorker:
    def __init__(self, run, name):
        live = list(run.operator.get_running_task_runs().values())[0]
        self.run, self.server, self.db = run, live.architect.server, run.db
        writes_on_the_server_loop(self.server)
        before = {a.db_id for a in self.db.find_agents()}
        self.server.register_mock_agent(name, f"assignment-{name}")
        agent_id = self._wait(lambda: [a for a in self.db.find_agents() if a.db_id not in before])[0].db_id
        # the live Agent object (a fresh one from the database holds a stale copy of its state)
        self.agent = self._wait(lambda: live.worker_pool.get_agent_for_id(agent_id))
        self._wait(self.record)
        self.agent_id = self.agent.db_id

    def _wait(self, condition, timeout=30):
        # Mephisto's event loop only runs while the operator pumps it, so wait through the operator.
        box = []

        def check():
            value = condition()
            if value:
                box.append(value)
            return bool(value)

        assert self.run.operator._run_loop_until(check, timeout), "timed out waiting for the world"
        return box[-1]

    def record(self):
        path = f"{self.agent.get_data_dir()}/{RECORD_FILE}"
        return self.db.read_dict(path) if self.db.key_exists(path) else None

    def send(self, task_data, text=""):
        act = {"text": text, "task_data": task_data, "id": self.agent_id, "episode_done": False}
        self.server.send_agent_act(self.agent_id, act)

    def phase_messages(self):
        return [m for m in self.agent.state.get_data()["outputs"]["messages"]
                if (m.get("task_data") or {}).get("phase")]

    def wait_phase(self, phase, slot=None):
        def seen():
            msgs = self.phase_messages()
            last = msgs[-1]["task_data"] if msgs else {}
            return last.get("phase") == phase and (slot is None or last.get("slot") == slot) and last
        return self._wait(seen)

    def chat(self, slot, n, topic="books"):
        self.wait_phase("topic", slot)
        self.send({"action": "topic", "topic": topic, "attitude": "like"})
        self.wait_phase("chat", slot)
        for i in range(n):
            self.send({"action": "message"}, f"message {i} in slot {slot}")
        self._wait(lambda: sum(t["speaker"] == "human" for t in self.record()["conversations"][slot]["turns"]) == n)

    def rate(self, slot, values):
        self.send({"action": "next"})
        self.wait_phase("rate", slot)
        self.send({"action": "rating", "values": values})


def export_records(run, tmp_path, task_name="lcda_test"):
    out = tmp_path / "export.jsonl"
    report = export.export_task(task_name, out, data_dir=run.data_dir)
    return report, read_jsonl([out]), [json.loads(line) for line in out.read_text().splitlines()]


def test_full_hit_qc_placement_minimum_inputs_and_export(tmp_path):
    models = {"qc": ECHO, "a": ECHO, "b": ECHO, "c": ECHO}
    run = launch(tmp_path, free_port(), models)
    try:
        worker = MockWorker(run, "W1")
        plan = [c["model"] for c in worker._wait(worker.record)["conversations"]]
        # QC exactly once, never first or last; the genuine models each once, in a shuffled order.
        assert plan.count("qc") == 1 and plan[0] != "qc" and plan[-1] != "qc"
        assert sorted(m for m in plan if m != "qc") == ["a", "b", "c"]
        for slot in range(4):
            worker.chat(slot, 1 if slot == 0 else 2)
            if slot == 0:
                # one input < min_inputs=2: "next" is refused with a warning, the world stays in chat
                worker.send({"action": "next"})
                warned = worker._wait(lambda: [m for m in worker.phase_messages() if m["task_data"].get("warning")])
                assert "at least 2 inputs" in warned[-1]["task_data"]["warning"]
                assert worker.phase_messages()[-1]["task_data"]["phase"] == "chat"
                worker.send({"action": "topic_change", "topic": "films"})
                worker.send({"action": "message"}, "second input")
                worker._wait(lambda: len(worker.record()["conversations"][0]["turns"]) == 4)
            worker.rate(slot, [10 * slot + k for k in range(7)])
        worker.wait_phase("feedback")
        worker.send({"action": "feedback", "feedback": "all good <b>"})
        worker._wait(lambda: worker.record()["finished"])
        worker.server.submit_mock_unit(worker.agent_id, {"final_data": {}})
        worker._wait(lambda: worker.agent.get_status() == "completed")

        report, data, lines = export_records(run, tmp_path)
    finally:
        run.shutdown()
    study = data.studies[0]
    assert study["name"] == "lcda_test" and study["qc_models"] == ["qc"]
    assert sorted(c["name"] for c in study["criteria"]) == sorted(CRITERION_NAMES)
    assert {c["name"] for c in study["criteria"] if not c["positive"]} == {"robotic", "repetitive"}
    convs = data.conversations.sort_values("slot")
    assert list(convs["models"].map(lambda m: m[0])) == plan
    assert set(convs["status"]) == {"complete"} and set(convs["worker_id"]) == {"W1_sandbox"}  # the mock provider names sandbox workers so
    assert (convs["duration"] > 0).all() and (convs["assignment_duration"] >= convs["duration"]).all()
    first = [c for c in lines if c["type"] == "conversation" and c["slot"] == 0][0]
    assert first["topic"] == "books" and first["topic_attitude"] == "like" and first["feedback"] == "all good <b>"
    assert [t["speaker"] for t in first["turns"]] == ["human", plan[0], "human", plan[0]]
    assert first["turns"][0]["text"] == "message 0 in slot 0" and first["turns"][1]["text"] == "message 0 in slot 0"
    assert first["meta"]["topic_changes"][0]["topic"] == "films" and first["meta"]["topic_changes"][0]["after_turn"] == 2
    ratings = data.ratings
    assert len(ratings) == 4 * 7 and set(ratings["scale"]) == {"continuous"}
    slot2 = convs.iloc[2]["id"]
    got = ratings[ratings["conversation_id"] == slot2].set_index("criterion")["value"].to_dict()
    assert got == {name: float(20 + k) for k, name in enumerate(CRITERION_NAMES)}
    assert report.notes == []


def test_bot_failure_and_disconnect_keep_partial_data(tmp_path):
    models = {"qc": ECHO, "crash": CRASH, "ok": ECHO}
    run = launch(tmp_path, free_port(), models, num_slots=3, min_inputs=1, seed=0)  # seed 0: crash, qc, ok
    try:
        worker = MockWorker(run, "W2")
        plan = [c["model"] for c in worker._wait(worker.record)["conversations"]]
        assert plan == ["crash", "qc", "ok"]
        worker.chat(0, 1)
        worker.send({"action": "message"}, "this one crashes the bot")
        failed = worker.wait_phase("failed", 0)
        assert "stopped working" in failed["failure_text"]
        worker.send({"action": "next"})
        worker.chat(1, 1)
        worker.rate(1, [50] * 7)
        worker.chat(2, 1)  # ...and the worker leaves in the middle of the last conversation
        worker.server.disconnect_mock_agent(worker.agent_id)
        worker._wait(lambda: worker.record()["conversations"][2]["status"] == "incomplete")
        report, data, lines = export_records(run, tmp_path)
    finally:
        run.shutdown()
    convs = {c["slot"]: c for c in lines if c["type"] == "conversation"}
    assert [convs[s]["status"] for s in range(3)] == ["failed", "complete", "incomplete"]
    assert "simulated model failure" in convs[0]["meta"]["error"]
    # the failed conversation keeps every turn up to the crash, ending with the unanswered input
    assert [t["speaker"] for t in convs[0]["turns"]] == ["human", "crash", "human"]
    assert convs[0]["turns"][-1]["text"] == "this one crashes the bot"
    # the partial conversation is kept with its turns and the reason it stopped
    assert [t["speaker"] for t in convs[2]["turns"]] == ["human", "ok"]
    assert convs[2]["meta"]["agent_status"] in ("disconnect", "in task")
    assert "feedback" not in convs[2]
    # ratings only for the rated conversation
    assert set(data.ratings["conversation_id"]) == {convs[1]["id"]}


def test_qc_workers_flags_the_worker_who_rates_the_qc_bot_highest_and_soft_blocks(tmp_path):
    from scipy.stats import mannwhitneyu

    from parlai_dialeval.crowdsourcing.platform.quality import check_workers, soft_block

    run = launch(tmp_path, free_port(), {"qc": ECHO, "a": ECHO, "b": ECHO, "c": ECHO}, min_inputs=1, seed=3)
    given = {}
    try:
        for name, good in (("GOOD", True), ("BAD", False)):
            worker = MockWorker(run, name)
            plan = [c["model"] for c in worker.record()["conversations"]]
            for slot, model in enumerate(plan):
                worker.chat(slot, 1)
                # GOOD: genuine bots 70-94, QC bot 5-11; BAD: the reverse
                high = [70 + 4 * k + slot for k in range(7)]
                low = [5 + k for k in range(7)]
                values = (low if model == "qc" else high) if good else (high if model == "qc" else low)
                given[(name, model)] = values
                worker.rate(slot, values)
            worker.wait_phase("feedback")
            worker.send({"action": "feedback", "feedback": ""})
            worker._wait(lambda: worker.record()["finished"])
            worker.server.submit_mock_unit(worker.agent_id, {"final_data": {}})
            worker._wait(lambda: worker.agent.get_status() == "completed")
        table, db = check_workers("lcda_test", run.data_dir)
        granted = soft_block(db, table.loc[~table["passed"], "worker_id"].tolist())
    finally:
        run.shutdown()
    result = table.set_index("worker_id")
    assert bool(result.loc["GOOD_sandbox", "passed"]) and not bool(result.loc["BAD_sandbox", "passed"])
    # independent check: per-worker z scores keep each worker's ranks, so a one-sided Mann-Whitney U on
    # the raw positive-statement values (robotic and repetitive are statements 0 and 5) decides the same
    positive = [1, 2, 3, 4, 6]
    for name in ("GOOD", "BAD"):
        qc = [given[(name, "qc")][k] for k in positive]
        genuine = [given[(name, m)][k] for m in "abc" for k in positive]
        p = mannwhitneyu(qc, genuine, alternative="less").pvalue
        assert (p < 0.05) == bool(result.loc[f"{name}_sandbox", "passed"])
    assert granted == ["BAD_sandbox"]
    worker = db.find_workers(worker_name="BAD_sandbox")[0]
    assert worker.get_granted_qualification("dialeval_qc_failed") is not None
    assert db.find_workers(worker_name="GOOD_sandbox")[0].get_granted_qualification("dialeval_qc_failed") is None


def test_ice_breaker_mode_prescribes_a_persona_statement_as_the_topic(tmp_path):
    personas = {"a": ["I have two dogs."], "b": ["I grew up in Dublin."], "c": ["I play the violin."]}
    models = {"qc": {**ECHO, "persona": ["I am a robot."]}, **{m: {**ECHO, "persona": p} for m, p in personas.items()}}
    run = launch(tmp_path, free_port(), models, num_slots=3, min_inputs=1, ice_breaker=True)
    try:
        worker = MockWorker(run, "W3")
        model = worker.record()["conversations"][0]["model"]
        shown = worker.wait_phase("topic", 0)
        assert shown["ice_breaker"] is True and shown["persona"] == models[model]["persona"][0]
        worker.send({"action": "topic", "topic": "something else", "attitude": "ambivalent"})
        worker.wait_phase("chat", 0)
        conv = worker.record()["conversations"][0]
    finally:
        run.shutdown()
    # the prescribed statement is the topic, whatever the page sent
    assert conv["topic"] == models[model]["persona"][0] and conv["persona"] == conv["topic"]
    assert conv["topic_attitude"] == "ambivalent"


def test_a_worker_who_disconnects_is_counted_as_not_finishing_not_as_failing(tmp_path):
    """Issue 40 item 1 end to end: W1 finishes and submits, W2 rates one chat and disconnects. The report,
    workers.csv and the dashboard count W2 as not having submitted; before, the report said "2 workers
    submitted 2 assignments ... 1 workers (50.0%) passed" and workers.csv had W2 failing."""
    import pandas as pd

    from parlai_dialeval.crowdsourcing.live_chat_da.quality import worker_checks
    from parlai_dialeval.dashboard import summary
    from parlai_dialeval.scripts.analyze_live_chat import run_analysis

    port = free_port()
    run = launch(tmp_path, port, {"qc": ECHO, "a": ECHO, "b": ECHO, "c": ECHO}, min_inputs=1)
    try:
        finisher, leaver = MockWorker(run, "W1"), MockWorker(run, "W2")
        plan = [c["model"] for c in finisher.record()["conversations"]]
        for slot, model in enumerate(plan):
            finisher.chat(slot, 1)
            finisher.rate(slot, [5] * 7 if model == "qc" else [80] * 7)
        finisher.wait_phase("feedback")
        finisher.send({"action": "feedback", "feedback": "fine"})
        finisher._wait(lambda: finisher.record()["finished"])
        finisher.server.submit_mock_unit(finisher.agent_id, {"final_data": {}})
        finisher._wait(lambda: finisher.agent.get_status() == "completed")
        leaver.chat(0, 1)
        leaver.rate(0, [60] * 7)
        leaver.wait_phase("topic", 1)
        leaver.server.disconnect_mock_agent(leaver.agent_id)
        leaver._wait(lambda: leaver.agent.get_status() == "disconnect")
        report, data, lines = export_records(run, tmp_path)
    finally:
        run.shutdown()
    assert {c["worker_id"]: c["submission"] for c in lines if c["type"] == "conversation"} == {
        "W1_sandbox": "submitted", "W2_sandbox": "disconnected"}
    out = tmp_path / "report"
    got = run_analysis({"data": [str(tmp_path / "export.jsonl")], "out": str(out)}, log=lambda *_: None)
    assert (got["n_workers"], got["n_workers_passed"], got["n_assignments"]) == (1, 1, 1)
    assert got["assignments_not_submitted"] == {"disconnected": 1} and got["n_workers_not_submitted"] == 1
    workers = pd.read_csv(out / "workers.csv", keep_default_na=False).set_index("worker_id")["outcome"].to_dict()
    assert workers == {"W1_sandbox": "passed quality control", "W2_sandbox": "did not submit: disconnected"}
    assert "1 worker submitted 1 assignment (HITs)" in (out / "report.html").read_text()
    rows = {r["worker"]: r for r in summary.quality(worker_checks(lines), lines)}
    assert (rows["W1_sandbox"]["state"], rows["W1_sandbox"]["check"]) == ("done", "pass")
    assert (rows["W2_sandbox"]["state"], rows["W2_sandbox"]["check"]) == ("did not finish: disconnected",
                                                                         "did not submit")
    # slot 1 showed its topic choice, no chat began: it and the two after it are not started, not incomplete
    assert rows["W2_sandbox"]["work"] == {"complete": 1, "not started": 3}
