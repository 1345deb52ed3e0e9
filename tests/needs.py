"""What a test needs from outside the repository (Debian's chromium, ../shared, the real-model fixture,
the router's installed modules): a test without it skips with the reason, and fails under CI (env CI
set), where everything must be there."""
from __future__ import annotations

import os

import pytest


def needs(reason: str | None) -> None:
    """Skip with ``reason`` (None: nothing is missing), or fail under CI."""
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI: {reason}")
        pytest.skip(reason)
