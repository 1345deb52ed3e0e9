"""Issue 53, items 1, 4 and 5, against the fake Prolific: a message to a participant (`dialeval review --message
W TEXT`, the dashboard's message box) is sent once however the request is retried, the id shown cut; who took
part (`dialeval prolific demographics TASK`) is stored beside the study, readable by its owner only, never in
the votes, and joins the votes on the right participants; the work of a submission that was returned is
exported apart, never as complete."""
from __future__ import annotations

import re
import stat

import pytest

from parlai_dialeval.cli import main
from parlai_dialeval.testing.ports import free_port

from .prolific_harness import fake  # noqa: F401,F811  (the fixture)
from .prolific_harness import (ProlificMockRun, register, scale_answers, scale_items, scale_overrides,
                               submit_scale_unit, submit_static_unit)

pytestmark = pytest.mark.slow
PID_A, PID_B, PID_C = "5f0c1d2e3a4b5c6d7e8f9a0a", "5f0c1d2e3a4b5c6d7e8f9a0b", "5f0c1d2e3a4b5c6d7e8f9a0c"
SECRET = "dashboard-secret-for-tests"


def _dialeval(capsys, *args) -> str:
    """`dialeval ARGS` in this process (the fake lives here): what it printed, out and err."""
    capsys.readouterr()
    main(list(args))
    said = capsys.readouterr()
    return said.out + said.err


def _finished_run(tmp_path, fake, monkeypatch, task_name: str, units: int, finishers=(PID_A,)):  # noqa: F811
    data = tmp_path / "mephisto"
    register(data, fake, monkeypatch)
    run = ProlificMockRun("scale_designs", data, free_port(), fake,
                          scale_overrides(scale_items(tmp_path / "i.jsonl", units), task_name))
    try:
        for pid in finishers:
            submit_scale_unit(run, pid)
    except BaseException:
        run.shutdown()
        raise
    return run, data


def test_a_message_is_sent_once_however_the_request_is_retried(tmp_path, fake, monkeypatch, capsys):  # noqa: F811
    from parlai_dialeval.dashboard.app import create_app
    from parlai_dialeval.dashboard.source import TaskSource
    from parlai_dialeval.errors import DialevalError
    from parlai_dialeval.providers.prolific import review as review_module

    run, data = _finished_run(tmp_path, fake, monkeypatch, "sd_message", 2)
    run.shutdown()

    def review(*args):
        return _dialeval(capsys, "review", "sd_message", *args, "--mephisto-data", str(data))

    def sent():
        return [m["body"] for m in fake.state.messages if m["recipient_id"] == PID_A]

    thanks = "Thank you for your careful ratings!"
    assert "sent a message to 5f0c…a0a" in review("--message", PID_A, thanks) and sent() == [thanks]
    assert "was sent to 5f0c…a0a already" in review("--message", PID_A, thanks) and sent() == [thanks]
    assert "--message WORKER TEXT" in review("--message", PID_A)

    def send(text):  # what the command does once it has the participant's agent
        try:
            return review_module.send_message(run.db, run.unit_agent(PID_A), text)
        except DialevalError as error:
            return str(error)

    fake.inject(500, 1, path="messages/", after=True)  # Prolific sends it, its answer is lost
    assert "may have been sent" in send("A second note")
    assert "not sent again" in send("A second note")  # the retried request
    assert sent() == [thanks, "A second note"]
    fake.inject(429, 1, path="messages/", retry_after=0.1)  # refused unprocessed: sent again, once
    assert "sent a message" in send("A third note")
    assert sent() == [thanks, "A second note", "A third note"]

    app = create_app(TaskSource("sd_message", data), SECRET)
    app.testing = True
    with app.test_client() as web:
        web.post("/login", data={"token": SECRET})
        page = web.get(f"/participant/{PID_A}").get_data(as_text=True)
        shown = re.search(r'data-testid="message-to">([^<]*)<', page)[1]
        assert shown == "5f0c…a0a" and PID_A not in shown
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)[1]
        asked = web.post(f"/participant/{PID_A}/message", data={"csrf": csrf, "message": "From the dashboard"})
        confirm_page = asked.get_data(as_text=True)
        assert "Confirm: message 5f0c…a0a" in confirm_page and "From the dashboard" in confirm_page
        confirm = re.search(r'action="(/confirm/[^"]+)"', confirm_page)[1]
        assert web.post(confirm, data={"csrf": csrf}).status_code == 302
        web.post(confirm, data={"csrf": csrf})  # the confirmation clicked twice
        assert "used already" in web.get("/").get_data(as_text=True)
        asked = web.post(f"/participant/{PID_A}/message", data={"csrf": csrf, "message": "From the dashboard"})
        confirm = re.search(r'action="(/confirm/[^"]+)"', asked.get_data(as_text=True))[1]
        web.post(confirm, data={"csrf": csrf})
        assert "sent to 5f0c…a0a already" in web.get("/").get_data(as_text=True)  # the same text: refused
    assert sent() == [thanks, "A second note", "A third note", "From the dashboard"]


def test_demographics_are_stored_apart_and_join_on_the_right_participants(tmp_path, fake, monkeypatch, capsys):  # noqa: F811
    from parlai_dialeval.crowdsourcing.platform.export import export_task
    from parlai_dialeval.data.participants import read_participants
    from parlai_dialeval.scripts.command_line import load_data

    fake.state.demographics.update({
        PID_A: {"Age": "23", "Sex": "Female", "Nationality": "Atlantis"},
        PID_B: {"Age": "61", "Sex": "Male", "Nationality": "Lemuria"},
        PID_C: {"Age": "CONSENT_REVOKED", "Sex": "Female", "Nationality": "Mu"}})
    run, data = _finished_run(tmp_path, fake, monkeypatch, "sd_demo", 3, (PID_B, PID_A))
    try:
        run.register(PID_C)  # takes a place, then returns it on Prolific
        fake.leave(run.submission(PID_C)["id"])
    finally:
        run.shutdown()
    said = _dialeval(capsys, "prolific", "demographics", "sd_demo", "--mephisto-data", str(data))
    path = data / "prolific" / "demographics" / "sd_demo.csv"
    assert f"wrote 3 participant row(s) of 'sd_demo' to {path}" in said
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    people = read_participants(path)
    assert sorted(people["worker_id"]) == [PID_A, PID_B, PID_C]
    assert people.set_index("worker_id")["age"].isna()[PID_C]  # Prolific's marker: missing, not a number

    votes = tmp_path / "votes.jsonl"
    export_task("sd_demo", votes, data)
    assert not any(word in votes.read_text() for word in ("Atlantis", "Lemuria", "Female"))  # never in the votes
    ratings = load_data({"data": [str(votes)]}, log=None).ratings
    joined = ratings.merge(people, on="worker_id", how="left", validate="many_to_one")
    assert dict(joined.groupby("worker_id")["age"].first()) == {PID_A: 23, PID_B: 61}
    assert set(joined.loc[joined["worker_id"] == PID_B, "nationality"]) == {"Lemuria"}


def test_work_on_a_returned_submission_is_exported_apart_never_complete(tmp_path, fake, monkeypatch, capsys):  # noqa: F811
    """A participant hands in the unit, our completion does not reach Prolific, and they return the study
    there: their work can never be paid. Once Prolific's status is known (here the review's list), the export
    marks it apart and analyses leave it out."""
    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db, export_task
    from parlai_dialeval.scripts.command_line import load_data

    run, data = _finished_run(tmp_path, fake, monkeypatch, "sd_gone_work", 2)
    try:
        run.register(PID_B)
        fake.inject(400, 1, path=f"submissions/{run.submission(PID_B)['id']}/transition/")
        submit_static_unit(run, PID_B, scale_answers, on_prolific=False)
        agent = run.live_agent(run.unit_agent(PID_B))
        run.wait(lambda: agent.get_status() == "completed", 20, "B's unit handed in")
        fake.leave(run.submission(PID_B)["id"])  # then B returns the study on Prolific
    finally:
        run.shutdown()
    assert "RETURNED" in _dialeval(capsys, "review", "sd_gone_work", "--mephisto-data", str(data))
    report, _ = collect_from_db(run.db, "sd_gone_work")
    apart = {r["worker_id"] for r in report.records if r.get("unverified")}
    assert apart == {PID_B} and any("returned or timed out on Prolific" in n and PID_B in n for n in report.notes)
    votes = tmp_path / "votes.jsonl"
    export_task("sd_gone_work", votes, data)
    assert set(load_data({"data": [str(votes)]}, log=None).ratings["worker_id"]) == {PID_A}
