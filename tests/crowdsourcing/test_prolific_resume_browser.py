"""Issue 27 in a real browser, as test_resume_browser.py does on the mock provider: `dialeval launch
live_chat_da` on (fake) Prolific with two places is killed (SIGKILL) while participant A is mid-study; the
launch's node router outlives it. A relaunch on another port is refused (the published study sends
participants to the first port, and Prolific allows no change) and changes nothing; the relaunch on the
same port stops the orphaned router itself and takes over the same Prolific study (no second study: same
places, same completion code, which the server sends), A reloads the page and finishes the unit they had
begun, B arrives from Prolific and does the other one; both land on Prolific's completion page with the
study's code; the review lists each submission once, and the export holds each unit once. The workspace
held exactly the study's cost: once published it has nothing available, and the relaunch, which needs no
new place, is not refused for it (issue 42).
Issue 38, item 6: first, two outsiders open the task's own address with identities Prolific never gave (the
issue's PROLIFIC_PID ``=HYPERLINK(...)`` with SESSION_ID ``FAKESESSION``, and well-formed made-up ids): each
page says there is no place for them and nothing of theirs exists; A, confirmed by Prolific before the kill,
is checked again when the page reloads after the relaunch (issue 53: every arrival against the submission as
it is now) and let in, and nothing unverified is exported."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from urllib.parse import urlencode

import psutil
import pytest

from parlai_dialeval.providers.prolific.verify import UNKNOWN
from parlai_dialeval.testing.ports import free_port

from .prolific_harness import ProlificCliRun, fake_prolific, provider_overrides, register
from .browser_page import chromium_page, require_chromium
from .protocol_harness import DIALEVAL, dialeval, live_chat_conversation

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
PID_A, PID_B = "5f0c1d2e3a4b5c6d7e8f9a01", "5f0c1d2e3a4b5c6d7e8f9a02"
OUTSIDERS = {'=HYPERLINK("http://example.invalid","x")': "FAKESESSION",
             "5f0c1d2e3a4b5c6d7e8f9a99": "5f0c1d2e3a4b5c6d7e8f9a98"}  # PROLIFIC_PID: SESSION_ID


def _rate(page, slot: int) -> None:
    live_chat_conversation(page, [f"I grow tomatoes, conversation {slot}"], rating=20 + slot)


def _refused(page, study_url: str, study_id: str) -> None:
    """The outsiders open the task's address (the study's URL on Prolific, without Prolific) with their own
    ids: the page says there is no place."""
    for pid, session in OUTSIDERS.items():
        page.goto(f"{study_url.split('/?')[0]}/?"
                  + urlencode({"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session}))
        assert page.wait_for_selector(".alert-danger", timeout=60000).inner_text().strip() == UNKNOWN
        assert page.locator("[data-testid=topic-form]").count() == 0


def _submit(page, fake) -> None:
    page.wait_for_selector("[data-testid=feedback-form]", timeout=60000)
    page.fill("#feedback", "fine")
    page.click("[data-testid=send-feedback]")
    page.click("[data-testid=submit-hit]", timeout=30000)
    page.wait_for_url(lambda url: url.startswith(fake.completion_url), timeout=30000)
    page.wait_for_selector("#complete", timeout=30000)  # completed by the server, with the study's code


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_killed_prolific_launch_resumes_on_the_same_study(tmp_path, monkeypatch):
    require_chromium()
    data, port = tmp_path / "mephisto", free_port()
    with fake_prolific() as fake:
        register(data, fake, monkeypatch)
        with fake.state.lock:  # funded with exactly the study's cost: 2 places x 3.00 + 33.3 % fees
            fake.state.balances[next(iter(fake.state.balances))].update(available_balance=800, total_balance=800)
        overrides = [*provider_overrides(fake, "3.00", 20),
                     "mephisto.task.task_name=lc_prolific_kill", "mephisto.blueprint.num_conversations=2",
                     "live_chat.min_inputs=1", "live_chat.seed=0"]
        first = ProlificCliRun(tmp_path, fake, [*overrides, f"mephisto.architect.port={port}"])
        study = first.study
        second = None
        try:
            with chromium_page(tmp_path / "outsiders") as outsider:
                _refused(outsider, study["external_study_url"], study["id"])
            with chromium_page(tmp_path) as page:
                page.goto(fake.study_url(study["id"], PID_A))  # Prolific's start button: on to the task
                task_url = page.url
                _rate(page, 0)
                _rate(page, 1)
                page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
                killed_at = time.time()
                os.killpg(first.proc.pid, signal.SIGKILL)  # the launch dies mid-study; its router lives on
                first.proc.wait(30)
                assert _alive(first.router_pid)

                other = free_port()
                refused = subprocess.run(DIALEVAL + ["launch", "live_chat_da", *overrides,
                                                     f"mephisto.architect.port={other}", "--mephisto-data", str(data)],
                                         capture_output=True, text=True, timeout=300)
                said = refused.stdout + refused.stderr
                assert refused.returncode != 0 and "Traceback" not in said
                assert f"sends participants to http://localhost:{port}/, and Prolific allows no change" in said
                assert f"this launch would serve at http://localhost:{other}/" in said
                assert "relaunch at the study's address" in said
                assert len(fake.state.studies) == 1 and _alive(first.router_pid)  # nothing changed

                second = ProlificCliRun(tmp_path / "again", fake, [*overrides, f"mephisto.architect.port={port}"],
                                        data_dir=data)
                assert not _alive(first.router_pid)  # the relaunch stopped the orphaned router itself
                assert second.study["id"] == study["id"] and len(fake.state.studies) == 1
                end = time.time() + 60  # the launch prints what it resumed once it serves
                while "Resuming task" not in second.log() and time.time() < end:
                    time.sleep(0.5)
                assert "Resuming task 'lc_prolific_kill': its run 1 was interrupted with 0 of 2 unit(s)" in second.log()
                assert f"Prolific study {study['id']} of the interrupted run 1 goes on" in second.log()
                assert "holds 2 open place(s), paid when published; 2 unit(s) left need 0 more." in second.log()
                page.goto(task_url)  # A reloads the page Prolific sent them to
                for slot in range(2, 6):
                    _rate(page, slot)
                _submit(page, fake)
            with chromium_page(tmp_path / "b") as page:
                page.goto(fake.study_url(study["id"], PID_B))
                for slot in range(6):
                    _rate(page, slot)
                _submit(page, fake)
            assert second.proc.wait(120) == 0  # both units are done: the run ends by itself
        finally:
            first.stop()
            if second is not None:
                second.stop()

        assert len(fake.state.studies) == 1 and study["status"] == "AWAITING REVIEW"  # stopped once done
        code = study["completion_codes"][0]["code"]
        subs = {s["participant_id"]: s for s in fake.state.submissions.values()}
        assert sorted(subs) == [PID_A, PID_B]
        assert all(s["status"] == "AWAITING REVIEW" and s["study_code"] == code for s in subs.values())
        table = dialeval("review", "lc_prolific_kill", "--mephisto-data", str(data)).stdout
        assert [line.split()[0] for line in table.splitlines() if line.startswith(("5f0c", "="))] == [PID_A, PID_B]
        asked = [(c["path"].split("/")[-2], c["status"]) for c in fake.state.calls
                 if c["path"].startswith("/api/v1/submissions/") and c["path"].split("/")[-2] in OUTSIDERS.values()]
        assert asked == [("5f0c1d2e3a4b5c6d7e8f9a98", 404)]  # the formula's ids never reached Prolific
    with sqlite3.connect(data / "database.db") as db:
        assert sorted(name for (name,) in db.execute("SELECT worker_name FROM workers")) == [PID_A, PID_B]
    with sqlite3.connect(data / "prolific" / "prolific.db") as db:
        confirmed = dict(db.execute("SELECT participant_id, checked FROM verified WHERE source = 'arrival'"))
    # issue 53: A's reload after the relaunch is checked with Prolific again (A's submission is still ACTIVE)
    assert sorted(confirmed) == [PID_A, PID_B] and confirmed[PID_A] > killed_at

    out = tmp_path / "lc_prolific_kill.jsonl"
    done = dialeval("export", "lc_prolific_kill", "--out", str(out), "--mephisto-data", str(data))
    assert "continued after a restart" in done.stdout
    convs = [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "conversation"]
    assert len(convs) == 12 and {c["status"] for c in convs} == {"complete"}
    by_worker = {w: sorted(c["slot"] for c in convs if c["worker_id"] == w) for w in (PID_A, PID_B)}
    assert by_worker == {PID_A: list(range(6)), PID_B: list(range(6))}  # each unit once, whole
    assert len({c["assignment_id"] for c in convs}) == 2
    assert "unverified" not in out.read_text()
