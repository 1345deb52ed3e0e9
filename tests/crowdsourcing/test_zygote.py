"""The tests' fork server (zygote.py, issue 39): a forked `dialeval` behaves as the real process does for what
the tests look at: output, exit status, the caller's environment and folder, its own process group, signals."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from .protocol_harness import DIALEVAL
from .zygote import run, zygote

# each test also starts the real process it compares with (3-6 s of CPU each)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.environ.get("DIALEVAL_TEST_ZYGOTE") == "0",
                                                   reason="DIALEVAL_TEST_ZYGOTE=0: no zygote")]


def real(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(DIALEVAL + list(args), capture_output=True, text=True, timeout=240)


def test_a_forked_command_prints_and_exits_as_the_real_one(tmp_path):
    for args in (["validate", "--data", str(tmp_path / "missing.jsonl")], ["launch", "--list"],
                 ["analyze_pairwise", "--no-such-option"]):
        forked, expected = run(args, 240), real(*args)
        assert (forked.returncode, forked.stdout, forked.stderr) == (expected.returncode, expected.stdout,
                                                                     expected.stderr), args
    assert forked.returncode == 2 and "required: --data, --out" in forked.stderr


def test_a_forked_command_gets_the_callers_environment_and_folder(tmp_path, monkeypatch):
    zygote()  # started before the variable is set
    monkeypatch.setenv("DIALEVAL_MEPHISTO_DATA", str(tmp_path / "from_env"))
    monkeypatch.chdir(tmp_path)
    done = run(["export", "some_task", "--out", "relative.jsonl"], 240)
    assert done.returncode == 2 and str(tmp_path / "from_env") in done.stderr, done.stderr


def _interruptible() -> None:
    """Ctrl-C at its default, as a shell starts a command: an ignored SIGINT survives exec, and an in-process
    test run before this one in the same pytest worker can leave it ignored (the real process then ignored
    the test's SIGINT and sat on its input until the pipe closed: 2 of 3 suites on 2026-11-27)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def blocked_on_input(tmp_path, name: str, forked: bool):
    """`dialeval interactive -m repeat_query` waiting for a message on a pipe nobody writes to, in its own
    process group (as a launch is)."""
    log = tmp_path / f"{name}.log"
    reading, writing = os.pipe()
    with open(log, "w") as out:
        child = (zygote().start(["interactive", "-m", "repeat_query"], reading, out.fileno(), out.fileno(), True)
                 if forked else subprocess.Popen(DIALEVAL + ["interactive", "-m", "repeat_query"], stdin=reading,
                                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                                 preexec_fn=_interruptible))
    os.close(reading)
    end = time.time() + 120
    while "Enter Your Message" not in log.read_text() and time.time() < end and child.poll() is None:
        time.sleep(0.2)
    return child, writing, log


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_forked_command_leads_its_process_group_and_ends_by_a_signal_as_the_real_one(tmp_path, sig):
    codes = {}
    for forked in (True, False):
        child, writing, log = blocked_on_input(tmp_path, f"forked_{forked}", forked)
        assert child.poll() is None, log.read_text()[-2000:]
        assert os.getpgid(child.pid) == child.pid
        os.killpg(child.pid, sig)  # as CliRun.stop (Ctrl-C) and CliRun.crash (kill -9) do
        codes[forked] = child.wait(60)
        os.close(writing)
    assert codes[True] == codes[False], codes
    assert codes[True] != 0
