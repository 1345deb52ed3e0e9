"""Issue 27 in a real browser, as test_resume_browser.py does on the mock provider: `dialeval launch
live_chat_da` on (fake) Prolific with two places is killed (SIGKILL) while participant A is mid-study; the
launch's node router outlives it. A relaunch on another port is refused (the published study sends
participants to the first port, and Prolific allows no change) and changes nothing; the relaunch on the
same port stops the orphaned router itself and takes over the same Prolific study (no second study: same
places, same completion code, which the server sends), A reloads the page and finishes the unit they had
begun, B arrives from Prolific and does the other one; both land on Prolific's completion page with the
study's code; the review lists each submission once, and the export holds each unit once. The workspace
held exactly the study's cost: once published it has nothing available, and the relaunch, which needs no
new place, is not refused for it (issue 42)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

import psutil
import pytest

from .prolific_harness import ProlificCliRun, fake_prolific, provider_overrides, register
from .protocol_harness import DIALEVAL, chromium_page, dialeval, live_chat_conversation, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
PID_A, PID_B = "5f0c1d2e3a4b5c6d7e8f9a01", "5f0c1d2e3a4b5c6d7e8f9a02"


def _rate(page, slot: int) -> None:
    live_chat_conversation(page, [f"I grow tomatoes, conversation {slot}"], rating=20 + slot)


def _submit(page, fake) -> None:
    page.wait_for_selector("[data-testid=feedback-form]", timeout=60000)
    page.fill("#feedback", "fine")
    page.click("[data-testid=send-feedback]")
    page.click("[data-testid=submit-hit]", timeout=30000)
    page.wait_for_url(lambda url: url.startswith(fake.completion_url), timeout=30000)
    page.wait_for_selector("#complete", timeout=30000)  # completed by the server, with the study's code


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_killed_prolific_launch_resumes_on_the_same_study(tmp_path, monkeypatch):
    require_chromium()
    data, port = tmp_path / "mephisto", _free_port()
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
            with chromium_page(tmp_path) as page:
                page.goto(fake.study_url(study["id"], PID_A))  # Prolific's start button: on to the task
                task_url = page.url
                _rate(page, 0)
                _rate(page, 1)
                page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
                os.killpg(first.proc.pid, signal.SIGKILL)  # the launch dies mid-study; its router lives on
                first.proc.wait(30)
                assert _alive(first.router_pid)

                other = _free_port()
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
        assert [line.split()[0] for line in table.splitlines() if line.startswith("5f0c")] == [PID_A, PID_B]

    out = tmp_path / "lc_prolific_kill.jsonl"
    done = dialeval("export", "lc_prolific_kill", "--out", str(out), "--mephisto-data", str(data))
    assert "continued after a restart" in done.stdout
    convs = [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "conversation"]
    assert len(convs) == 12 and {c["status"] for c in convs} == {"complete"}
    by_worker = {w: sorted(c["slot"] for c in convs if c["worker_id"] == w) for w in (PID_A, PID_B)}
    assert by_worker == {PID_A: list(range(6)), PID_B: list(range(6))}  # each unit once, whole
    assert len({c["assignment_id"] for c in convs}) == 2
