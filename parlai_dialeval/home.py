"""Where parlai_dialeval keeps what it makes at run time: one folder, the same for a checkout and a wheel.

``$DIALEVAL_HOME``, else the per-user data folder ``$XDG_DATA_HOME/parlai_dialeval`` (by default
``~/.local/share/parlai_dialeval``). It holds ``mephisto/`` (Mephisto's database, agent data and router
builds; ``$DIALEVAL_MEPHISTO_DATA`` or ``--mephisto-data`` move just that) and ``offline_bots/`` (what
``dialeval build_offline_bots`` writes). Nothing is ever written inside the installed package.
"""
from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "DIALEVAL_HOME"
MEPHISTO_ENV = "DIALEVAL_MEPHISTO_DATA"


def dialeval_home() -> Path:
    # The XDG base-directory rule in two lines; platformdirs would be a new dependency for one path.
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(os.environ.get(HOME_ENV) or Path(data_home) / "parlai_dialeval").expanduser().resolve()


def mephisto_dir() -> Path:
    """Mephisto's data directory: $DIALEVAL_MEPHISTO_DATA, else mephisto/ in the dialeval home."""
    explicit = os.environ.get(MEPHISTO_ENV)
    return Path(explicit).expanduser().resolve() if explicit else dialeval_home() / "mephisto"


def offline_bots_dir() -> Path:
    """Where ``dialeval build_offline_bots`` writes by default and ``conf=offline_trained`` reads."""
    return dialeval_home() / "offline_bots"
