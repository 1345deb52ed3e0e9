"""Mephisto's environment: its data directory and the Python 3.11 fix, before Mephisto loads.

Mephisto asks for a data directory on stdin (``input()``) the first time it needs one; we set
``mephisto.utils.dirs.loaded_data_dir`` instead, so nothing ever prompts (CI has no stdin).
"""
from __future__ import annotations

from pathlib import Path

import parlai_dialeval  # noqa: F401  (installs the Python 3.11 dataclass fix before mephisto loads)
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
    local_architect.build_router = _router_builder(local_architect.build_router)
    import mephisto.operations.operator as operator

    # Mephisto's Prometheus exporter binds port 3031 in every launch (a second launch logs a traceback
    # there) and only feeds a Grafana setup this project never installs: leave it off.
    operator.start_metrics_server = lambda *args, **kwargs: None
    operator.launch_prometheus_server = lambda *args, **kwargs: False
    from parlai_dialeval.crowdsourcing.platform import blueprint  # noqa: F401  (registers our blueprints)

    return path


ROUTER_RESEND = "if (error === undefined) {"


def _router_builder(build_router):
    """Mephisto's ``build_router``, then one fix to the copied node router (site-packages stays as it is).

    Its ws 5 send callback gets ``null`` on success, which the router takes for a failure: it sends
    every packet a second time 0.5 s later and prints ``null`` for each (Mephisto drops the copies by
    update id). Idempotent, so a wrapped builder is never wrapped twice in effect."""
    if getattr(build_router, "dialeval_fixed", False):
        return build_router

    def build(*args, **kwargs):
        router_dir = build_router(*args, **kwargs)
        server = Path(router_dir) / "server.js"
        if server.is_file():
            server.write_text(server.read_text().replace(ROUTER_RESEND, "if (error === undefined || error === null) {"))
        return router_dir

    build.dialeval_fixed = True
    return build


def database_path(data_dir: str | Path) -> Path:
    """Where Mephisto's SQLite database lives inside a data directory (Mephisto's own layout)."""
    return Path(data_dir) / "database.db"
