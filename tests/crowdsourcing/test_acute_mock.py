"""ACUTE-Eval through Mephisto (MockArchitect + MockProvider, in-process): onboarding with known answers
(fail -> soft block; pass -> units), random sides, no model name in what the worker's browser receives,
and the export (task told from the run) with the compared conversations and the onboarding attempts."""
from __future__ import annotations

import contextlib
import threading

import pytest

from parlai_dialeval.data import from_records, write_jsonl
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun, WriteThreads, assert_blind

pytestmark = pytest.mark.slow
STUDY = "acute_study_1"  # not a task folder name: export must read the task type from the run
MODELS = ("good_bot", "bad_bot", "onboarding_good", "onboarding_bad")


def write_conversations(path):
    rows = []
    for model in ("good_bot", "bad_bot"):
        for i in range(3):
            text = "I love talking about books, what are you reading?" if model == "good_bot" else "no."
            rows.append({"type": "conversation", "id": f"{model}_{i}", "models": [model], "task": "self_chat",
                         "turns": [{"speaker": model, "text": f"Hi number {i}"}, {"speaker": model, "text": text}]})
    write_jsonl(rows, path)


def start(tmp_path, port: int) -> MockRun:
    """ACUTE over two models' conversations, two pairs per unit, in MockRun on ``port``."""
    convs = tmp_path / "convs.jsonl"
    write_conversations(convs)
    return MockRun("acute", tmp_path / "mephisto", port=port, overrides=[
        f"acute.conversations=[{convs}]", "acute.seed=5", "acute.matchups_per_pair=4", "acute.subtasks_per_unit=2",
        f"mephisto.task.task_name={STUDY}"])


@pytest.fixture
def run(tmp_path):
    run = start(tmp_path, free_port())
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


def pass_acute_onboarding(run, worker: str, correct: bool = True):
    """Answer ACUTE's known-answer onboarding for a registered ``worker``; returns the onboarding agent and
    the data its page was sent."""
    onboarding = run.onboarding_agent(worker)
    data = run.unit_inputs(onboarding)
    run.server.register_mock_agent_after_onboarding(onboarding.worker_id, onboarding.get_agent_id(),
                                                    {"answers": onboarding_choices(data, correct=correct)})
    run.settle()
    return onboarding, data


def onboardings_of(run, worker: str) -> int:
    return sum(a.get_worker().worker_name == f"{worker}_sandbox" for a in run.db.find_onboarding_agents())


def fail_once(run, worker: str):
    """A failed first try: Mephisto grades it, then the worker may register again (not disqualified)."""
    onboarding, data = pass_acute_onboarding(run, worker, correct=False)
    run.wait(lambda: run.db.get_onboarding_agent(onboarding.db_id)["status"] == "rejected", what="graded")
    run.wait(lambda: not onboarding.get_worker().is_disqualified("dialeval_acute_onboarded"), what="a try left")
    return onboarding, data


def test_onboarding_then_units_and_export(run):
    """Two tries at the onboarding (acute.onboarding_tries, default 2: Prolific's policy): W1 fails both and
    is screened out, W2 fails the first and passes the second."""
    run.register("W1", "REG_1")
    onboarding, data = fail_once(run, "W1")
    assert run.sent_init_data() == [data]  # the onboarding page's data, as Mephisto sent it
    assert (data["try"], data["max_tries"]) == (1, 2)
    worker = onboarding.get_worker()
    run.register("W1", "REG_1")  # the page's "try again" reloads: the same registration, a new onboarding
    run.wait(lambda: onboardings_of(run, "W1") == 2, what="a second onboarding")
    second, data = pass_acute_onboarding(run, "W1", correct=False)
    assert second.get_agent_id() != onboarding.get_agent_id() and data["try"] == 2
    run.wait(lambda: worker.is_disqualified("dialeval_acute_onboarded"), what="failed onboarding")
    run.register("W1", "REG_1")  # screened out: no third try, whatever the registration
    run.register("W1", "REG_1c")
    assert onboardings_of(run, "W1") == 2 and run.sent_details[-1]["agent_id"] is None

    run.register("W2", "REG_2")
    fail_once(run, "W2")
    run.register("W2", "REG_2")
    run.wait(lambda: onboardings_of(run, "W2") == 2, what="a second onboarding")
    pass_acute_onboarding(run, "W2")
    agent = run.unit_agent("W2")
    inputs = run.unit_inputs(agent)
    # the unit's agent is in the database a moment before its details are queued for the page
    run.wait(lambda: inputs in run.sent_init_data(), what="the unit's data sent to the page")
    assert len(run.sent_init_data()) == 5
    assert_blind(run.sent_init_data(), MODELS)  # four onboardings and one unit
    assert len(inputs["shown"]) == 2
    answers = []
    for pair in inputs["shown"]:
        good_left = pair["left"][1]["text"] != "no."
        answers.append({"pair_id": pair["pair_id"], "choice": "left" if good_left else "right",
                        "justification": "asks questions", "duration": 9.5})
    run.submit(agent, {"answers": answers})
    run.wait(lambda: run.live_agent(agent).state.get_data()["outputs"] is not None, what="submission")

    from parlai_dialeval.analysis.pairwise import split_onboarding
    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db

    report, spec = collect_from_db(run.db, STUDY)  # no task type given: recorded in the run
    assert spec.name == "acute"
    data = from_records(report.records)
    comps, onboarding_count = split_onboarding(data.comparisons)  # what analyze_pairwise sets aside
    assert onboarding_count == 8
    onboarding = data.comparisons[data.comparisons["onboarding"].eq(True)]
    assert sorted(onboarding["worker_id"]) == ["W1_sandbox"] * 4 + ["W2_sandbox"] * 4
    for row in onboarding.itertuples():  # W1 picked the bad speaker every time, W2 the good one at try 2
        picked = row.model_a if row.choice == "a" else row.model_b
        passed = row.worker_id == "W2_sandbox" and row.meta["try"] == 2
        assert picked == ("onboarding_good" if passed else "onboarding_bad")
        assert row.meta["passed"] == passed
    assert sorted(onboarding["meta"].map(lambda m: m["try"])) == [1] * 4 + [2] * 4
    shown = data.conversations.set_index("id")
    for row in onboarding.itertuples():  # the known-answer dialogues are exported once, marked as onboarding
        assert shown.loc[[row.conversation_a, row.conversation_b], "status"].eq("onboarding").all()
    assert shown["status"].eq("onboarding").sum() == 4  # two pairs seen four times, each dialogue once
    assert report.onboarding_by_status == {"rejected": 3, "approved": 1}
    assert "4 onboarding attempt(s) read" in report.summary() and "(12 of them onboarding)" in report.summary()
    assert len(comps) == 2 and set(comps["worker_id"]) == {"W2_sandbox"}
    for row in comps.itertuples():
        assert (row.model_a if row.choice == "a" else row.model_b) == "good_bot"
        assert {row.conversation_a, row.conversation_b} <= set(data.conversations["id"])
    assert comps["question"].iloc[0] == "Who would you prefer to talk to for a long conversation?"


def test_the_harness_writes_every_packet_on_the_servers_own_thread(run):
    """A loaded run of the test above once timed out with W2's registration delivered twice (two workers made at
    once, one failing with EntryAlreadyExists): MockServer wrote from the test's thread, which tornado does not
    support, and retried a write that raised after its frame went out. protocol_harness now writes on the
    server's IOLoop thread; here every write is watched."""
    watched = WriteThreads(run.server)
    for worker in ("W1", "W2"):
        run.register(worker, f"REG_{worker}")
        run.onboarding_agent(worker)
    run.server.disconnect_mock_agent(run.onboarding_agent("W1").get_agent_id())
    assert len(watched.writes) == 3 and watched.off_the_loop() == 0
    assert onboardings_of(run, "W1") == onboardings_of(run, "W2") == 1


def test_settle_returns_once_mephisto_has_handled_what_was_sent(run):
    """MockRun.settle slept 0.1 s, then waited for the registrations alone: Mephisto handles packets on the loop the
    test's waits run, so after a sleep nothing had been handled and a registration not yet read counted as done."""
    run.register("W1", "REG_W1")  # settles
    assert onboardings_of(run, "W1") == 1  # no wait: the registration was handled and its onboarding made
    assert run.handled == run.server.packets_written == 1


def test_two_pages_of_a_new_participant_registering_at_once_both_get_an_answer(run):
    """Two tabs (or a double click) of one new participant: both registrations look for the worker before
    either has made it. Mephisto's second creation raised EntryAlreadyExistsException and that page never got
    an answer (compat/mephisto_arrivals.py runs it again). The look-up is held back so both miss."""
    find, looked = run.db.find_workers, threading.Barrier(2)

    def both_look_first(*args, **kwargs):
        found = find(*args, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            looked.wait(timeout=3)
        return found

    run.db.find_workers = both_look_first
    before = len(run.sent_details)
    run.server.register_mock_agent("NEW", "NEW-tab1")
    run.server.register_mock_agent("NEW", "NEW-tab2")
    run.wait(lambda: len(run.sent_details) >= before + 2, what="an answer to each page")
    answers = run.sent_details[before:]
    assert len(answers) == 2 and all(d["agent_id"] and not d.get("failure_reason") for d in answers), answers
    assert answers[0]["agent_id"] != answers[1]["agent_id"]  # each tab its own onboarding, as Mephisto gives
    assert len([w for w in run.db.find_workers() if w.worker_name == "NEW_sandbox"]) == 1
