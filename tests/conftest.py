"""Shared test fixtures: where the third-party data lives, and skipping cleanly without it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DIALEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (third-party evaluation data); tests using it skip with a reason when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"third-party data not found at {SHARED_DATA} (see README 'Test data'); "
                    "set DIALEVAL_SHARED_DATA to its location")
    return SHARED_DATA
