"""A page the router answers "busy" asks again, in a real browser (`dialeval launch live_chat_da`, node
router, headless Chromium). While a relaunched server is away the router keeps what pages send it, up to a
bound; past it a request for an agent is answered 503 "busy" with a Retry-After
(crowdsourcing/router/dialeval_guard.js, tests/crowdsourcing/test_resume_router.py). mephisto-task makes
that request once and waits for ever on a failure, so the page's transport.js asks again after the
Retry-After. Here Playwright answers the page's first two requests for an agent "busy" as the router
would; the participant still gets the task and finishes the first step.
"""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, require_chromium
from .protocol_harness import CliRun

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]
BUSY_ANSWERS = 2


def test_a_page_answered_busy_asks_for_its_agent_again(tmp_path):
    require_chromium()
    run = CliRun("live_chat_da", tmp_path, ["conf=offline_small", f"mephisto.architect.port={free_port()}",
                                             "mephisto.task.task_name=busy_browser",
                                             "mephisto.blueprint.num_conversations=1", "live_chat.seed=0"])
    asked = []

    def busy_then_through(route):
        asked.append(route.request.post_data)
        if len(asked) <= BUSY_ANSWERS:
            route.fulfill(status=503, headers={"Retry-After": "1", "Content-Type": "application/json"},
                          body=json.dumps({"status": "busy", "reason": "the study's server is restarting"}))
        else:
            route.continue_()

    try:
        with chromium_page(tmp_path) as page:
            page.route("**/request_agent", busy_then_through)
            page.goto(run.worker_url("busy_worker"))
            page.wait_for_selector("[data-testid=topic-form]", timeout=90000)
            page.wait_for_timeout(2000)  # a person reads the form
            page.fill("#topic-input", "gardening")
            page.check("#attitude-like")
            page.click("[data-testid=start-chat]")
            page.wait_for_selector("[data-testid=chat-panel]", timeout=60000)
    finally:
        run.stop()
    assert len(asked) == BUSY_ANSWERS + 1  # asked again after each "busy", then once more: no flood
    assert len({json.loads(body)["provider_data"]["worker_name"] for body in asked}) == 1
