"""Mephisto's environment: its data directory and the Python 3.11 fix, before Mephisto loads.

Mephisto asks for a data directory on stdin (``input()``) the first time it needs one; we set
``mephisto.utils.dirs.loaded_data_dir`` instead, so nothing ever prompts (CI has no stdin).
"""
from __future__ import annotations

import os
from pathlib import Path

import parlai_dialeval  # noqa: F401  (installs the Python 3.11 dataclass fix before mephisto loads)

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR_ENV = "DIALEVAL_MEPHISTO_DATA"


def default_data_dir() -> Path:
    """$DIALEVAL_MEPHISTO_DATA, else data/mephisto in the repository (gitignored)."""
    return Path(os.environ.get(DATA_DIR_ENV) or REPO_ROOT / "data" / "mephisto").resolve()


def prepare_mephisto(data_dir: str | Path | None = None) -> Path:
    """Point Mephisto at ``data_dir`` (created if needed) and register our abstractions."""
    path = Path(data_dir).resolve() if data_dir else default_data_dir()
    path.mkdir(parents=True, exist_ok=True)
    import mephisto.utils.dirs as dirs

    dirs.loaded_data_dir = str(path)
    # LocalArchitect builds its server in site-packages/tmp/local_server_<run id>; run ids restart at 1
    # in every database, so two launches (tests, several projects) would collide there.
    import mephisto.abstractions.architects.local_architect as local_architect

    local_architect.get_mephisto_tmp_dir = lambda: str(path / "tmp")
    from parlai_dialeval.crowdsourcing.platform import blueprint  # noqa: F401  (registers our blueprints)

    return path


def database_path(data_dir: str | Path) -> Path:
    """Where Mephisto's SQLite database lives inside a data directory (Mephisto's own layout)."""
    return Path(data_dir) / "database.db"
