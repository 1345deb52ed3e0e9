"""The shared frontend package (crowdsourcing/frontend): one webpack entry per task.

``src/tasks/<task>/index.jsx`` is built by ``npm run build`` (install.sh runs it) to
``build/<task>/bundle.js``; every task serves ``src/static/index.html`` (no CDN links) around it.
"""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.errors import DialevalError

FRONTEND_DIR = Path(__file__).resolve().parents[1] / "frontend"
BUILD_DIR = FRONTEND_DIR / "build"
CATALOGUE_DIR = FRONTEND_DIR / "src" / "i18n"  # the pages' own words, one <language>.json each
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


def page_language(language: str) -> str:
    """``language`` when the worker pages have a catalogue for it (src/i18n/<language>.json), else a clear error."""
    known = sorted(path.stem for path in CATALOGUE_DIR.glob("*.json"))
    if language not in known:
        raise DialevalError(f"no worker-page catalogue for language {language!r}: the pages have {', '.join(known)} "
                            f"(add {CATALOGUE_DIR}/{language}.json, translated from en.json, and rebuild the pages)")
    return language


def chat_page_options(language: str, **more) -> dict:
    """A chat task's ``frontend_task_opts``: its page's language (checked) and the seconds a bot's reply may take
    before the page tells the participant it is slow: the patience threshold the launch's speed check and the
    dashboard warn at (platform/speed.py), one setting for all three."""
    from parlai_dialeval.crowdsourcing.platform.speed import PATIENCE_SECONDS

    return {"language": page_language(language), "slow_reply_seconds": PATIENCE_SECONDS, **more}
