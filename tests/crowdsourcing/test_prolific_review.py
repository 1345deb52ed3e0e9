"""The review, pay and block loop on Prolific, against the fake: a bonus is paid once, a second request for
the same submission and reason is refused, one left pending by a 500 after Prolific paid is settled by the review
table from Prolific's records; bad requests leave the ledger and Prolific untouched; `dialeval
review` lists and approves; a blocked participant cannot enter the next study."""
from __future__ import annotations

import time

import pytest

from parlai_dialeval.cli import main
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing.ports import free_port

from .prolific_harness import fake  # noqa: F401,F811  (the fixture)
from .prolific_harness import (TOKEN, ProlificMockRun, arrive, completed_on_prolific, register, scale_items,
                               scale_overrides, submit_scale_unit)

pytestmark = pytest.mark.slow


class Done:
    def __init__(self, code, captured):
        self.returncode, self.stdout, self.stderr = code, captured.out, captured.err


@pytest.fixture
def dialeval(capsys):
    """`dialeval ARGS` in this process (the fake Prolific lives here); returns code, stdout, stderr."""
    def run(*args):
        capsys.readouterr()
        code = main(list(args))
        return Done(code, capsys.readouterr())
    return run


def test_review_pay_block(tmp_path, fake, monkeypatch, dialeval):
    from parlai_dialeval.providers.prolific import bonus, review

    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    items = scale_items(tmp_path / "items.jsonl", 3)
    run = ProlificMockRun("scale_designs", data, free_port(), fake, scale_overrides(items, "sd_review"))
    try:
        assert submit_scale_unit(run, "PID_A") == completed_on_prolific(run, "PID_A")
        run.register("PID_B")  # takes a place, never submits
        run.unit_agent("PID_B")
        study = fake.state.studies[run.study["study_id"]]
        assert study["total_available_places"] == 3  # one place per launched unit
        agent_a, agent_b = run.unit_agent("PID_A"), run.unit_agent("PID_B")
        # polling: Mephisto's launcher asks each launched unit for its status every second (compat's
        # prompt_unit_launching); a unit with a participant at work costs one call about that submission per
        # 10 s, whoever asks (the launcher's thread may be the one), a unit without one none
        unit_b = agent_b.get_unit()
        idle = [u for u in run.db.find_units(task_run_id=unit_b.task_run_id) if u.get_assigned_agent() is None]
        before = len(fake.state.calls)
        type(unit_b)._last_poll.clear()  # what was asked before `before`
        unit_b.get_status()
        for unit in idle:
            unit.get_status()
        # the launcher's thread may have asked first, its call still on the way (seen at -n 7 on 2 cores)
        deadline = time.monotonic() + 10
        while len(fake.state.calls) == before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert idle and [c["path"] for c in fake.state.calls[before:]] == [
            f"/api/v1/submissions/{run.submission('PID_B')['id']}/"]
        unit_b.get_status()  # asked again within 10 s: Prolific is not asked again
        assert len(fake.state.calls) == before + 1
        # the participant returns the study on Prolific: the next poll frees the unit
        with fake.state.lock:
            fake.state.submissions[run.submission("PID_B")["id"]]["status"] = "RETURNED"
        type(unit_b)._last_poll.clear()
        unit_b.get_status()
        run.wait(lambda: run.db.get_agent(agent_b.db_id)["status"] == "returned", what="the returned agent")
        assert submit_scale_unit(run, "PID_C") == completed_on_prolific(run, "PID_C")
    finally:
        run.shutdown()
    assert fake.state.studies[run.study["study_id"]]["status"] == "AWAITING REVIEW"  # stopped once no unit is open
    db = run.db
    store = run.store

    # a bonus through the ledger (every fault around `pay`: test_prolific_money.py); a 500 after Prolific
    # paid is "pending: check on Prolific", and the review table settles it from Prolific's records
    assert "paid 0.75 GBP to PID_A" in bonus.pay(db, agent_a, "0.75", "careful ratings")
    with pytest.raises(DialevalError, match="already paid"):
        bonus.pay(db, agent_a, "0.75", "careful ratings")
    fake.inject(500, 1, path=r"/pay/$", after=True)
    with pytest.raises(DialevalError, match="pending: check on Prolific"):
        bonus.pay(db, agent_a, "0.25", "second unit of effort")
    assert [(p["participant_id"], p["amount"]) for p in fake.state.payments] == [("PID_A", 75), ("PID_A", 25)]
    assert [d["state"] for d in store.decisions(kind="bonus")] == ["paid", "unsure"]
    done = dialeval("review", "sd_review", "--mephisto-data", str(data))
    assert done.returncode == 0 and "check on Prolific" not in done.stdout, done.stdout
    assert [d["state"] for d in store.decisions(kind="bonus")] == ["paid", "paid"]

    # bad requests: one clear line, nothing recorded, nothing sent
    def writes():
        return [c for c in fake.state.calls if c["method"] != "GET"]

    calls = len(writes())
    with pytest.raises(DialevalError, match="PID_B never submitted"):
        bonus.pay(db, agent_b, "1.00", "trying")
    with pytest.raises(DialevalError, match="at least 100 characters"):
        review.reject(db, agent_a, "too short", "LOW_EFFORT")
    with pytest.raises(DialevalError, match="not one of Prolific's"):
        review.reject(db, agent_a, "x" * 120, "BAD_MOOD")
    assert len(writes()) == calls and not store.decisions(kind="reject")
    assert fake.state.submissions[run.submission("PID_A")["id"]]["status"] == "AWAITING REVIEW"

    with pytest.raises(DialevalError, match="no participant 'PID_NOBODY'"):
        review.block(db, "PID_NOBODY", "unknown")

    # the command line: list, refuse the same bonus again, approve the passing submission
    done = dialeval("review", "sd_review", "--bonus", "PID_A", "0.75", "--reason", "careful ratings",
                     "--mephisto-data", str(data))
    assert done.returncode == 2 and "already paid" in done.stderr + done.stdout, done.stderr[-2000:]
    assert len(fake.state.payments) == 2
    done = dialeval("review", "sd_review", "--bonus", "PID_NOBODY", "1", "--reason", "x", "--mephisto-data", str(data))
    assert done.returncode == 2 and "'PID_NOBODY' has no submission" in done.stderr + done.stdout
    reason = ("Every rating in this submission is the same value and the task took a few seconds, so we cannot "
              "use it; the instructions asked for a careful judgment of each response.")
    done = dialeval("review", "sd_review", "--reject", "PID_C", "--category", "LOW_EFFORT", "--message", reason,
                    "--mephisto-data", str(data))
    assert done.returncode == 0 and "rejected PID_C (LOW_EFFORT)" in done.stdout, done.stderr
    assert run.submission("PID_C")["status"] == "REJECTED"
    assert db.get_agent(run.unit_agent("PID_C").db_id)["status"] == "rejected"
    assert [(d["participant_id"], d["category"], d["state"]) for d in store.decisions(kind="reject")] == [
        ("PID_C", "LOW_EFFORT", "done")]
    done = dialeval("review", "sd_review", "--approve-passing", "--mephisto-data", str(data))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "approved PID_A" in done.stdout and "approved PID_C" not in done.stdout and "PID_B" in done.stdout
    assert run.submission("PID_A")["status"] == "APPROVED"
    assert run.submission("PID_B")["status"] == "RETURNED"  # never completed: left alone
    assert db.get_agent(agent_a.db_id)["status"] == "approved"
    assert TOKEN not in done.stdout + done.stderr

    # block: the participant group every later study excludes
    done = dialeval("review", "sd_review", "--block", "PID_B", "--mephisto-data", str(data))
    assert done.returncode == 0, done.stderr[-3000:]
    assert store.is_blocked("PID_B")
    run2 = ProlificMockRun("scale_designs", data, free_port(), fake, scale_overrides(items, "sd_review_2"))
    try:
        second = fake.state.studies[run2.study["study_id"]]
        assert {"filter_id": "participant_group_blocklist", "selected_values": [run2.study["block_group_id"]]} \
            in second["filters"]
        with pytest.raises(AssertionError, match="403"):
            arrive(fake, second["id"], "PID_B")
        assert arrive(fake, second["id"], "PID_C")["PROLIFIC_PID"] == "PID_C"
    finally:
        run2.shutdown()

    # a study Prolific no longer knows
    del fake.state.studies[run.study["study_id"]]
    done = dialeval("review", "sd_review", "--mephisto-data", str(data))
    assert done.returncode == 2 and "no longer knows study" in done.stderr + done.stdout


def test_review_and_register_help_explain_every_option(capsys):
    for command, options in (("review", ["--approve-passing", "--reject", "--message", "--category", "--bonus",
                                         "--reason", "--block", "--bonus-unpaid", "--mephisto-data", "100 characters",
                                         "FAILED_CHECK"]),
                             ("prolific", ["register", "--token-env", "--token-file", "--api-base-url", "panel create",
                                           "panel add", "panel list", "demographics", "--requester", "--out"])):
        with pytest.raises(SystemExit) as exited:
            main([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())  # unwrapped
        assert exited.value.code == 0 and all(option in out for option in options), out


def test_a_participant_who_did_not_submit_is_not_failed_in_the_review_table():
    """Issue 40 item 1: the live-chat check has no row for a participant who disconnected; the review table
    says they did not submit (not '-' as if pending, never 'fail')."""
    from parlai_dialeval.crowdsourcing.platform.quality import qc_of

    passed = {"ann": True, "bob": False}
    assert [qc_of(p, passed, "", "completed") for p in ("ann", "bob")] == ["pass", "fail"]
    assert [qc_of("cat", passed, "", s) for s in ("disconnect", "returned", "timeout", "expired")] == \
        ["did not submit"] * 4
    assert [qc_of("cat", passed, "", s) for s in ("in task", "completed")] == ["-", "-"]
    assert qc_of("cat", passed, "no worker quality check", "disconnect") == "n/a"
