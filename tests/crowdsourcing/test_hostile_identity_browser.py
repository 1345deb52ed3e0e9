"""Issue 38, item 3 and issue 50, item 10 in a real browser: the page keeps its secret (localStorage) across a closed
browser, the victim's address opened in another browser gets nothing of theirs, and a participant whose browser died
gets back in from a new browser with the code their page showed, once that page has been silent the set time.

`dialeval launch live_chat_da conf=offline_small mephisto.blueprint.router_reclaim_seconds=5`, headless Chromium.
The victim chats, notes the code the page shows, closes the browser; someone else opens the victim's address (same
worker and assignment id) in a browser of their own at once, with no code and with a guessed one: the page says the
study is open in another browser (or that the code is wrong) and shows no chat (tests/crowdsourcing/
test_router_way_back.py also tries the right code before the set time: nothing). The victim opens the address again in their browser: the chat is
back and goes on. They open the address in a new browser too (no secret of theirs there) and give the code while the
first is still open: too soon, so the new page keeps the code and says it will try it by itself; the first browser
dies, and once it has been silent the set time the new page is let in by itself with their chat, and they finish the
HIT. The export holds the victim's messages, each once, and no one else's.
"""
from __future__ import annotations

import json

import pytest

from .browser_page import chromium_page, look_at, require_chromium
from .protocol_harness import live_chat_conversation, pause, rate_this_chatbot, start_live_chat, submit_hit
from .test_hostile_identity import INPUTS, launch
from .test_live_chat_da_pace_browser import chat

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
BEFORE, AFTER = "I am reading a book about lighthouses", "the keepers lived there for months"
BACK = "after my browser crashed I am back"
# seconds a page must be silent before its session may be taken back (router_reclaim_seconds): longer than
# mephisto-task's 6 s between heartbeats, so a page still open is never that silent
RECLAIM = 8


def give_code(page, code: str) -> None:
    page.wait_for_selector("[data-testid=resume-form]", timeout=60000)
    page.fill("#resume-code", code)
    pause(page, 1)
    page.click("[data-testid=resume-button]")  # the page reloads, asking with the code


def test_the_victims_address_in_another_browser_gets_nothing_and_the_victim_gets_back_in(tmp_path):
    from playwright.sync_api import sync_playwright

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
            give_code(page, "ABCD-EFGH")  # a guess: kept to be tried later (too soon) or refused (wrong), as the seconds fall
            refusal = page.wait_for_selector(".alert-danger, [data-testid=reclaim-wait]", timeout=60000).inner_text()
            assert "tries it again by itself" in refusal or "That code is not the one" in refusal
            pause(page, 2)
            assert page.locator("[data-testid=chat-panel]").count() == 0 and BEFORE not in page.content()
        with sync_playwright() as pw, chromium_page(tmp_path / "victim", pw=pw) as first:  # their browser again
            first.goto(url)  # its localStorage kept
            first.wait_for_selector(f".dialeval-msg-self:has-text('{BEFORE}')", timeout=60000)
            chat(first, [AFTER])
            assert first.inner_text("[data-testid=resume-code] b") == code
            with chromium_page(tmp_path / "victim_new_browser", pw=pw) as page:  # a new one: none of their storage
                page.goto(url)
                give_code(page, code)  # the first browser is still open: too soon, and the page keeps the code
                waiting = page.wait_for_selector("[data-testid=reclaim-wait]", timeout=60000).inner_text()
                assert code in waiting and "tries it again by itself" in waiting and "try again in" not in waiting
                assert page.locator("[data-testid=resume-form]").count() == 0  # nothing to type again
                look_at(page, "live_chat_reclaim_wait")
                first.close()  # the victim's first browser dies; the new page gets in by itself once it is silent
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
    assert "way back asked while its page was heard" in log  # the code came too soon, and still brought them back
