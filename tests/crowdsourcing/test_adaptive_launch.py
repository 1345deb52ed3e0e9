"""Issue 16 item 2: `dialeval launch acute adaptive=true` (ab_next_utterance, pw_turn) with simulated workers.

Runs in-process through ``runner.start`` (MockArchitect + MockProvider), as `dialeval launch` does. The
simulated workers always pick the better model (each conversation says its model's level), so every
pair's betting e-process grows as fast as it can: the ranking certifies after a few batches, spending
judgments on the adjacent pairs only; the uniform design of the same run (simulated, its answers being
known in advance) has to settle all six pairs.
"""
from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from parlai_dialeval.adaptive.allocation import Uniform
from parlai_dialeval.adaptive.simulate import run_study
from parlai_dialeval.crowdsourcing.platform.adaptive import controller as adaptive_controller
from parlai_dialeval.crowdsourcing.platform.export import collect_from_db
from parlai_dialeval.data import from_records, write_jsonl
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing.ports import free_port

from .test_acute_mock import pass_acute_onboarding
from .test_pw_turn_mock import ECHO_ONLY, pass_pw_turn_onboarding
from .test_resume import LaunchedRun, submit_chat

pytestmark = pytest.mark.slow
LEVELS = {"bot_best": 3, "bot_good": 2, "bot_fair": 1, "bot_poor": 0}


@pytest.fixture(autouse=True)
def quick_batches(monkeypatch):
    """Mephisto's unit thread looks for new units every 10 s, the controller every 2 s: minutes per test."""
    import mephisto.operations.task_launcher as task_launcher

    monkeypatch.setattr(task_launcher, "UNIT_GENERATOR_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(task_launcher, "ASSIGNMENT_GENERATOR_WAIT_SECONDS", 0.05)
    monkeypatch.setattr(adaptive_controller, "POLL_SECONDS", 0.1)


def write_conversations(path, per_model: int = 5) -> None:
    rows = [{"type": "conversation", "id": f"{model}_{i}", "models": [model], "task": "self_chat",
             "turns": [{"speaker": model, "text": f"Hello {i}"}, {"speaker": model, "text": f"I am level {level}."}]}
            for model, level in LEVELS.items() for i in range(per_model)]
    write_jsonl(rows, path)


def level(side: list[dict]) -> int:
    return int(re.search(r"level (\d)", side[1]["text"])[1])


def acute_overrides(tmp_path, name: str, port: int, *extra: str) -> list[str]:
    convs = tmp_path / "convs.jsonl"
    # the ledger bets once per item: 4 models at alpha 0.05 need 33 distinct conversation pairs per
    # adjacent pair even when the better model always wins, so 7 x 7 possible pairs, 40 in the design
    write_conversations(convs, per_model=7)
    return [f"acute.conversations=[{convs}]", "acute.seed=3", "acute.matchups_per_pair=40",
            "acute.subtasks_per_unit=10", f"mephisto.task.task_name={name}", "adaptive=true",
            "adaptive_batch_size=2", "adaptive_budget=40", "adaptive_seed=1", *extra]


class Workers:
    """Simulated ACUTE workers, a new one for every HIT: passes onboarding, then answers one HIT."""

    def __init__(self, run, prefix: str = "W"):
        self.run, self.prefix, self.count = run, prefix, 0

    def do_hit(self) -> None:
        run = self.run
        run.wait(lambda: hit_waiting(run), timeout=90, what="a launched HIT")
        self.count += 1
        worker = f"{self.prefix}{self.count}"
        run.register(worker, f"REG_{worker}")
        pass_acute_onboarding(run, worker)
        agent = live_unit_agent(run, worker)
        shown = run.unit_inputs(agent)["shown"]
        answers = [{"pair_id": p["pair_id"], "choice": "left" if level(p["left"]) > level(p["right"]) else "right",
                    "justification": "higher level"} for p in shown]
        run.submit(agent, {"answers": answers})
        run.wait(lambda: run.live_agent(agent).get_status() == "completed", what="the HIT submitted")


def live_unit_agent(run, worker: str):
    """The worker's unit agent once the operator holds it: a copy read from the database may find its
    state file half-written (Mephisto rewrites it in place)."""
    agent = run.unit_agent(worker)
    run.wait(lambda: run.live_run.worker_pool.get_agent_for_id(agent.get_agent_id()) is not None,
             what=f"the live agent of {worker}")
    return agent


def hit_waiting(run) -> bool:
    return bool(run.db.find_units(task_run_id=run.launched.task_run_id, status="launched"))


def finished(run) -> bool:
    return not run.operator.get_running_task_runs()


def collect_until_done(run, workers: Workers, limit: int = 60) -> None:
    for _ in range(limit):
        if finished(run):
            return
        run.wait(lambda: finished(run) or hit_waiting(run), timeout=90, what="a HIT or the end")
        if not finished(run):
            workers.do_hit()
    raise AssertionError(f"the adaptive run did not stop within {limit} HITs")


def read_state(path) -> dict:
    return json.loads(path.read_text())


def test_acute_adaptive_stops_certified_with_fewer_hits_than_uniform(tmp_path):
    state_path = tmp_path / "mephisto" / "adaptive" / "study.json"
    run = LaunchedRun("acute", tmp_path / "mephisto", free_port(), acute_overrides(tmp_path, "study", free_port()))
    try:
        collect_until_done(run, Workers(run))
    finally:
        run.shutdown()
    state = read_state(state_path)
    assert state["status"] == "certified", state["status"]
    assert state["ranking"] == list(LEVELS)  # best first
    assert [b["batch"] for b in state["batches"]] == list(range(1, len(state["batches"]) + 1))
    assert all(b["read"] for b in state["batches"])
    report, _ = collect_from_db(run.db, "study")
    comps = from_records(report.records).comparisons
    comps = comps[~comps["onboarding"].eq(True)]
    # the votes a batch holds on one item are one outcome (the cluster rule, issue 25)
    assert len(comps) == 10 * state["hits_emitted"] and 0 < state["judgments"] <= len(comps)
    # from batch 2 on, once a ranking comes from data (batch 1 follows a ranking of no votes, a large share
    # of a study that certifies in a few batches), the greedy rule asks the true neighbours
    pairs = Counter(frozenset(p) for b in state["batches"][1:] for p in b["pairs"])
    adjacent = sum(pairs[frozenset(p)] for p in zip(list(LEVELS), list(LEVELS)[1:]))
    assert adjacent > 0.8 * sum(pairs.values())  # the 10% exploration goes anywhere
    assert sum(state["batches"][-1]["selection_probability"].values()) == pytest.approx(1.0)
    # the uniform design of the same run: the same workers (the better model always wins), batches of
    # 2 HITs x 10 judgments, the same stopping rule; simulated, as its answers are known in advance
    uniform = run_study(Uniform(), np.array([0.0, -60.0, -120.0, -180.0]), np.random.default_rng(0), batch=20,
                        burn_in=0, cap=4000)
    assert uniform.stopped and uniform.wrong_claims == 0
    print(f"HITs to a certified ranking: adaptive {state['hits_emitted']}, uniform {uniform.judgments // 10}")
    assert state["hits_emitted"] < uniform.judgments / 10


def test_killed_after_two_batches_resumes_without_repeating_a_batch(tmp_path):
    data_dir, state_path = tmp_path / "mephisto", tmp_path / "mephisto" / "adaptive" / "killed.json"
    overrides = acute_overrides(tmp_path, "killed", free_port())
    run = LaunchedRun("acute", data_dir, free_port(), overrides)
    workers = Workers(run)
    try:
        for _ in range(4):  # two batches of two HITs
            workers.do_hit()
        run.wait(lambda: state_path.is_file() and len(read_state(state_path)["batches"]) == 3, what="batch 3")
        workers.do_hit()  # one HIT of batch 3 done, the other left open
    finally:
        run.kill()
    before = read_state(state_path)
    assert [b["read"] for b in before["batches"]] == [True, True, False] and before["hits_emitted"] == 6

    run = LaunchedRun("acute", data_dir, free_port(), overrides)
    assert run.launched.resume_note and "1 unit(s) offered now" in run.launched.resume_note
    try:
        collect_until_done(run, Workers(run, prefix="R"))
    finally:
        run.shutdown()
    state = read_state(state_path)
    assert state["status"] == "certified" and state["ranking"] == list(LEVELS)
    assert [b["batch"] for b in state["batches"]] == list(range(1, len(state["batches"]) + 1))
    # batch 3 was awaited and read, not chosen again
    assert [b["pairs"] for b in state["batches"][:3]] == [b["pairs"] for b in before["batches"]]
    assert len(set(state["ingested_agents"])) == len(state["ingested_agents"])
    # every batch's HITs were done once: finished HITs per batch = HITs the state says it emitted
    done = Counter(u.server[adaptive_controller.BATCH_KEY] for u in _finished_units(run))
    assert done == {b["batch"]: b["hits"] for b in state["batches"]}
    report, _ = collect_from_db(run.db, "killed")
    comps = from_records(report.records).comparisons
    comps = comps[~comps["onboarding"].eq(True)]
    assert not comps.duplicated(["worker_id", "assignment_id", "item_id"]).any()
    assert len(comps) == 10 * sum(done.values()) and 0 < state["judgments"] <= len(comps)


def _finished_units(run) -> list:
    from parlai_dialeval.crowdsourcing.platform.export import read_units

    return [u for u in read_units(run.db, run.launched.task_name) if u.status == "complete"]


def run_ab_adaptive(tmp_path, port: int, task_name: str) -> None:
    """An adaptive A/B study in ``tmp_path/mephisto`` (batches of one HIT, a budget of two) whose two workers
    always pick the reply of the higher level; returns once the run has ended."""
    items = tmp_path / "items.jsonl"
    rows = [{"item_id": f"p{i}_{a}_{b}", "context": [f"prompt {i}"], "model_a": a, "model_b": b,
             "response_a": f"reply of level {LEVELS[a]}", "response_b": f"reply of level {LEVELS[b]}"}
            for i in range(4) for a, b in [("bot_best", "bot_good"), ("bot_good", "bot_fair"),
                                           ("bot_best", "bot_fair")]]
    write_jsonl(rows, items)
    run = LaunchedRun("ab_next_utterance", tmp_path / "mephisto", port, [
        f"ab.items_file={items}", "ab.per_hit=4", "ab.seed=2", "mephisto.blueprint.units_per_assignment=1",
        f"mephisto.task.task_name={task_name}", "adaptive=true", "adaptive_batch_size=1", "adaptive_budget=2"])
    try:
        for _ in range(2):
            run.wait(lambda: hit_waiting(run), timeout=90, what="a launched HIT")
            answer_ab_hit(run, f"A{_}")
        run.wait(lambda: finished(run), timeout=30, what="the run to end at the budget")
    finally:
        run.shutdown()


def answer_ab_hit(run, worker: str) -> None:
    """A new worker does the launched A/B HIT, picking the reply of the higher level every time."""
    run.register(worker, f"REG_{worker}")
    agent = live_unit_agent(run, worker)
    shown = run.unit_inputs(agent)["shown"]
    answers = {p["item_id"]: {"choice": "a" if level_of(p["response_a"]) > level_of(p["response_b"]) else "b"}
               for p in shown}
    run.submit(agent, {"answers": answers})


def test_ab_next_utterance_adaptive_runs_batches_and_writes_state(tmp_path):
    run_ab_adaptive(tmp_path, free_port(), "ab_study")
    state = read_state(tmp_path / "mephisto" / "adaptive" / "ab_study.json")
    assert [b["batch"] for b in state["batches"]] == [1, 2] and state["status"] == "budget_spent"
    assert state["judgments"] == 8 and state["models"] == ["bot_best", "bot_fair", "bot_good"]


def test_pw_turn_adaptive_chooses_each_conversations_models_and_writes_state(tmp_path):
    run = LaunchedRun("pw_turn", tmp_path / "mephisto", free_port(), [
        "mephisto.task.task_name=pw_adaptive", "pw_turn.seed=4", "pw_turn.num_turns=1", *ECHO_ONLY,
        "+pw_turn.models.parrot.opt.model=repeat_label", "+pw_turn.models.mirror.opt.model=repeat_query",
        "adaptive=true", "adaptive_batch_size=1", "adaptive_budget=2", "adaptive_seed=5"])
    try:
        for number in range(2):  # one HIT per worker (the task's maximum_units_per_worker)
            worker = f"P{number}"
            run.wait(lambda: hit_waiting(run), timeout=90, what="a launched HIT")
            run.register(worker, f"REG_{worker}")
            pass_pw_turn_onboarding(run, worker)
            agent = live_unit_agent(run, worker)
            run.last_task_data(agent)
            run.act(agent, {"action": "choose", "choice": "left", "justification": "clearer"})
            submit_chat(run, agent)
        run.wait(lambda: finished(run), timeout=30, what="the run to end at the budget")
    finally:
        run.shutdown()
    state = read_state(tmp_path / "mephisto" / "adaptive" / "pw_adaptive.json")
    assert [b["batch"] for b in state["batches"]] == [1, 2] and state["status"] == "budget_spent"
    assert state["judgments"] == 2  # one outcome per conversation
    report, _ = collect_from_db(run.db, "pw_adaptive")
    convs = [r for r in report.records if r["type"] == "conversation"]
    # each conversation was held with the pair its batch chose
    assert [sorted(c["models"]) for c in convs] == [sorted(b["pairs"][0]) for b in state["batches"]]


def level_of(text: str) -> int:
    return int(re.search(r"level (\d)", text)[1])


@pytest.mark.parametrize("task, overrides, expected", [
    ("acute", ["adaptive_budget=1", "adaptive_batch_size=2"], "adaptive_budget=1 is smaller than one batch"),
    ("acute", ["acute.model_pairs=[[bot_best,bot_best]]"], "needs at least two models"),
    ("sm_eval", [], "task sm_eval is not a pairwise task"),
])
def test_bad_adaptive_settings_are_one_line(tmp_path, task, overrides, expected):
    base = acute_overrides(tmp_path, "bad", free_port())[:-3] if task == "acute" else ["adaptive=true"]
    from parlai_dialeval.crowdsourcing.platform import runner

    with pytest.raises(DialevalError, match=re.escape(expected)):
        runner.start(task, ["mephisto/architect=mock", *base, *overrides], data_dir=tmp_path / "mephisto")
