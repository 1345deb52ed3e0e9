"""Issue 38, item 3 and issue 50, item 10 in a real browser: the page keeps its secret (localStorage) across a closed
browser, the victim's address opened in another browser gets nothing of theirs, and a participant whose browser died
gets back in from a new browser with the code their page showed, once that page has been silent the set time.

`dialeval launch live_chat_da conf=offline_small mephisto.blueprint.router_reclaim_seconds=5`, headless Chromium.
The victim chats, notes the code the page shows, closes the browser; someone else opens the victim's address (same
worker and assignment id) in a browser of their own at once, with no code and with a guessed one: the page says the
study is open in another browser (or that the code is wrong) and shows no chat (tests/crowdsourcing/
test_router_way_back.py also tries the right code before the set time: nothing). The victim opens the address again in their browser: the chat is
back and goes on. Their browser dies; past the set time they open the address in a new browser (no secret of theirs
there), give the code, get their chat back and finish the HIT. The export holds the victim's messages, each once, and
no one else's.
"""
from __future__ import annotations

import json
import time

import pytest

from .browser_page import chromium_page, require_chromium
from .protocol_harness import live_chat_conversation, pause, rate_this_chatbot, start_live_chat, submit_hit
from .test_hostile_identity import INPUTS, launch
from .test_live_chat_da_pace_browser import chat

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
BEFORE, AFTER = "I am reading a book about lighthouses", "the keepers lived there for months"
BACK = "after my browser crashed I am back"
RECLAIM = 5  # seconds a page must be silent before its session may be taken back (router_reclaim_seconds)


def give_code(page, code: str) -> None:
    page.wait_for_selector("[data-testid=resume-form]", timeout=60000)
    page.fill("#resume-code", code)
    pause(page, 1)
    page.click("[data-testid=resume-button]")  # the page reloads, asking with the code


def test_the_victims_address_in_another_browser_gets_nothing_and_the_victim_gets_back_in(tmp_path):
    require_chromium()
    task = "identity_browser"
    run, _ = launch(tmp_path, task, 1, f"mephisto.blueprint.router_reclaim_seconds={RECLAIM}")
    url = run.worker_url("victim")
    try:
        with chromium_page(tmp_path / "victim") as page:
            page.goto(url)
            start_live_chat(page, "books", timeout=90000)
            chat(page, [BEFORE])
            code = page.inner_text("[data-testid=resume-code] b")
        with chromium_page(tmp_path / "someone_else") as page:  # a fresh profile: no secret, at once
            page.goto(url)
            page.wait_for_selector(".alert-danger", timeout=60000)
            assert "already open for you in another browser" in page.inner_text(".alert-danger")
            give_code(page, "ABCD-EFGH")  # a guess (refused as too early or as wrong, as the seconds fall)
            page.wait_for_selector(".alert-danger", timeout=60000)
            refusal = page.inner_text(".alert-danger")
            assert "a moment ago" in refusal or "That code is not the one" in refusal
            pause(page, 2)
            assert page.locator("[data-testid=chat-panel]").count() == 0 and BEFORE not in page.content()
        with chromium_page(tmp_path / "victim") as page:  # the victim's browser again: its localStorage kept
            page.goto(url)
            page.wait_for_selector(f".dialeval-msg-self:has-text('{BEFORE}')", timeout=60000)
            chat(page, [AFTER])
            assert page.inner_text("[data-testid=resume-code] b") == code
        died = time.monotonic()  # the victim's browser dies
        with chromium_page(tmp_path / "victim_new_browser") as page:  # a new browser: none of the victim's storage
            pause(page, max(0.0, RECLAIM + 1 - (time.monotonic() - died)))
            page.goto(url)
            give_code(page, code)
            page.wait_for_selector(f".dialeval-msg-self:has-text('{AFTER}')", timeout=60000)
            assert page.locator(".dialeval-msg-self").count() == 2  # their chat so far, once
            chat(page, [BACK])
            rate_this_chatbot(page, 60)
            for slot in (1, 2):
                live_chat_conversation(page, [f"slot {slot}, message {k}" for k in range(INPUTS)], rating=60)
            page.wait_for_selector("[data-testid=feedback-form]", timeout=30000)
            page.click("[data-testid=send-feedback]")
            submit_hit(page)
        run.proc.wait(120)  # the one unit submitted: the run ends by itself
    finally:
        run.stop()
    out = tmp_path / f"{task}.jsonl"
    run.export(task, out)
    convs = [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "conversation"]
    assert {c["worker_id"] for c in convs} == {"victim_sandbox"}
    assert [c["status"] for c in convs] == ["complete"] * 3 and {c["submission"] for c in convs} == {"submitted"}
    human = [t["text"] for c in convs for t in c["turns"] if t["speaker"] == "human"]
    assert human == [BEFORE, AFTER, BACK, *[f"slot {s}, message {k}" for s in (1, 2) for k in range(INPUTS)]]
    log = run.log()
    assert "registration held by another page" in log and "taken back by a new page after its resume code" in log
