"""ACUTE-Eval's onboarding gives two tries (acute.onboarding_tries; Prolific's comprehension-check policy,
docs/crowdsourcing.md "Checks and Prolific's policy"), at human pace in headless Chromium: one worker fails
the practice round twice and is asked to return the study, a reload gives no third try; another fails
once, is offered the second try, reloads, passes and judges the unit. The export keeps every try
(``meta.try``, ``meta.passed``). On a phone (360x740; look_at checks each screen at 390x844 too), so
ACUTE is completed at phone size as every protocol is (issue 41)."""
from __future__ import annotations

import pytest

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.testing.ports import free_port

from .browser_page import SMALL_PHONE, chromium_page, look_at
from .test_acute_browser import judge, launch

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(400)]
READ_MS = 2500  # a person reading a pair of short conversations


def practice_try(page) -> str:
    """The practice round's 'Try n of m' line, once the page shows a pair."""
    page.wait_for_selector("[data-testid=pair]", timeout=60000)
    return page.inner_text("[data-testid=practice]")


def test_two_tries_then_screened_out_or_through(tmp_path):
    run = launch(tmp_path, free_port(), "acute_tries")
    try:
        with chromium_page(tmp_path, phone=SMALL_PHONE) as page:
            page.goto(run.worker_url("careless"))
            assert "Try 1 of 2" in practice_try(page)
            judge(page, good=False, pause_ms=READ_MS)
            page.wait_for_selector("[data-testid=retry-onboarding]", timeout=60000)
            assert "1 more try" in page.inner_text("[data-testid=retry-onboarding]")
            look_at(page, "acute_retry")
            page.wait_for_timeout(3000)  # reads the message
            page.click("[data-testid=try-again]")
            assert "Try 2 of 2" in practice_try(page)
            judge(page, good=False, pause_ms=READ_MS)
            page.wait_for_selector("[data-testid=screened-out]", timeout=60000)
            assert "Return submission" in page.inner_text("[data-testid=screened-out]")
            look_at(page, "acute_screened_out")
            page.wait_for_timeout(2000)
            page.reload()  # no third try
            page.wait_for_selector(".alert-danger", timeout=60000)
            assert page.query_selector("[data-testid=pair]") is None

            page.goto(run.worker_url("careful"))
            assert "Try 1 of 2" in practice_try(page)
            look_at(page, "acute_practice")
            judge(page, good=False, pause_ms=READ_MS)  # a slip at the first try
            page.wait_for_selector("[data-testid=try-again]", timeout=60000)
            page.wait_for_timeout(3000)
            page.click("[data-testid=try-again]")
            assert "Try 2 of 2" in practice_try(page)
            judge(page, pause_ms=READ_MS)  # right this time: the unit follows on the same page
            page.wait_for_function("!document.body.innerText.includes('Practice round')", timeout=60000)
            look_at(page, "acute_pair")
            judge(page, pause_ms=1000)
            page.wait_for_selector("[data-testid=done]", timeout=30000)
            look_at(page, "acute_done")
            page.wait_for_timeout(1500)
        run.proc.wait(120)
    finally:
        run.stop()
    out = tmp_path / "acute.jsonl"
    exported = run.export("acute_tries", out)
    assert exported.returncode == 0, exported.stderr
    assert "4 onboarding attempt(s) read" in exported.stdout
    comparisons = read_jsonl([out]).comparisons
    comparisons["who"] = comparisons["worker_id"].str.removesuffix("_sandbox")
    practice = comparisons[comparisons["onboarding"].eq(True)]
    tries = {(row.who, row.meta["try"], row.meta["passed"]) for row in practice.itertuples()}
    assert tries == {("careless", 1, False), ("careless", 2, False), ("careful", 1, False), ("careful", 2, True)}
    units = comparisons[~comparisons["onboarding"].eq(True)]
    assert len(units) == 3 and set(units["who"]) == {"careful"}
