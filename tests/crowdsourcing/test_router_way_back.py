"""Issue 50, items 10 and 13, on the real router with this test as the Mephisto server (no Mephisto, no browser).

The way back (crowdsourcing/router/dialeval_claims.js): a participant's page holds a registration; another browser
naming it gets nothing while that page is there (no agent, no token, nothing reaches the server), nor with a guessed
code once it is gone; with the code the page showed, after the page has been silent `reclaim_seconds`, the new browser
gets the same agent and the old page's secret no longer opens it. On Prolific the verified identity is the proof
(`reclaim_by_identity`), still only after that time.

The replay (crowdsourcing/router/dialeval_replay.js): live updates to a page are numbered; what a dropping socket lost
reaches the page's next socket, from the number the page says it has; a page that loads afresh gets no replay; what a
heartbeat says the page has is forgotten.
"""
from __future__ import annotations

import asyncio
import json
import secrets

import httpx
import pytest
import websockets

from parlai_dialeval.compat import mephisto_claims
from parlai_dialeval.compat import mephisto_router as compat_router
from parlai_dialeval.tls import shared_tls_context

from .test_resume_router import built_router
from .test_router_hostile import require_router, run_router

pytestmark = pytest.mark.slow  # each test starts a node router and waits out the reclaim time
RECLAIM = 2.0  # seconds, as a test sets mephisto.blueprint.router_reclaim_seconds
MAX_CODE_TRIES = 10  # wrong codes a registration takes (dialeval_claims.js, docs/security.md)
VICTIM = {"worker_name": "victim", "agent_registration_id": "a1-victim", "assignment_id": "a1", "provider_type": "mock"}


def router_with(tmp_path, **claims):
    router = built_router(tmp_path)
    config = json.loads((router / mephisto_claims.CLAIMS_CONFIG).read_text())
    (router / mephisto_claims.CLAIMS_CONFIG).write_text(json.dumps({**config, "first_socket_seconds": 0,
                                                                  "reclaim_seconds": RECLAIM, **claims}))
    return router


class Server:
    """The Mephisto server's side of the router: answers each request for an agent with agent "7"."""

    def __init__(self, port: int):
        self.port, self.requests, self.packets = port, [], []

    async def __aenter__(self):
        self.socket = await websockets.connect(f"ws://127.0.0.1:{self.port}", max_size=None)
        await self.socket.send(json.dumps({"packet_type": "alive", "subject_id": compat_router.SYSTEM_ID,
                                           "data": {"agent_token": compat_router.token(compat_router.SYSTEM_ID)}}))
        self.reader = asyncio.create_task(self.read())
        return self

    async def __aexit__(self, *exc):
        self.reader.cancel()
        await self.socket.close()

    async def read(self):
        async for raw in self.socket:
            packet = json.loads(raw)
            self.packets.append(packet)
            if packet["packet_type"] == "register_agent":
                self.requests.append(packet["data"]["provider_data"])
                await self.socket.send(json.dumps({"packet_type": "agent_details", "subject_id": "mephisto", "data": {
                    "request_id": packet["data"]["request_id"], "agent_id": "7", "worker_id": "1"}}))

    async def live_update(self, data: dict) -> None:
        await self.socket.send(json.dumps({"packet_type": "client_bound_live_update", "subject_id": "7", "data": data}))


async def ask(port: int, secret: str, **extra) -> httpx.Response:
    async with httpx.AsyncClient(verify=shared_tls_context()) as http:
        return await http.post(f"http://127.0.0.1:{port}/request_agent", timeout=10, json={
            "provider_data": {**VICTIM, "dialeval_secret": secret, **extra}, "client_timestamp": 0})


async def page_socket(port: int, seen: int | None = None):
    socket = await websockets.connect(f"ws://127.0.0.1:{port}")
    data = {} if seen is None else {"dialeval_seen": seen}
    await socket.send(json.dumps({"packet_type": "alive", "subject_id": "7", "agent_token": compat_router.token("7"),
                                  "data": data}))
    return socket


async def heartbeat(socket, seen: int | None = None) -> None:
    data = {} if seen is None else {"dialeval_seen": seen}
    await socket.send(json.dumps({"packet_type": "heartbeat", "subject_id": "7", "agent_token": compat_router.token("7"),
                                  "data": data}))


async def live_updates(socket, wait: float = 1.0) -> list[dict]:
    """The live updates the page's socket receives within ``wait`` seconds."""
    got = []
    try:
        while True:
            packet = json.loads(await asyncio.wait_for(socket.recv(), wait))
            if packet["packet_type"] == "client_bound_live_update":
                got.append(packet)
    except asyncio.TimeoutError:
        return got


def refused(answer: httpx.Response) -> str:
    assert answer.status_code == 403, answer.text
    body = answer.json()
    assert body["data"]["agent_id"] is None and "agent_token" not in answer.text and "dialeval_resume_code" not in answer.text
    return body["data"]["failure_reason"]


def test_the_way_back_needs_the_code_and_the_pages_silence(tmp_path):
    require_router()

    async def scenario(port):
        async with Server(port) as server:
            first, second = secrets.token_hex(32), secrets.token_hex(32)
            given = (await ask(port, first)).json()["data"]
            code = given["dialeval_resume_code"]
            assert given["agent_id"] == "7" and len(code) == 9 and code[4] == "-"
            page = await page_socket(port)
            await heartbeat(page)
            # the same link in another browser, while the page is there: nothing, with or without a code
            before = len(server.requests)
            held = refused(await ask(port, second))
            early = await ask(port, second, dialeval_resume_code=code)
            # the new page asks again by itself when told, as often as it is told: no such try counts as a wrong code
            # (each while the first page is still heard, however slowly a loaded machine answers)
            again = []
            for _ in range(MAX_CODE_TRIES):
                await heartbeat(page)
                again.append(await ask(port, second, dialeval_resume_code=code))
            await page.close()  # the participant's browser dies
            await asyncio.sleep(RECLAIM + 0.5)
            wrong_answer = await ask(port, second, dialeval_resume_code="ABCD-EFGH")
            wrong = refused(wrong_answer)
            assert len(server.requests) == before  # none of these reached the server
            back = await ask(port, second, dialeval_resume_code=code.lower().replace("-", " "))
            after = refused(await ask(port, first))  # the dead browser's secret opens it no more
            return held, early, again, wrong_answer, back.json()["data"], after, server.requests

    (held, early, again, wrong_answer, back, after, requests), log = run_router(router_with(tmp_path), scenario)
    assert held.startswith("This study is already open for you in another browser")
    # too soon: the page is told the seconds to wait (Resume.jsx ReclaimWait), as the text says them
    for answer in (early, *again):
        assert refused(answer).startswith("This study was open for you in another browser a moment ago")
        wait = answer.json()["data"]["dialeval_reclaim_wait"]
        assert 1 <= wait <= RECLAIM and f"try again in {wait} seconds" in refused(answer)
    wrong = refused(wrong_answer)
    assert wrong.startswith("That code is not the one") and "dialeval_reclaim_wait" not in wrong_answer.json()["data"]
    assert back["agent_id"] == "7" and back["agent_token"] == compat_router.token("7")
    assert back["dialeval_resume_code"] != ""  # the new page shows its own code
    assert after.startswith("This study is already open")
    # the server got the new page's claim, never a secret or a code
    assert len(requests) == 2 and "dialeval_secret" not in requests[1] and "dialeval_resume_code" not in requests[1]
    assert requests[0]["dialeval_claim"] != requests[1]["dialeval_claim"]
    assert "taken back by a new page after its resume code" in log


def test_on_prolific_the_verified_identity_is_the_way_back_after_the_same_wait(tmp_path):
    require_router()

    async def scenario(port):
        async with Server(port):
            await ask(port, secrets.token_hex(32))
            page = await page_socket(port)
            await heartbeat(page)
            early = refused(await ask(port, secrets.token_hex(32)))
            await page.close()
            await asyncio.sleep(RECLAIM + 0.5)
            return early, (await ask(port, secrets.token_hex(32))).json()["data"]

    (early, back), _ = run_router(router_with(tmp_path, reclaim_by_identity=True), scenario)
    assert early.startswith("This study was open for you in another browser a moment ago")
    assert back["agent_id"] == "7"


def test_without_a_way_back_a_held_registration_stays_held(tmp_path):
    require_router()

    async def scenario(port):
        async with Server(port):
            code = (await ask(port, secrets.token_hex(32))).json()["data"].get("dialeval_resume_code")
            await asyncio.sleep(RECLAIM + 0.5)  # no page ever spoke: silent since it was given out
            return code, refused(await ask(port, secrets.token_hex(32), dialeval_resume_code="ABCD-EFGH"))

    (code, answer), _ = run_router(router_with(tmp_path, reclaim_seconds=0), scenario)
    assert code is None and answer.startswith("This study is already open") and "contact the researcher" in answer


def test_a_new_socket_gets_what_a_dropping_one_lost_and_a_fresh_page_nothing(tmp_path):
    require_router()

    async def scenario(port):
        async with Server(port) as server:
            await ask(port, secrets.token_hex(32))
            first = await page_socket(port)
            await server.live_update({"text": "one", "update_id": "u1"})
            got_first = await live_updates(first)
            # the socket is dropping: the router still sends into it, the page gets nothing of it
            await server.live_update({"text": "two", "update_id": "u2"})
            await server.live_update({"text": "three", "update_id": "u3"})
            await asyncio.sleep(0.5)
            await first.close()
            second = await page_socket(port, seen=got_first[-1]["dialeval_seq"])
            got_second = await live_updates(second)
            await second.close()
            await asyncio.sleep(0.3)
            await server.live_update({"text": "four", "update_id": "u4"})  # no page there: kept
            # a page loaded afresh (the server gave it everything with its agent): what was kept is forgotten
            fresh = await page_socket(port)
            got_fresh = await live_updates(fresh)
            await fresh.close()
            await asyncio.sleep(0.3)
            # that page's socket drops before it got anything more: from 0, only what came after its load
            third = await page_socket(port, seen=0)
            got_third = await live_updates(third)
            await heartbeat(third, seen=got_fresh[-1]["dialeval_seq"])
            return got_first, got_second, got_fresh, got_third

    (first, second, fresh, third), _ = run_router(router_with(tmp_path), scenario)
    assert [(p["data"]["text"], p["dialeval_seq"]) for p in first] == [("one", 1)]
    assert [(p["data"]["text"], p["dialeval_seq"]) for p in second] == [("two", 2), ("three", 3)]
    # "four" reached the fresh page as what the router kept for a closed socket (Mephisto's own queue), not replayed
    assert [(p["data"]["text"], p["dialeval_seq"]) for p in fresh] == [("four", 4)]
    assert third == []


def test_what_waited_for_the_pages_socket_reaches_it_before_what_comes_after(tmp_path):
    """A live update sent before the page's socket is alive waits in the router's queue (the main thread sends it
    within 50 ms); one sent just after the alive went straight into the socket, so the page got number 2 first,
    took it for its first number (everything before it the server gave the page with its agent) and dropped number
    1 as had: a page waited for ever for its next phase (two CI failures, PW-Turn's choose panel and the dashboard's
    topic form). Order kept, and the page's rule (transport.js receivedOnce) then drops nothing."""
    require_router()

    async def scenario(port):
        async with Server(port) as server:
            await ask(port, secrets.token_hex(32))
            rounds = []
            for n in range(3):  # each a page loaded afresh: its first socket, then reloads
                await server.live_update({"text": f"before {n}", "update_id": f"b{n}"})
                await asyncio.sleep(0.2)  # in the router's queue: no socket, or a closed one
                socket = await page_socket(port)
                await asyncio.sleep(0.005)
                await server.live_update({"text": f"after {n}", "update_id": f"a{n}"})
                rounds.append([p["data"]["text"] for p in await live_updates(socket, wait=0.5)])
                await socket.close()
            return rounds

    rounds, _ = run_router(router_with(tmp_path), scenario)
    assert rounds == [[f"before {n}", f"after {n}"] for n in range(3)]
