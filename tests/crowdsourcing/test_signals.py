"""Issue 20, items 5-7: stopping `dialeval launch` with signals, a port already in use, the worker URL.

Each test runs `dialeval launch sm_eval` in its own process (LocalArchitect + node router + MockProvider)
and checks what a person at the terminal sees: no traceback, exit status 0, a line saying what was saved,
and nothing left listening on the port (the node router runs in its own process group, so a launch that
dies without stopping it leaves it serving).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import psutil
import pytest

from parlai_dialeval.crowdsourcing.platform.ports import port_is_free
from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, require_chromium
from .protocol_harness import DIALEVAL, CliRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
OVERRIDES = ["mephisto.blueprint.num_conversations=2", "sm_eval.num_turns=2", "~sm_eval.models.retrieval"]


def launch(tmp_path, port: int) -> CliRun:
    return CliRun("sm_eval", tmp_path, [f"mephisto.architect.port={port}", *OVERRIDES], real_process=True)


def wait_for(condition, timeout: float, what: str) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def assert_clean_exit(run: CliRun, port: int) -> str:
    try:
        assert run.proc.wait(60) == 0, run.log()[-3000:]
    finally:
        run.stop()  # only acts on what a failing test left running
    log = run.log()
    assert "Traceback" not in log and "Error" not in log, log[-3000:]
    assert re.search(r"Saved in .*Export: dialeval export sm_eval", log), log[-2000:]
    # each log line once; the router no longer resends every packet (it printed a bare `null` each time)
    assert log.count("Creating a task run under task") == 1 and "\nnull\n" not in log
    assert not psutil.pid_exists(run.router_pid) or psutil.Process(run.router_pid).status() == psutil.STATUS_ZOMBIE
    assert port_is_free(port), f"something still listens on port {port}"
    return log


def agent_statuses(run: CliRun) -> list[str]:
    with sqlite3.connect(run.data_dir / "database.db") as db:
        return [row[0] for row in db.execute("SELECT status FROM agents")]


def test_sigterm_stops_at_once_when_nobody_is_working(tmp_path):
    port = free_port()
    run = launch(tmp_path, port)
    assert "worker_id=worker_1&" in run.url and "worker_2, worker_3" in run.log()
    os.kill(run.proc.pid, signal.SIGTERM)
    log = assert_clean_exit(run, port)
    assert "waiting for 0 unit(s) in flight" in log


# node's own option: every process it starts first blocks this long, as a busy machine's router start does
SLOW_ROUTER_START = "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3000);\n"


def test_a_router_slow_to_start_is_waited_for_before_the_server_connects(tmp_path):
    # a fresh clone's CI at 108f073: the router took over the 1 s Mephisto gives it, the server's first connection
    # was refused and the launch's log showed "ERROR ... Connect call failed ... attempting restart"
    slow = tmp_path / "slow_start.js"
    slow.write_text(SLOW_ROUTER_START)
    port = free_port()
    run = CliRun("sm_eval", tmp_path, [f"mephisto.architect.port={port}", *OVERRIDES], real_process=True,
                 env={**os.environ, "NODE_OPTIONS": f"--require {slow}"})
    wait_for(lambda: "channel open" in run.log(), 60, "the server's channel to the router")
    os.kill(run.proc.pid, signal.SIGTERM)
    assert_clean_exit(run, port)  # no ERROR, no Traceback


@contextlib.contextmanager
def ctrl_c_with_a_worker_in_flight(run: CliRun, tmp_path):
    """A worker's page open on their first SM-Turn step, then one Ctrl-C; yields the page."""
    require_chromium()
    with chromium_page(tmp_path) as page:
        page.goto(run.worker_url("busy_worker"))
        page.wait_for_selector("[data-testid=annotate]", timeout=60000)
        assert agent_statuses(run) == ["in task"]
        os.killpg(run.proc.pid, signal.SIGINT)  # as the terminal sends it
        wait_for(lambda: "waiting for 1 unit(s) in flight" in run.log(), 30, "the first stop's message")
        yield page


@pytest.mark.browser
def test_one_ctrl_c_waits_for_the_worker_in_flight_and_a_second_stops_at_once(tmp_path):
    port = free_port()
    run = launch(tmp_path, port)
    with ctrl_c_with_a_worker_in_flight(run, tmp_path):
        time.sleep(3)
        assert run.proc.poll() is None, "the first Ctrl-C must wait for the worker in flight"
        os.killpg(run.proc.pid, signal.SIGINT)
        time.sleep(0.5)
        os.killpg(run.proc.pid, signal.SIGINT)  # an impatient third one, while it shuts down
        log = assert_clean_exit(run, port)
    assert "Stopping now" in log and "1 disconnect" in log
    assert agent_statuses(run) == ["disconnect"]  # partial, never counted as submitted


@pytest.mark.browser
def test_one_ctrl_c_lets_the_worker_in_flight_finish_then_exits(tmp_path):
    port = free_port()
    run = launch(tmp_path, port)
    with ctrl_c_with_a_worker_in_flight(run, tmp_path) as page:
        page.check("[data-testid=mark-engaging]")
        page.click("[data-testid=submit-marks]")
        page.fill(".response-text-input", "I finish what I started")
        page.click(".submit-response")
        page.wait_for_selector("[data-testid=annotate]", timeout=30000)
        page.check("[data-testid=mark-none]")
        page.click("[data-testid=submit-marks]")
        page.wait_for_selector("[data-testid=rate]", timeout=30000)
        for criterion in ("engaging", "humanlike", "interesting"):
            page.check(f"[data-testid=likert-{criterion}-4]")
        page.click("[data-testid=submit-ratings]")
        page.click("[data-testid=submit-hit]", timeout=60000)
        log = assert_clean_exit(run, port)  # the run ends by itself once that unit is submitted
    assert "Stopping now" not in log and "1 completed" in log
    # the second unit was never started and is withdrawn: nobody new could take it
    assert agent_statuses(run) == ["completed"]


CTRL_C_WHILE_EXITING = """
import atexit, os, signal, sys, time
# Ctrl-C at its default, as a shell starts a command: an in-process test before this one in the same pytest
# worker can leave SIGINT ignored, which exec keeps (the "before" case then exited quietly: -n 7, 2026-11-29)
signal.signal(signal.SIGINT, signal.default_int_handler)
if sys.argv[1] == "saved":
    from parlai_dialeval.scripts.launch import exit_at_once_on_interrupt
    exit_at_once_on_interrupt()
print("Saved in the data folder", flush=True)
atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(30)))  # Ctrl-C during the clean-up
"""


def test_a_ctrl_c_after_the_run_is_saved_ends_the_launch_at_once_and_quietly():
    # a fresh clone's CI at e6bb891: test_packaging's launch printed a KeyboardInterrupt traceback from torch's
    # finalizers under "Saved in ...", its second Ctrl-C having come while the interpreter cleaned up
    before = subprocess.run([sys.executable, "-c", CTRL_C_WHILE_EXITING, "before"], capture_output=True, text=True,
                            timeout=60)
    assert "Traceback" in before.stderr  # what happened without the handler: the clean-up interrupted
    start = time.monotonic()
    saved = subprocess.run([sys.executable, "-c", CTRL_C_WHILE_EXITING, "saved"], capture_output=True, text=True,
                           timeout=60)
    assert saved.returncode == 0 and "Traceback" not in saved.stderr and "Saved in" in saved.stdout, saved
    assert time.monotonic() - start < 25  # at once, not after the clean-up's 30 s


def test_launch_on_a_port_in_use_names_the_holder(tmp_path):
    port = free_port()
    holder = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "0.0.0.0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: not port_is_free(port), 20, "the port to be taken")
        done = subprocess.run(DIALEVAL + ["launch", "sm_eval", f"mephisto.architect.port={port}", *OVERRIDES,
                                          "--mephisto-data", str(tmp_path / "mephisto")],
                              capture_output=True, text=True, timeout=240)
    finally:
        holder.terminate()
        holder.wait(10)
    assert done.returncode == 2 and "is running" not in done.stdout
    assert re.fullmatch(rf"dialeval: error: port {port} is in use by pid {holder.pid} \(\S*python\S* -m http.server\): "
                        r"stop that process or launch with mephisto.architect.port=ANOTHER_PORT",
                        done.stderr.strip().splitlines()[-1]), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
