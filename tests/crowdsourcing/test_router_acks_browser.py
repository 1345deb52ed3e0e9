"""The page resends what the server has not acknowledged, in a real browser (`dialeval launch live_chat_da`,
node router, headless Chromium). Playwright sits on the page's websocket: it drops one chat message on its
way to the router, and later the server's acknowledgement of another (the socket closed once the bot's
reply to it has passed), closing the page's socket each time as a network failure would. The page
(crowdsourcing/frontend/src/components/transport.js) reconnects and sends the lost message again (the bot answers it); the lost acknowledgement reaches its next socket
again (the router sends a page's new socket what its old one lost: dialeval_replay.js), and the export holds each
message exactly once. Until the server confirms a message, the chat log marks it
"sending...".
"""
from __future__ import annotations

import json
import time

import pytest

from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, require_chromium
from .protocol_harness import CliRun, start_live_chat

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(420)]
LOST = "this message is lost on its way"
ACK_LOST = "this one arrives but its acknowledgement is lost"


def _faulty_network(seen: dict):
    """A websocket route: the first packet carrying LOST never reaches the router, the first
    acknowledgement of ACK_LOST never reaches the page; the page's socket is closed after each."""

    def route(ws):
        server = ws.connect_to_server()

        def to_server(message):
            packet = json.loads(message)
            data = packet.get("data") or {}
            if packet.get("packet_type") == "mephisto_bound_live_update":
                seen["sent"].append(data.get("text"))
                if data.get("text") == ACK_LOST:
                    seen["ack_lost_id"] = data.get("update_id")
                if data.get("text") == LOST and not seen["dropped_message"]:
                    seen["dropped_message"] = True
                    ws.close()
                    return
            server.send(message)

        def to_page(message):
            data = json.loads(message).get("data") or {}
            acked = data.get("dialeval_ack") or []
            seen["acked"].extend(acked)
            if seen.get("ack_lost_id") in acked and not seen["dropped_ack"]:
                # the world confirms a message once stored, before the bot's reply (issue 41): the reply
                # still passes, then the socket fails, with the confirmation never delivered
                seen["dropped_ack"] = seen["close_after_reply"] = True
                return
            ws.send(message)
            if seen.get("close_after_reply") and data.get("text"):
                seen["close_after_reply"] = False
                ws.close()

        ws.on_message(to_server)
        server.on_message(to_page)

    return route


def _say(page, text):
    before = page.locator(".dialeval-msg-other").count()
    page.fill(".response-text-input", text)
    page.click(".submit-response")
    # the bot's answer: for LOST only after the page reconnected and sent it again
    page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length > {before}", timeout=90000)


def _start_chat(page, url: str) -> None:
    page.goto(url)
    start_live_chat(page, "books", timeout=90000)


def test_page_resends_unacknowledged_messages_after_a_reconnect(tmp_path):
    require_chromium()
    run = CliRun("live_chat_da", tmp_path, ["conf=offline_small", f"mephisto.architect.port={free_port()}",
                                             "mephisto.task.task_name=acks_browser",
                                             "mephisto.blueprint.num_conversations=1", "live_chat.seed=0"])
    seen = {"sent": [], "acked": [], "dropped_message": False, "dropped_ack": False}
    try:
        with chromium_page(tmp_path) as page:
            page.route_web_socket(lambda url: url.startswith("ws://"), _faulty_network(seen))
            # Whether the chat log ever marked a sent message as not yet confirmed (ChatLog.jsx).
            page.add_init_script("new MutationObserver(() => { if (document.querySelector('[data-testid=msg-pending]'))"
                                 " window.dialevalSawPending = true; }).observe(document, {subtree: true, childList: true});")
            _start_chat(page, run.worker_url("acks_worker"))
            _say(page, LOST)
            _say(page, ACK_LOST)
            _say(page, "and a third one after both reconnects")
            # the page's resend of ACK_LOST after its reconnect, acknowledged again (route handlers run while
            # the page is waited on), and nothing left "sending...": then the checks below
            end = time.monotonic() + 30
            while time.monotonic() < end and not (seen["acked"].count(seen["ack_lost_id"]) >= 2
                                                  and page.locator("[data-testid=msg-pending]").count() == 0):
                page.wait_for_timeout(200)
            # The lost message was shown as "sending..." until its copy was stored; now nothing is pending.
            assert page.evaluate("window.dialevalSawPending === true")
            assert page.locator("[data-testid=msg-pending]").count() == 0
    finally:
        run.stop()
    assert seen["dropped_message"] and seen["dropped_ack"]
    # the lost message sent again (once, or more when the page opens another socket before the acknowledgement comes)
    assert seen["sent"].count(LOST) >= 2
    # the lost acknowledgement reaches the page's next socket again: the router keeps what it sends a page until the
    # page says it has it (dialeval_replay.js), or the page sends the message again and the server acknowledges that
    # copy again (the export: stored once)
    assert seen["acked"].count(seen["ack_lost_id"]) >= 2

    out = tmp_path / "out.jsonl"
    run.export("acks_browser", out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    human = [t["text"] for r in records if r["type"] == "conversation" for t in r["turns"] if t["speaker"] == "human"]
    assert human == [LOST, ACK_LOST, "and a third one after both reconnects"]


QUIETLY_LOST = "this message is lost while the socket stays open"


def _quietly_lossy_network(seen: dict):
    """A websocket route that drops the first packet carrying QUIETLY_LOST and keeps the socket open, as
    when the server's own link to the router restarted (issue 38): no reconnect tells the page."""

    def route(ws):
        server = ws.connect_to_server()

        def to_server(message):
            data = json.loads(message).get("data") or {}
            if data.get("text") == QUIETLY_LOST:
                seen["copies"] += 1
                if seen["copies"] == 1:
                    return
            server.send(message)

        ws.on_message(to_server)
        server.on_message(ws.send)
        seen["sockets"] += 1

    return route


def test_page_resends_an_unconfirmed_message_on_a_socket_that_never_dropped(tmp_path):
    require_chromium()
    from parlai_dialeval.testing.real_model import free_port

    run = CliRun("live_chat_da", tmp_path, ["conf=offline_small", f"mephisto.architect.port={free_port()}",
                                             "mephisto.task.task_name=acks_quiet_browser",
                                             "mephisto.blueprint.num_conversations=1", "live_chat.seed=0"])
    seen = {"copies": 0, "sockets": 0}
    try:
        with chromium_page(tmp_path) as page:
            page.route_web_socket(lambda url: url.startswith("ws://"), _quietly_lossy_network(seen))
            _start_chat(page, run.worker_url("quiet_worker"))
            _say(page, QUIETLY_LOST)  # answered only once the page sent it again, 8 s later
            _say(page, "and one after it")
            page.wait_for_function("document.querySelectorAll('[data-testid=msg-pending]').length === 0",
                                   timeout=30000)
    finally:
        run.stop()
    assert seen["copies"] >= 2 and seen["sockets"] == 1, seen  # sent again on the one socket it had

    out = tmp_path / "out.jsonl"
    run.export("acks_quiet_browser", out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    human = [t["text"] for r in records if r["type"] == "conversation" for t in r["turns"] if t["speaker"] == "human"]
    assert human == [QUIETLY_LOST, "and one after it"]


MARKDOWN = "**Preheat the oven** and *wait*"


def _dropping_socket(seen: dict):
    """A websocket route that passes everything, but lets the bot's first reply to MARKDOWN reach the router's side
    only: the page's socket is dropping when the reply comes, so the router's send succeeds and the page never gets
    it; the socket then closes, as a lost connection's does (issue 50, item 13)."""

    def route(ws):
        server = ws.connect_to_server()
        seen["sockets"] += 1

        def to_page(message):
            packet = json.loads(message)
            data = packet.get("data") or {}
            if seen["asked"] and not seen["dropped"] and data.get("text") and packet.get("dialeval_seq"):
                seen["dropped"] = packet["dialeval_seq"]
                ws.close()
                return
            ws.send(message)

        def to_server(message):
            data = json.loads(message).get("data") or {}
            if data.get("text") == MARKDOWN:
                seen["asked"] = True
            server.send(message)

        ws.on_message(to_server)
        server.on_message(to_page)

    return route


def test_a_reply_sent_while_the_socket_drops_reaches_the_page_when_it_reconnects(tmp_path):
    """The echo bot answers at once, into a socket that is dropping: the page never receives that reply on it. Its next
    socket says how far it had everything, and the router sends it the reply it lost (crowdsourcing/router/
    dialeval_replay.js); before, the participant waited, told nothing is lost, for a reply that had come. The reply's
    markdown shows as bold and italics, the participant's own stars as typed (issue 50, item 14). Then the researcher
    stops the study, and the page says so in its own words (item 11), not Mephisto's "Our server appears to have gone
    down"."""
    require_chromium()
    from parlai_dialeval.testing.real_model import free_port

    run = CliRun("live_chat_da", tmp_path, ["conf=offline_small", f"mephisto.architect.port={free_port()}",
                                             "mephisto.task.task_name=replay_browser",  # seed 2: the echo bot first
                                             "mephisto.blueprint.num_conversations=1", "live_chat.seed=2"])
    seen = {"asked": False, "dropped": 0, "sockets": 0}
    try:
        with chromium_page(tmp_path) as page:
            page.route_web_socket(lambda url: url.startswith("ws://"), _dropping_socket(seen))
            _start_chat(page, run.worker_url("replay_worker"))
            _say(page, MARKDOWN)  # answered only on the page's next socket
            assert seen["dropped"] and seen["sockets"] >= 2
            reply = page.locator(".dialeval-msg-other .dialeval-md").last
            assert reply.inner_text() == "Preheat the oven and wait"  # the echo bot's reply, rendered
            assert reply.locator("strong").inner_text() == "Preheat the oven" and reply.locator("em").count() == 1
            assert page.locator(".dialeval-msg-self bdi").last.inner_text() == MARKDOWN  # typed, not rendered
            assert page.locator(".dialeval-msg-other").count() == 1  # once, though sent twice
            run.stop()  # the researcher ends the study (Ctrl-C twice) with this participant mid-chat
            ended = page.wait_for_selector("[data-testid=inactive]", timeout=30000).inner_text()
            assert ended == "The researcher has ended this study. What you did is saved."
    finally:
        run.stop()
