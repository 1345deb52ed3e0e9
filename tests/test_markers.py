"""The `browser` and `slow` marks are what the fast lane leaves out and what orders the files longest first
(tests/conftest.py): a test file that drives Chromium without the `browser` mark ran in the fast lane and was
scheduled as a quick file (test_streaming_browser.py and test_endpoints_browser.py were)."""
from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_file_that_drives_chromium_is_marked_browser():
    unmarked = [path.relative_to(TESTS).as_posix() for path in sorted(TESTS.rglob("test_*.py"))
                if ("chromium_page(" in (text := path.read_text(encoding="utf-8")) or "require_chromium()" in text)
                and "pytest.mark.browser" not in text]
    assert unmarked == []
