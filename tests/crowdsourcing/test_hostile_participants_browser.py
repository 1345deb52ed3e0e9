"""The page's own check of a message's length, in a real browser (issue 26): `dialeval launch sm_eval` with
a 40-character limit; a worker in headless Chromium types a longer reply, is told on the page and cannot
send it, shortens it and carries on; the export holds only what was sent."""
from __future__ import annotations

import pytest

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, require_chromium
from .protocol_harness import CliRun, pause, rate_partner_and_submit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(400)]
TOO_LONG = "I really enjoy cooking pasta with fresh basil from the garden"  # 61 characters
SHORT = "I enjoy cooking pasta"


def test_an_over_long_message_is_refused_on_the_page(tmp_path):
    require_chromium()
    run = CliRun("sm_eval", tmp_path, [f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=sm_limits",
                                       "mephisto.blueprint.num_conversations=1", "sm_eval.seed=0",
                                       "sm_eval.num_turns=2", "~sm_eval.models.retrieval",
                                       "sm_eval.limits.max_message_chars=40"])
    try:
        with chromium_page(tmp_path) as page:
            page.goto(run.worker_url("limits_worker"))
            page.wait_for_selector("[data-testid=annotate]", timeout=60000)
            pause(page, 2)
            page.check("[data-testid=mark-engaging]")
            page.click("[data-testid=submit-marks]")
            page.wait_for_selector(".response-text-input", timeout=30000)
            pause(page, 2)
            page.fill(".response-text-input", TOO_LONG)
            warning = page.wait_for_selector("[data-testid=too-long]", timeout=5000)
            assert "61 characters long; the limit is 40" in warning.inner_text()
            assert page.locator(".submit-response").is_disabled()
            page.press(".response-text-input", "Enter")  # Enter does not send it either
            pause(page, 2)
            assert page.locator("[data-testid=annotate]").count() == 0
            page.fill(".response-text-input", SHORT)  # shortened: the warning goes, the reply is sent
            assert page.locator("[data-testid=too-long]").count() == 0
            pause(page, 1)
            page.click(".submit-response")
            page.wait_for_selector("[data-testid=annotate]", timeout=30000)
            page.check("[data-testid=mark-none]")
            page.click("[data-testid=submit-marks]")
            page.wait_for_selector("[data-testid=rate]", timeout=30000)
            rate_partner_and_submit(page, {"engaging": 4, "humanlike": 2, "interesting": 5})
        run.proc.wait(120)
    finally:
        run.stop()

    out = tmp_path / "sm.jsonl"
    run.export("sm_limits", out)
    conv = read_jsonl([out]).conversations.iloc[0]
    assert [t["text"] for t in conv["turns"] if t["speaker"] == "human"] == ["Hi!", SHORT]
