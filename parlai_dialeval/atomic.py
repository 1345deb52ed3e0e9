"""Outputs appear complete or not at all, and are their owner's alone: write to a temporary file beside the
target, then rename. A command's outputs hold worker ids and participants' words (workers.csv,
report.html, an export): every file written here is 0600 and every folder made here 0700 whatever the
umask; a researcher who wants to share a report copies it (docs/reports.md, "Who can read the outputs")."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

FILE_MODE, FOLDER_MODE = 0o600, 0o700


def owner_only() -> None:
    """From now on everything this process creates is its owner's alone (umask 077), files written by
    libraries too: every plugin command runs so (cli.py), and a crowdsourcing run's database, raw chat and
    exports hold participants' ids and words."""
    os.umask(0o077)


def make_folder(path: str | os.PathLike) -> Path:
    """``path`` and any missing folder above it, each made owner-only (an existing folder is left as it is:
    its owner chose its mode)."""
    target = Path(path)
    missing, folder = [], target
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            folder.mkdir(mode=FOLDER_MODE)
    return target


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path in the target's folder; on success it replaces ``path`` atomically."""
    target = Path(path)
    make_folder(target.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)  # made 0600
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, FILE_MODE)  # whatever a library writing to the path did to it
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
