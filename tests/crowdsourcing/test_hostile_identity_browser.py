"""Issue 38, item 3 in a real browser: the page keeps its secret (localStorage) across a closed browser, and the
victim's address opened in another browser gets nothing of theirs.

`dialeval launch live_chat_da conf=offline_small`, headless Chromium. The victim chats, closes the browser;
someone else opens the victim's address (same worker and assignment id) in a browser of their own: the page says
the study is open in another browser and shows no chat. The victim opens the address again in their browser: the
chat is back and goes on. The export holds the victim's messages, each once, and no one else's.
"""
from __future__ import annotations

import json

import pytest

from .protocol_harness import chromium_page, pause, require_chromium, start_live_chat
from .test_hostile_identity import launch
from .test_live_chat_da_pace_browser import chat

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
BEFORE, AFTER = "I am reading a book about lighthouses", "the keepers lived there for months"


def test_the_victims_address_in_another_browser_gets_nothing_and_the_victim_gets_back_in(tmp_path):
    require_chromium()
    task = "identity_browser"
    run, _ = launch(tmp_path, task, 1)
    url = run.worker_url("victim")
    try:
        with chromium_page(tmp_path / "victim") as page:
            page.goto(url)
            start_live_chat(page, "books", timeout=90000)
            chat(page, [BEFORE])
        with chromium_page(tmp_path / "someone_else") as page:  # a fresh profile: no secret
            page.goto(url)
            page.wait_for_selector(".alert-danger", timeout=60000)
            assert "already open for you in another browser" in page.inner_text(".alert-danger")
            pause(page, 2)
            assert page.locator("[data-testid=chat-panel]").count() == 0 and BEFORE not in page.content()
        with chromium_page(tmp_path / "victim") as page:  # the victim's browser again: its localStorage kept
            page.goto(url)
            page.wait_for_selector(f".dialeval-msg-self:has-text('{BEFORE}')", timeout=60000)
            chat(page, [AFTER])
    finally:
        run.stop()
    out = tmp_path / f"{task}.jsonl"
    run.export(task, out)
    convs = [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "conversation"]
    assert {c["worker_id"] for c in convs} == {"victim_sandbox"}
    assert [t["text"] for c in convs for t in c["turns"] if t["speaker"] == "human"] == [BEFORE, AFTER]
    assert "registration held by another page" in run.log()
