"""Issue 32: the test page (page_client.py) when the server dies under it, in milliseconds, no server.

A websocket send on a socket that has closed raises at once, without yielding to the event loop, before the
page's reader has seen the close. The page then tried again at once, for ever: its loop never yielded, so no
other page of the load generator or of test_crash_resume.py ran (none reached the relaunched server), and
each try left its act in the outbox (the 300-participant kill run's generator grew to 6 GB; the 20-worker
crash test hung about once in 7 runs). Now a failed send marks the socket lost and keeps nothing, and the
page reloads.
"""
from __future__ import annotations

import asyncio

import websockets
from websockets.frames import Close

from .page_client import PageClient


class ClosedSocket:
    """A websocket whose peer is gone: every send raises as websockets' own does."""

    def __init__(self):
        self.sends = 0

    async def send(self, message) -> None:
        self.sends += 1
        raise websockets.ConnectionClosedError(None, Close(1006, ""), None)

    async def close(self) -> None:
        pass


def page_on_a_dead_socket() -> PageClient:
    page = PageClient("p", 1, inputs=3, think=0.0, deadline=0)
    page.agent_id, page.token, page.ws, page.connected, page.tasks = "5", "t", ClosedSocket(), True, []
    page.state = {"phase": "chat", "inputs": 0, "min_inputs": 3}
    page.replies = set()
    return page


def test_a_send_on_a_closed_socket_marks_it_lost_and_keeps_nothing():
    page = page_on_a_dead_socket()
    assert asyncio.run(page.act({"action": "message"}, "hello")) is False
    assert page.connected is False  # the run loop reloads the page instead of acting again
    assert page.outbox == {} and page.unconfirmed == {}  # nothing was sent: nothing to resend beside the new copy


def test_a_page_whose_socket_died_lets_the_other_pages_run():
    async def both() -> int:
        page, ticks = page_on_a_dead_socket(), 0

        async def other_page():
            nonlocal ticks
            for _ in range(5):
                ticks += 1
                await asyncio.sleep(0)

        async def dead_page():
            while page.connected and page.ws.sends < 1000:  # the run loop's condition to act again
                await page.step(None)

        await asyncio.gather(dead_page(), other_page())
        assert page.ws.sends == 1, f"the page sent {page.ws.sends} times on a dead socket"
        return ticks

    assert asyncio.run(both()) == 5
