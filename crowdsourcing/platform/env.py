"""Mephisto's environment: its data directory and the Python 3.11 fix, before Mephisto loads.

Mephisto asks for a data directory on stdin (``input()``) the first time it needs one; it is set in
code instead (``compat/mephisto.py``, ``use_data_dir``), so nothing ever prompts (CI has no stdin).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import parlai_dialeval  # noqa: F401  (installs the Python 3.11 dataclass fix before mephisto loads)
from parlai_dialeval.compat import mephisto as compat_mephisto
from parlai_dialeval.compat import mephisto_arrivals, mephisto_door
from parlai_dialeval.compat import mephisto_router, mephisto_threads
from parlai_dialeval.home import mephisto_dir


def default_data_dir() -> Path:
    """$DIALEVAL_MEPHISTO_DATA, else mephisto/ in the dialeval home (parlai_dialeval/home.py)."""
    return mephisto_dir()


def data_dir_path(data_dir: str | Path | None = None) -> Path:
    """The data directory ``prepare_mephisto`` would use, without making it (readers check it first)."""
    return Path(data_dir).resolve() if data_dir else default_data_dir()


def prepare_mephisto(data_dir: str | Path | None = None) -> Path:
    """Point Mephisto at ``data_dir`` (created if needed, its owner's alone) and register our abstractions."""
    path = data_dir_path(data_dir)
    path.mkdir(parents=True, exist_ok=True)
    keep_private(path)
    compat_mephisto.use_data_dir(path)
    mephisto_router.install()  # our node router: its own dependencies, session tokens, limits
    compat_mephisto.metrics_server_off()
    compat_mephisto.prompt_run_tracking()  # a finished or stopped run ends within a second, not 10-20
    compat_mephisto.prompt_unit_launching()  # nor does a stop wait out the unit launcher's 10 s sleep
    compat_mephisto.joined_force_shutdown()  # and a stop takes what its steps take, not at least 1.5 s
    compat_mephisto.require_onboarding_end()  # the unit follows an onboarding's submit at once (blueprint.py)
    mephisto_door.bounded_logging()  # a stranger's text is never logged whole, nor through rich
    mephisto_threads.atomic_state_writes()  # agents' state files stay readable under load
    mephisto_threads.chat_states_written_behind()  # and are written beside a message's path, not in it
    mephisto_arrivals.arrivals_checked()  # a provider may refuse an identity before it gets a place (Prolific)
    mephisto_threads.closed_channels_tolerated()  # two stops at once, and a stop's last updates, raise nothing
    from parlai_dialeval.crowdsourcing.platform import blueprint  # noqa: F401  (registers our blueprints)

    return path


def keep_private(data_dir: Path) -> None:
    """The data directory (raw chat, participants' ids, Prolific's completion code and payment ledger) and its
    databases readable by their owner only, also where an earlier version or another umask left them open."""
    for folder in (data_dir, data_dir / "prolific"):
        if folder.is_dir():
            folder.chmod(0o700)
    for database in (*data_dir.glob("database.db*"), *data_dir.glob("prolific/prolific.db*")):
        # a running task's SQLite journal may be gone by now (a launch's dashboard calls this mid-write)
        with contextlib.suppress(FileNotFoundError):
            database.chmod(0o600)


def database_path(data_dir: str | Path) -> Path:
    """Where Mephisto's SQLite database lives inside a data directory (Mephisto's own layout)."""
    return Path(data_dir) / "database.db"
