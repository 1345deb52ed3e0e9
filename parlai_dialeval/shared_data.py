"""Where third-party evaluation data lives by default, and the error to raise when it is missing.

Lookup order: an explicit option (e.g. ``--fed-datafile``), then ``$DIALEVAL_SHARED_DATA``, then the
``shared/data`` folder beside the repository checkout (``../shared/data``).
"""
from __future__ import annotations

import os
from pathlib import Path

from parlai_dialeval.errors import DialevalError

ENV_VAR = "DIALEVAL_SHARED_DATA"
_REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The default folder of third-party data (it may not exist)."""
    return Path(os.environ.get(ENV_VAR) or _REPO.parent / "shared" / "data")


def resolve(explicit: str | os.PathLike | None, relative: str, what: str, option: str, source: str) -> Path:
    """``explicit`` if given, else ``shared_data_dir()/relative``; raise a DialevalError naming
    where to get ``what`` (``source``) and which ``option`` points to it when the path is absent."""
    path = Path(explicit) if explicit else shared_data_dir() / relative
    if not path.exists():
        raise DialevalError(
            f"{what} not found at {path}. Get it from {source}, then pass {option} PATH "
            f"or set ${ENV_VAR} to the folder that holds {relative}")
    return path
