"""Outputs appear complete or not at all, and are their owner's alone: write to a temporary file beside the
target, then rename. A command's outputs hold worker ids and participants' words (workers.csv,
report.html, an export): every file written here is 0600 and every folder made here 0700 whatever the
umask; a researcher who wants to share a report copies it (docs/reports.md, "Who can read the outputs")."""
from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path

from parlai_dialeval.errors import DialevalError

FILE_MODE, FOLDER_MODE = 0o600, 0o700
_FOLDERS_MADE: set[str] = set()  # folders replace_text made or found (made again if removed since)


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
    if not folder.is_dir():  # one line, not NotADirectoryError, for a path whose --out check missed this
        raise DialevalError(f"{target}: cannot make this folder, {folder} is an existing file")
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


def replace_text(path: str, text: str) -> None:
    """``path`` now holds ``text`` (UTF-8, 0600) and nothing else, atomically: written to a part file of this
    thread's beside it (one writer a thread; the last rename wins), then renamed over it. The lean form of
    ``atomic_open`` for a server's writes after every message: four system calls where ``atomic_open`` makes
    about ten (folder checks, a unique name, chmod), and in a server of hundreds of participants each call
    is a release and retake of the interpreter lock that all their threads contend for (docs/scaling.md)."""
    folder = os.path.dirname(path)
    if folder not in _FOLDERS_MADE:
        make_folder(folder)
        _FOLDERS_MADE.add(folder)
    part = f"{path}.{threading.get_ident()}.part"
    data = memoryview(text.encode("utf-8"))
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    try:
        handle = os.open(part, flags, FILE_MODE)
    except FileNotFoundError:
        make_folder(folder)
        handle = os.open(part, flags, FILE_MODE)
    try:
        while data:
            data = data[os.write(handle, data):]
    finally:
        os.close(handle)
    os.replace(part, path)
