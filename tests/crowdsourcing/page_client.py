"""A worker's page reduced to its packets (mephisto-task 2.0.4's protocol plus the router's session token,
crowdsourcing/frontend/src/components/transport.js): POST /request_agent, a websocket to the router with the
`alive` packet, heartbeats every 6 s, `mephisto_bound_live_update` packets for its actions,
`client_bound_live_update` packets for the world's state and the bot's replies, POST /submit_task at the end.
It drives a whole live-chat HIT from the server's state only. Used by tests/crowdsourcing/test_router_hostile.py,
benchmarks/bench_router_load.py and benchmarks/load_generator.py (human pace, PW-Turn; loaded by path: tests/ is
not a package on sys.path).
"""
from __future__ import annotations

import asyncio
import json
import random
import secrets
import time
import uuid

import httpx
import websockets

from parlai_dialeval.tls import shared_tls_context

RATING = [50, 60, 70, 80, 90, 40, 30]
NORMAL = {"none", "waiting", "onboarding", "in task", "completed"}  # statuses of a worker doing fine
ACK_KEY = "dialeval_ack"  # the server's acknowledgement of stored acts (parlai_dialeval/compat/mephisto_router.py)
SENT_TO_KEY = "dialeval_sent_to"  # a resent act's first agent (crowdsourcing/platform/session_world.py)
REFUSED_KEY = "dialeval_refused"  # the router's answer to an act it will never pass on (router/dialeval_door.js)
RESEND_UNCONFIRMED, RESEND_UNCONFIRMED_MAX = 8.0, 60.0  # transport.js: resent on the same socket after these seconds
NEVER_ANSWERED = "no agent before the deadline"  # seen: the router never answered the page's request for one


class PageClient:
    """One worker's page, reduced to its packets."""

    def __init__(self, name: str, port: int, inputs: int, think: float, deadline: float, address: str | None = None):
        self.name, self.inputs, self.think, self.deadline = name, inputs, think, deadline
        # the loopback address its connections come from (None: the system's choice, 127.0.0.1): the router's
        # budgets are per address, so a crowd is simulated with one each (127.0.0.0/8 is all this machine's)
        self.address = address
        self.http_url, self.ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}"
        self.sent: list[str] = []  # texts whose packet went out on an open socket
        self.confirmed: list[str] = []  # texts the server acknowledged as stored (what the page shows as sent)
        self.unconfirmed: dict[str, str] = {}  # update id -> text, sent but not acknowledged yet
        self.sent_at: dict[str, float] = {}
        self.latencies: list[float] = []
        self.seen: list[str] = []  # what a person would have noticed: reloads, refusals, statuses
        # update id -> (agent id it was first sent to, data): every act not acknowledged yet, resent on each
        # new socket as the page does (transport.js), to a relaunched server's new agent too
        self.outbox: dict[str, tuple[str, dict]] = {}
        self.resent: list[str] = []  # update ids resent to another agent than the first (after a relaunch)
        self.version, self.done, self.ws = 0, False, None
        self.gone = False  # left for good mid-task (a participant who abandons): no reload, no "unfinished"
        self.last_reply = ""  # text of the bot's latest whole reply
        self.changed = asyncio.Event()
        # the page's secret for its registration (transport.js keeps it in localStorage): the router binds the
        # registration to it at the first request, and refuses a request naming it without it
        self.secret = secrets.token_hex(32)

    # ------------------------------------------------------------ the page's connection
    def registration(self) -> dict:
        """What the page's wrapper sends for an agent (the mock provider's ids)."""
        return {"worker_name": self.name, "agent_registration_id": f"{self.name}-{self.name}",
                "assignment_id": self.name, "provider_type": "mock", "dialeval_secret": self.secret}

    async def open(self, http: httpx.AsyncClient) -> bool:
        """Load the page: ask the router for an agent (retried while the server is away), then connect."""
        registration = self.registration()
        retry = 2.0
        while time.time() < self.deadline:
            try:
                # a browser waits for the answer (mephisto-task sets no timeout); asking again while the
                # first request is still being served would make Mephisto register the participant twice.
                # Bounded by the deadline all the same: a page the server never answers is counted, not waited on
                reply = await http.post(self.http_url + "/request_agent", timeout=max(1.0, self.deadline - time.time()),
                                        json={"provider_data": registration, "client_timestamp": time.time()})
                details = reply.json()["data"]
                break
            except (httpx.HTTPError, ValueError, KeyError):
                # while the server is down: a person reloading now and then, not hundreds of pages in step
                await asyncio.sleep(retry * random.uniform(0.5, 1.0))
                retry = min(2 * retry, 8.0)
        else:
            self.seen.append(NEVER_ANSWERED)
            return False
        return await self.adopt(details)

    async def adopt(self, details: dict) -> bool:
        """Take the agent the router answered with (after /request_agent, or /submit_onboarding: the unit's
        agent, announced on the same socket as the page does) and connect."""
        if not details.get("agent_id"):
            self.seen.append(f"refused: {details.get('failure_reason')}")
            return False
        self.agent_id, self.token, self.state, self.replies = details["agent_id"], details["agent_token"], {}, set()
        for update in (details.get("init_task_data") or {}).get("past_live_updates") or []:
            self._on_update(update)
        try:
            if self.ws is None or not self.connected:
                self.ws = await websockets.connect(self.ws_url, max_size=None, **self.bound())
                self.connected = True
                self.tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._heartbeat()),
                              asyncio.create_task(self._resend_unconfirmed())]
            await self._packet("alive", {})
        except (OSError, websockets.WebSocketException):
            self.connected = False  # the server went away meanwhile: the run loop reloads the page
            return True
        await self._resend()
        return True

    def bound(self) -> dict:
        """Connection options binding this page's sockets to its address."""
        return {"local_addr": (self.address, 0)} if self.address else {}

    def http_client(self, **options) -> httpx.AsyncClient:
        """An HTTP client whose connections come from this page's address (pass it to ``run``)."""
        transport = (httpx.AsyncHTTPTransport(local_address=self.address, verify=shared_tls_context())
                     if self.address else None)
        return httpx.AsyncClient(transport=transport, verify=shared_tls_context(), **options)

    async def _resend(self) -> None:
        """transport.js on a new socket: the acts never acknowledged, again, to this page's agent now, naming
        the agent they were first sent to when that was another one (the server was relaunched meanwhile)."""
        await asyncio.sleep(0.5)
        for sent_to, data in list(self.outbox.values()):
            if sent_to != self.agent_id:
                data = {**data, "id": self.agent_id, SENT_TO_KEY: data.get(SENT_TO_KEY, sent_to)}
                self.resent.append(data["update_id"])
            if not await self._send_again(data):
                return  # the reader sees it too: the page reloads and resends them then

    async def _send_again(self, data: dict) -> bool:
        try:
            await self.ws.send(json.dumps({"packet_type": "mephisto_bound_live_update", "subject_id": self.agent_id,
                                           "agent_token": self.token, "client_timestamp": time.time(), "data": data}))
        except websockets.ConnectionClosed:
            return False
        return True

    async def _resend_unconfirmed(self) -> None:
        """transport.js: an act still unconfirmed after a few seconds goes again on the same socket (then after
        twice as long): a socket that never dropped can still lose one."""
        due: dict[str, tuple[float, float]] = {}
        while self.connected:
            await asyncio.sleep(1)
            now = time.time()
            for update_id, (sent_to, data) in list(self.outbox.items()):
                at, wait = due.setdefault(update_id, (now + RESEND_UNCONFIRMED, 2 * RESEND_UNCONFIRMED))
                if at <= now and sent_to == self.agent_id:
                    due[update_id] = (now + wait, min(2 * wait, RESEND_UNCONFIRMED_MAX))
                    if not await self._send_again(data):
                        return

    async def _packet(self, kind: str, data: dict | None) -> str:
        """Send a packet; returns its update id."""
        packet = {"packet_type": kind, "subject_id": self.agent_id, "agent_token": self.token,
                  "client_timestamp": time.time()}
        update_id = str(uuid.uuid4())
        if data is not None:
            packet["data"] = {"update_id": update_id, **data}
        if kind == "mephisto_bound_live_update":
            self.outbox[update_id] = (self.agent_id, packet["data"])
        try:
            await self.ws.send(json.dumps(packet))
        except websockets.ConnectionClosed:
            # it never went out (the page sends it anew): kept, it would be resent beside the new copy. A send
            # on a closed socket raises at once, without yielding, so the reader may not have seen the close
            # yet: without this the caller would retry in a loop that starves every other page (the event loop
            # never runs) and fills the outbox (issue 32: the 300-participant kill run, 6 GB, no page back)
            self.outbox.pop(update_id, None)
            self.connected = False
            raise
        return update_id

    async def _heartbeat(self) -> None:
        while self.connected:
            await asyncio.sleep(6)
            try:
                await self._packet("heartbeat", None)
            except websockets.ConnectionClosed:
                return

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                packet = json.loads(raw)
                if packet["packet_type"] == "client_bound_live_update" and REFUSED_KEY in packet["data"]:
                    for update_id in packet["data"][REFUSED_KEY]:
                        self.outbox.pop(update_id, None)
                        self.seen.append(f"act refused: {packet['data'].get('reason')}")
                elif packet["packet_type"] == "client_bound_live_update" and ACK_KEY in packet["data"]:
                    for update_id in packet["data"][ACK_KEY]:
                        self.outbox.pop(update_id, None)
                        if update_id in self.unconfirmed:
                            self.confirmed.append(self.unconfirmed.pop(update_id))
                elif packet["packet_type"] == "client_bound_live_update":
                    self._on_update(packet["data"])
                elif packet["packet_type"] == "update_status" and packet["data"].get("status") not in NORMAL:
                    self.seen.append(f"status {packet['data'].get('status')}")
                self.changed.set()
        except websockets.ConnectionClosed:
            pass
        self.connected = False
        self.changed.set()

    def _on_update(self, message: dict) -> None:
        task_data = message.get("task_data") or {}
        self.state.update(task_data)
        self.version += bool(task_data)
        if message.get("text") and message.get("id") == self.state.get("bot_id", "Chatbot"):
            self.replies.add(message.get("update_id"))
            self.last_reply = message["text"]

    async def close(self) -> None:
        self.connected = False
        if self.ws is not None:
            await self.ws.close()
            for task in self.tasks:
                task.cancel()

    # ------------------------------------------------------------ the person
    async def until(self, condition, timeout: float = 60) -> bool:
        end = min(time.time() + timeout, self.deadline)
        while not condition():
            if not self.connected or time.time() > end:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=max(0.0, end - time.time()))
            except asyncio.TimeoutError:
                pass
        return True

    async def act(self, task_data: dict, text: str = "") -> bool:
        try:
            update_id = await self._packet("mephisto_bound_live_update", {
                "id": self.agent_id, "text": text, "task_data": task_data, "episode_done": False})
        except websockets.ConnectionClosed:
            return False
        if text:
            self.unconfirmed[update_id] = text
        return True

    async def say(self, task_data: dict, text: str, answered) -> bool:
        """Send a chat message and wait until ``answered()`` (the bot's reply shown); its latency is kept."""
        start = time.time()
        if not await self.act(task_data, text):
            return False
        self.sent.append(text)
        self.sent_at[text] = start
        if await self.until(answered):
            self.latencies.append(time.time() - start)
            return True
        return False

    async def pause(self) -> None:
        """The person reads the reply and types the next message."""
        await asyncio.sleep(random.uniform(0.5, 1.5) * self.think)

    async def step(self, http: httpx.AsyncClient) -> None:
        """One action chosen from the server's state, as the page would offer it."""
        state, version = dict(self.state), self.version
        phase = state.get("phase")
        if state.get("task_done"):
            self.submission = {"USED_AGENT_ID": self.agent_id, "agent_token": self.token, "final_data": {},
                               "client_timestamp": time.time()}
            reply = await http.post(self.http_url + "/submit_task", timeout=60, json=self.submission)
            for _ in range(36):  # as the page does (transport.js): "busy" is asked again after its Retry-After
                if reply.status_code != 503:
                    break
                await asyncio.sleep(float(reply.headers.get("retry-after", 5)) * random.uniform(1, 2))
                reply = await http.post(self.http_url + "/submit_task", timeout=60, json=self.submission)
            self.done = reply.status_code == 200
            if not self.done:
                self.seen.append(f"submit refused: HTTP {reply.status_code}")
            return
        if phase == "topic":
            await self.act({"action": "topic", "topic": "books", "attitude": "like"})
        elif phase == "chat" and state.get("inputs", 0) < state.get("min_inputs", self.inputs):
            before = len(self.replies)
            if await self.say({"action": "message"}, f"{self.name} message {len(self.sent)}: do you like reading books?",
                              lambda: len(self.replies) > before):
                await self.pause()
            return
        elif phase == "chat":
            await self.act({"action": "next"})
        elif phase == "rate":
            await self.act({"action": "rating", "values": RATING})
        elif phase == "failed":
            await self.act({"action": "next"})
        elif phase == "feedback":
            await self.act({"action": "feedback", "feedback": "benchmark"})
        await self.until(lambda: self.version > version)  # the world's answer: its next state or a warning

    async def run(self, http: httpx.AsyncClient) -> None:
        opened = await self.open(http)
        while opened and not self.done and not self.gone and time.time() < self.deadline:
            if not self.connected:  # the socket dropped: the person reloads the page after a moment
                await self.close()
                self.seen.append("connection lost, reloading")
                reached = (self.state.get("slot") or 0) + 1
                await asyncio.sleep(3)
                opened = await self.open(http)
                if opened and await self.until(lambda: "phase" in self.state or self.state.get("task_done")):
                    where = (self.state.get("slot") or 0) + 1
                    self.seen.append(f"reopened at conversation {where} (had reached {reached})")
                continue
            await self.step(http)
        if not self.done and not self.gone and opened:
            self.seen.append("unfinished at the deadline")
        await self.close()
