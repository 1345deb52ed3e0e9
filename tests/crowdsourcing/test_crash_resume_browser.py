"""Issue 32 in a real browser: kill -9 of the server mid-chat, a relaunch, and the person carries on.

`dialeval launch live_chat_da conf=offline_small`, headless Chromium at a person's pace. After two answered
messages the worker sends a third that never reaches the server (Playwright drops it on the page's
socket, as a network would while the server dies); the page marks it "sending...". The launch and its
router are then killed with SIGKILL (``CliRun.crash``) and launched again (``CliRun.relaunch``). The worker
reloads the tab: the page shows the half chat again, resends the unconfirmed message to the relaunched
server (transport.js keeps it in sessionStorage; the route delivers every resent copy twice), the bot answers
it, and the worker finishes the HIT. The export holds the unit once, every message once and in order.
"""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, require_chromium
from .protocol_harness import CliRun, live_chat_conversation, pause, rate_this_chatbot
from .test_live_chat_da_pace_browser import chat

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
SAID = ["I have been reading a novel about sailors", "It is long but I like the storms in it"]
ON_ITS_WAY = "and this one was on its way when the server died"


def _lose_once_then_double(seen: dict):
    """A websocket route that drops the first packet carrying ON_ITS_WAY (the socket stays open) and delivers
    each later one twice, as a flaky network or a second socket of the page would: the server must keep it once."""

    def route(ws):
        server = ws.connect_to_server()

        def to_server(message):
            data = json.loads(message).get("data") or {}
            if data.get("text") == ON_ITS_WAY:
                seen["sent"].append(data)
                if len(seen["sent"]) == 1:
                    return
                server.send(message)
            server.send(message)

        ws.on_message(to_server)
        server.on_message(ws.send)

    return route


def test_a_person_carries_on_after_kill_9_and_nothing_is_lost_or_doubled(tmp_path):
    require_chromium()
    port = free_port()
    overrides = ["conf=offline_small", f"mephisto.architect.port={port}", "mephisto.task.task_name=crash_browser",
                 "mephisto.blueprint.num_conversations=1", "live_chat.min_inputs=3", "live_chat.seed=0"]
    run = CliRun("live_chat_da", tmp_path, overrides, real_process=True)
    runs, seen = [run], {"sent": []}
    try:
        with chromium_page(tmp_path) as page:
            page.route_web_socket(lambda url: url.startswith("ws://"), _lose_once_then_double(seen))
            page.goto(run.worker_url("crash_worker"))
            page.wait_for_selector("[data-testid=topic-form]", timeout=90000)
            pause(page, 2)
            page.fill("#topic-input", "books")
            page.check("#attitude-like")
            page.click("[data-testid=start-chat]")
            page.wait_for_selector("[data-testid=chat-panel]")
            chat(page, SAID)
            page.fill(".response-text-input", ON_ITS_WAY)
            page.click(".submit-response")
            page.wait_for_selector("[data-testid=msg-pending]")  # not confirmed: the server never got it
            pause(page, 1)
            run.crash()
            runs.append(run.relaunch())
            assert "Resuming task 'crash_browser'" in runs[-1].log()
            pause(page, 3)  # the person notices the page stopped working, and reloads it
            page.reload()
            # the half chat is back, then the resent message and the bot's answer to it (a fresh bot is built
            # first: minutes on a loaded 2-core machine running other browser tests)
            page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-self').length >= {len(SAID) + 1}",
                                   timeout=240000)
            page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length >= {len(SAID) + 1}",
                                   timeout=240000)
            shown = page.locator(".dialeval-msg-self").all_inner_texts()
            assert [next(t for t in shown if text in t) for text in SAID + [ON_ITS_WAY]]  # all three shown
            assert page.locator("[data-testid=msg-pending]").count() == 0
            pause(page, 2)
            rate_this_chatbot(page, 70)
            for slot in (1, 2):
                live_chat_conversation(page, [f"conversation {slot}, message {k}" for k in range(3)], rating=60)
            page.wait_for_selector("[data-testid=feedback-form]", timeout=60000)
            page.fill("#feedback", "the page stopped once, then it was fine")
            page.click("[data-testid=send-feedback]")
            page.click("[data-testid=submit-hit]", timeout=30000)
            pause(page, 2)
            assert runs[-1].proc.wait(120) == 0  # the run's only unit is done: it ends by itself
    finally:
        for launched in runs:
            launched.stop()
    # The page sends the act again on every new socket until the server acknowledges it (a reconnect before the
    # reload, or a slow relaunch, adds copies): one act throughout, and what went to the new agent names the first.
    first, later = seen["sent"][0], seen["sent"][1:]
    assert later and {data["update_id"] for data in later} == {first["update_id"]}
    to_new_agent = [data for data in later if data["id"] != first["id"]]
    assert to_new_agent and {data.get("dialeval_sent_to") for data in to_new_agent} == {first["id"]}

    out = tmp_path / "crash_browser.jsonl"
    done = runs[-1].export("crash_browser", out)
    assert "continued after a restart" in done.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    convs = sorted((r for r in records if r["type"] == "conversation"), key=lambda c: c["slot"])
    assert [c["slot"] for c in convs] == [0, 1, 2] and {c["status"] for c in convs} == {"complete"}
    assert len({c["assignment_id"] for c in convs}) == 1  # the unit exported once
    first = [t["speaker"] == "human" and t["text"] for t in convs[0]["turns"]]
    assert first == [SAID[0], False, SAID[1], False, ON_ITS_WAY, False]  # each once, in order, each answered
