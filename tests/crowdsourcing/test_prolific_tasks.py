"""Every protocol task on Prolific (MockArchitect in-process, the fake Prolific): a participant who arrives
through the study URL the fake hands out completes one unit, and the fake then shows the submission
awaiting review with the study's completion code."""
from __future__ import annotations

import pytest

from .prolific_harness import (ProlificMockRun, fake_prolific, register, scale_items, scale_overrides,
                               submit_scale_unit)

pytestmark = pytest.mark.slow


@pytest.fixture
def fake():
    with fake_prolific() as fake:
        yield fake


def test_scale_designs_unit_via_prolific(tmp_path, fake, monkeypatch):
    register(tmp_path / "mephisto", fake, monkeypatch)
    run = ProlificMockRun("scale_designs", tmp_path / "mephisto", 3281, fake,
                          scale_overrides(scale_items(tmp_path / "items.jsonl", 1), "sd_prolific"))
    try:
        submit_scale_unit(run, "PID_SD_1")
    finally:
        run.shutdown()
