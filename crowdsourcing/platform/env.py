"""Mephisto's environment: its data directory and the Python 3.11 fix, before Mephisto loads.

Mephisto asks for a data directory on stdin (``input()``) the first time it needs one; we set
``mephisto.utils.dirs.loaded_data_dir`` instead, so nothing ever prompts (CI has no stdin).
"""
from __future__ import annotations

from pathlib import Path

import parlai_dialeval  # noqa: F401  (installs the Python 3.11 dataclass fix before mephisto loads)
from parlai_dialeval import compat_router
from parlai_dialeval.home import mephisto_dir


def default_data_dir() -> Path:
    """$DIALEVAL_MEPHISTO_DATA, else mephisto/ in the dialeval home (parlai_dialeval/home.py)."""
    return mephisto_dir()


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
    compat_router.install()  # our node router: its own dependencies, session tokens, limits
    import mephisto.operations.operator as operator

    # Mephisto's Prometheus exporter binds port 3031 in every launch (a second launch logs a traceback
    # there) and only feeds a Grafana setup this project never installs: leave it off.
    operator.start_metrics_server = lambda *args, **kwargs: None
    operator.launch_prometheus_server = lambda *args, **kwargs: False
    from parlai_dialeval.crowdsourcing.platform import blueprint  # noqa: F401  (registers our blueprints)

    return path


def database_path(data_dir: str | Path) -> Path:
    """Where Mephisto's SQLite database lives inside a data directory (Mephisto's own layout)."""
    return Path(data_dir) / "database.db"
