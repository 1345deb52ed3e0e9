"""Mephisto's environment: its data directory and the Python 3.11 fix, before Mephisto loads.

Mephisto asks for a data directory on stdin (``input()``) the first time it needs one; it is set in
code instead (``compat/mephisto.py``, ``use_data_dir``), so nothing ever prompts (CI has no stdin).
"""
from __future__ import annotations

from pathlib import Path

import parlai_dialeval  # noqa: F401  (installs the Python 3.11 dataclass fix before mephisto loads)
from parlai_dialeval.compat import mephisto as compat_mephisto
from parlai_dialeval.home import mephisto_dir


def default_data_dir() -> Path:
    """$DIALEVAL_MEPHISTO_DATA, else mephisto/ in the dialeval home (parlai_dialeval/home.py)."""
    return mephisto_dir()


def prepare_mephisto(data_dir: str | Path | None = None) -> Path:
    """Point Mephisto at ``data_dir`` (created if needed) and register our abstractions."""
    path = Path(data_dir).resolve() if data_dir else default_data_dir()
    path.mkdir(parents=True, exist_ok=True)
    compat_mephisto.use_data_dir(path)
    import mephisto.abstractions.architects.local_architect as local_architect

    local_architect.build_router = _router_builder(local_architect.build_router)
    compat_mephisto.metrics_server_off()
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
