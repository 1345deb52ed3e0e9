"""Outputs appear complete or not at all: write to a temporary file beside the target, then rename."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)


def owner_only() -> None:
    """From now on the files and folders this process creates are its owner's alone (umask 077), atomic
    outputs included: a crowdsourcing run's database, raw chat and exports hold participants' ids and words."""
    global _UMASK
    _UMASK = 0o077
    os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path in the target's folder; on success it replaces ``path`` atomically."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes files private; outputs get the process's usual permissions
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs):
    """Like ``open(path, mode)`` for writing, but the file appears only once the block succeeds."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **({"encoding": "utf-8"} if "b" not in mode else {}) | kwargs) as handle:
            yield handle
