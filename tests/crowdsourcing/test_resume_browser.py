"""Issue 20, item 4 in a real browser: the launch process is killed (SIGKILL) after the worker's second
rated live-chat conversation; its node router outlives it and keeps the port. `dialeval launch` of the same
task name stops that router itself (its pid is recorded with the run, issue 42), resumes the run, and the
same worker, reloading the page, finishes the same HIT. The export holds one complete unit of six
conversations.
"""
from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, require_chromium
from .protocol_harness import CliRun, dialeval, live_chat_conversation

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
OVERRIDES = ["mephisto.task.task_name=lc_kill",
             "mephisto.blueprint.num_conversations=1", "live_chat.min_inputs=1", "live_chat.seed=0"]


def rate_one_conversation(page, slot: int) -> None:
    live_chat_conversation(page, [f"I grow tomatoes, conversation {slot}"], rating=20 + slot)


def test_killed_live_chat_launch_resumes_and_the_worker_finishes_the_same_hit(tmp_path):
    require_chromium()
    port = free_port()
    overrides = [f"mephisto.architect.port={port}", *OVERRIDES]
    first = CliRun("live_chat_da", tmp_path, overrides, real_process=True)
    url = first.worker_url("returning_worker")
    try:
        with chromium_page(tmp_path) as page:
            page.goto(url)
            rate_one_conversation(page, 0)
            rate_one_conversation(page, 1)
            page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
            os.killpg(first.proc.pid, signal.SIGKILL)  # the launch dies; its router lives on
            first.proc.wait(30)

            assert psutil.pid_exists(first.router_pid)

            second = CliRun("live_chat_da", tmp_path / "again", overrides, data_dir=first.data_dir,
                            real_process=True)
            try:
                assert (f"Stopped the router (pid {first.router_pid}, port {port}) the interrupted run 1 left "
                        "behind.") in second.log()
                assert "Resuming task 'lc_kill': its run 1 was interrupted with 0 of 1 unit(s) finished" in second.log()
                assert "1 worker(s) who were mid-HIT get their HIT back" in second.log()
                page.goto(url)  # the worker reloads the page with the same worker id
                for slot in range(2, 6):
                    rate_one_conversation(page, slot)
                page.wait_for_selector("[data-testid=feedback-form]", timeout=60000)
                page.fill("#feedback", "came back after the restart")
                page.click("[data-testid=send-feedback]")
                page.click("[data-testid=submit-hit]", timeout=30000)
                page.wait_for_timeout(1500)
                assert second.proc.wait(120) == 0  # the run's only unit is done: it ends by itself
            finally:
                second.stop()
    finally:
        first.stop()

    out = tmp_path / "lc_kill.jsonl"
    done = dialeval("export", "lc_kill", "--out", str(out), "--mephisto-data", str(first.data_dir))
    assert "continued after a restart" in done.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    convs = [r for r in records if r["type"] == "conversation"]
    assert len(convs) == 6 and {c["status"] for c in convs} == {"complete"}
    assert len({c["assignment_id"] for c in convs}) == 1 and sorted(c["slot"] for c in convs) == list(range(6))
    assert len({c["worker_id"] for c in convs}) == 1 and convs[0]["worker_id"].startswith("returning_worker")
    ratings = [r for r in records if r["type"] == "rating"]
    assert len(ratings) == 6 * 7
    assert sorted({r["value"] for r in ratings}) == [20.0 + slot for slot in range(6)]
