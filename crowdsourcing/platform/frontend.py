"""The shared frontend package (crowdsourcing/frontend): one webpack entry per task.

``src/tasks/<task>/index.jsx`` is built by ``npm run build`` (install.sh runs it) to
``build/<task>/bundle.js``; every task serves ``src/static/index.html`` (no CDN links) around it.
"""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.errors import DialevalError

FRONTEND_DIR = Path(__file__).resolve().parents[1] / "frontend"
BUILD_DIR = FRONTEND_DIR / "build"
STATIC_DIR = FRONTEND_DIR / "src" / "static"


def bundle_path(entry: str) -> Path:
    """The built bundle of one frontend entry; a clear error when the frontend was never built."""
    path = BUILD_DIR / entry / "bundle.js"
    if not path.is_file():
        if not (FRONTEND_DIR / "src" / "tasks" / entry / "index.jsx").is_file():
            raise DialevalError(f"no frontend entry {entry!r}: expected {FRONTEND_DIR}/src/tasks/{entry}/index.jsx")
        raise DialevalError(f"frontend not built: {path} is missing; run "
                            f"`cd {FRONTEND_DIR} && npm ci && npm run build` (install.sh does this)")
    return path


def static_files() -> list[Path]:
    return [STATIC_DIR / "index.html", STATIC_DIR / "notif.mp3"]
