"""What `dialeval launch` leaves in the terminal: its own few lines and a closing banner (where participants
go, the dashboard, how to stop). Everything else printed while the task starts and runs (Mephisto's log
lines and mock unit URLs, the node router's, ParlAI's repeated warnings, progress bars) goes to a log file
in the data directory.

Redirected at the file descriptors rather than ``sys.stdout``: the node router is a child process that
inherits them, and logging handlers keep the stream objects they were given.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Iterator, TextIO

_terminal: TextIO | None = None  # the terminal while a launch sends everything else to its log


def say(text: str, logged: str | None = None) -> None:
    """A line for the person at the terminal, copied to the log (as ``logged`` where given: a secret such as
    the dashboard's token stays out of the file); a plain print where no launch redirects."""
    if _terminal is None:
        print(text, flush=True)
        return
    print(text if logged is None else logged, flush=True)
    _terminal.write(text + "\n")
    _terminal.flush()


def terminal_is_tty() -> bool:
    """Whether ``say`` reaches a terminal (stdout's own answer where no launch redirects)."""
    return (_terminal if _terminal is not None else sys.stdout).isatty()


def log_path(data_dir: Path, task: str) -> Path:
    """A new log file per launch (a resumed launch gets its own)."""
    return data_dir / "logs" / f"launch_{task}_{time.strftime('%Y%m%d-%H%M%S')}_{os.getpid()}.log"


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[Path]:
    """Within: file descriptors 1 and 2 (and so print, logging, warnings, child processes) write to ``path``;
    ``say`` still reaches the terminal. Restored on the way out, an exception included."""
    global _terminal
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    terminal = os.fdopen(os.dup(1), "w", buffering=1)
    with open(path, "a", buffering=1) as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        # the descriptors for child processes and handlers holding the streams; sys.stdout / sys.stderr too,
        # in case they are not the descriptors' own objects (a test's capture)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        _terminal = terminal
        try:
            yield path
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            _terminal = None
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            terminal.close()
