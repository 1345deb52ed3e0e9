"""A pre-imported fork server for the tests' `dialeval` processes (issue 39): each `dialeval launch` or
`dialeval export` imports ParlAI, torch, Mephisto and Hydra first, about 3 s of CPU of its 3-6, some 60 launches
and 70 commands a suite. The zygote (one per pytest worker) imports them once; each command is a fork of it that
runs the real entry point (``parlai_dialeval.cli.main``) with the caller's argv, environment, working folder and
stdio (the file descriptors passed over a unix socket), in a session of its own when asked (a launch: Ctrl-C and
kill -9 reach its process group). ``Forked`` is what the caller holds instead of a ``subprocess.Popen``: the
child's ``pid`` and, relayed by the process that forked it, its exit status (negative for a signal, as Popen's).

What a forked child shares with its siblings and a real process would not: the modules imported before the fork
(none reads the environment when imported: the child's environment is the caller's before it runs) and the hash
seed of str (PYTHONHASHSEED); numpy's, torch's and ``random``'s generators are seeded afresh. Tests of start-up
itself, of packaging, of signals and of crashes start real processes (``CliRun(..., real_process=True)``).
"""
from __future__ import annotations

import atexit
import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# what launches, exports and analyses import (the retrieval bot: sklearn; analyses: statsmodels), none of it
# reading the environment when imported (matplotlib.pyplot does: its backend)
PRELOAD = ("parlai_dialeval.cli", "parlai_dialeval.scripts.launch", "parlai_dialeval.scripts.export",
           "parlai_dialeval.crowdsourcing.platform.runner", "mephisto.operations.operator", "parlai.core.script",
           "parlai.core.worlds", "parlai.core.agents", "hydra", "omegaconf", "pandas", "scipy.stats",
           "sklearn.feature_extraction.text", "statsmodels.api")
MESSAGE_LIMIT = 1 << 20  # argv + environment of one command
DIALEVAL = [sys.executable, "-m", "parlai_dialeval.cli"]  # the real command


class Forked:
    """A `dialeval` command forked by the zygote: ``pid``, ``poll()``, ``wait(timeout)``, ``returncode``."""

    def __init__(self, connection: socket.socket, args: list[str]):
        self.args, self._connection, self.returncode = args, connection, None
        connection.settimeout(60)
        self.pid = int(connection.recv(64))
        connection.settimeout(None)

    def poll(self) -> int | None:
        return self.wait(0) if self.returncode is None and self._ready(0) else self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not self._ready(timeout):
                raise subprocess.TimeoutExpired(self.args, timeout)
            status = self._connection.recv(64)
            self._connection.close()
            if not status:
                raise RuntimeError(f"the zygote's process forwarding {self.args} ended without its exit status")
            self.returncode = int(status)
        return self.returncode

    def _ready(self, timeout: float | None) -> bool:
        return bool(select.select([self._connection], [], [], timeout)[0])


class Zygote:
    """The fork server of this process (started on first use, stopped at exit)."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="dialeval-zygote-"))
        self.address = str(self.folder / "socket")
        with open(self.folder / "zygote.log", "w") as log:
            self.proc = subprocess.Popen([sys.executable, __file__, self.address], stdout=subprocess.PIPE,
                                         stderr=log, start_new_session=True)
        if self.proc.stdout.readline().strip() != b"ready":
            self.proc.kill()
            raise RuntimeError(f"the test zygote did not start: {(self.folder / 'zygote.log').read_text()[-2000:]}")
        atexit.register(self.stop)

    def start(self, args: list[str], stdin: int, stdout: int, stderr: int, new_session: bool) -> Forked:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        connection.connect(self.address)
        request = {"args": args, "env": dict(os.environ), "cwd": os.getcwd(), "new_session": new_session}
        socket.send_fds(connection, [json.dumps(request).encode()], [stdin, stdout, stderr])
        return Forked(connection, ["dialeval", *args])

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


_zygote: Zygote | None = None
_lock = threading.Lock()


def zygote() -> Zygote | None:
    """This process's zygote, or None where DIALEVAL_TEST_ZYGOTE=0 (every command then a real process)."""
    global _zygote
    if os.environ.get("DIALEVAL_TEST_ZYGOTE", "1") == "0":
        return None
    with _lock:
        if _zygote is None or _zygote.proc.poll() is not None:
            _zygote = Zygote()
        return _zygote


def run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run(dialeval ARGS, capture_output=True, text=True, timeout=...)`` through the zygote."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull) as stdin:
        child = zygote().start(args, stdin.fileno(), out.fileno(), err.fileno(), new_session=False)
        try:
            code = child.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            raise
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(child.args, code, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))


def dialeval_run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    """`dialeval ARGS` to its end, as ``subprocess.run(..., capture_output=True, text=True)`` gives it: forked
    from this process's zygote, or a real process where DIALEVAL_TEST_ZYGOTE=0."""
    if zygote() is None:
        return subprocess.run(DIALEVAL + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    return run([str(a) for a in args], timeout)


# ------------------------------------------------------------------------------------- the zygote process
def _serve(address: str) -> dict:
    """Accept commands forever; returns only in a forked command, with its request."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    assert threading.active_count() == 1, f"threads before forking: {threading.enumerate()}"
    gc.freeze()  # the preloaded objects stay out of the children's collections (no copy-on-write of their pages)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(address)
    server.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the forwarding processes are reaped by the kernel
    print("ready", flush=True)
    parent = os.getppid()
    while True:
        if not select.select([server], [], [], 5)[0]:
            if os.getppid() != parent:  # the test process is gone (killed): so is the zygote's use
                os._exit(0)
            continue
        connection, _ = server.accept()
        message, fds, _, _ = socket.recv_fds(connection, MESSAGE_LIMIT, 3)
        if os.fork() == 0:  # forwards the command's pid and exit status
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:
                connection.close()
                if request["new_session"]:
                    os.setsid()
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                    os.close(fd)
                return request
            for fd in fds:
                os.close(fd)
            connection.send(str(pid).encode())
            _, status = os.waitpid(pid, 0)
            connection.send(str(os.waitstatus_to_exitcode(status)).encode())
            os._exit(0)
        connection.close()
        for fd in fds:
            os.close(fd)


def _as_a_fresh_process(request: dict) -> list[str]:
    import random

    import numpy
    import torch

    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.path[0] = request["cwd"]  # where `python -m` looks first (the zygote's was this file's folder)
    sys.argv = [str(Path(sys.modules["parlai_dialeval.cli"].__file__)), *request["args"]]
    random.seed()
    numpy.random.seed()
    torch.seed()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return request["args"]


def _end_as_python_would(args: list[str]) -> None:
    """Run the command and end as the interpreter ends a script (exit status, traceback, atexit handlers,
    stdio flushed, death by SIGINT after an unhandled Ctrl-C) but without tearing down the preloaded modules,
    which costs a forked child 0.3-0.8 s for nothing."""
    from parlai_dialeval.cli import main

    interrupted = False
    try:
        code = main(args)
    except SystemExit as stop:
        code = stop.code
    except BaseException as error:  # what the interpreter does with any uncaught exception
        sys.excepthook(type(error), error, error.__traceback__)
        code, interrupted = 1, isinstance(error, KeyboardInterrupt)
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


if __name__ == "__main__":
    _end_as_python_would(_as_a_fresh_process(_serve(sys.argv[1])))
