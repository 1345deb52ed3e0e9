"""One participant cannot push the Mephisto server more than a person could send (issue 26's hostile
participant, in bytes): the router (crowdsourcing/router/dialeval_guard.js) gives each agent a byte budget
over all its sockets, 1 MiB at once and 64 KiB a second after that. Without it an agent could send 50 frames
of 512 KiB a second, every one queued in the server's memory and, once the world takes it, rewritten with
the whole of Mephisto's saved agent state. Checked on the real router, this test being the server."""
from __future__ import annotations

import asyncio
import json
import time

import websockets

from parlai_dialeval.compat import mephisto_router as compat_router
from parlai_dialeval.compat.mephisto_door import TEXT_CHARS

from .test_resume_router import built_router
from .test_router_hostile import require_router, run_router

FRAME = 400 * 1024
BURST, PER_SECOND = 1024 * 1024, 64 * 1024  # dialeval_guard.js: AGENT_BYTES_BURST, AGENT_BYTES_PER_SECOND


def live_update(agent: str, text: str) -> str:
    """A live update carrying ``text``, in pieces each within the door's text limit (a longer text is refused
    before the byte budget is reached), so that only the budget stands between a big frame and the server."""
    pieces = [text[i:i + TEXT_CHARS] for i in range(0, len(text), TEXT_CHARS)]
    return json.dumps({"packet_type": "mephisto_bound_live_update", "subject_id": agent,
                       "agent_token": compat_router.token(agent), "data": {"text": pieces[0], "more": pieces[1:]}})


async def flood_from_two_sockets(port: int, frames: int) -> tuple[int, float, int, bool]:
    """Agent "9" sends ``frames`` frames of 400 KiB from two sockets, 10 a second (under the router's packet
    rate); then agent "10" sends one short message. Returns the bytes of agent 9's packets the server got,
    the seconds the flood took, how many of them, and whether agent 10's message arrived."""
    got, count, other = 0, 0, False
    async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=None) as server:
        await server.send(json.dumps({"packet_type": "alive", "subject_id": compat_router.SYSTEM_ID,
                                      "data": {"agent_token": compat_router.token(compat_router.SYSTEM_ID)}}))

        async def read():
            nonlocal got, count, other
            while True:
                raw = await server.recv()
                packet = json.loads(raw)
                if packet.get("packet_type") != "mephisto_bound_live_update":
                    continue
                if packet["subject_id"] == "9":
                    got, count = got + len(raw), count + 1
                elif packet["data"].get("text") == "a person's message":
                    other = True

        reader = asyncio.create_task(read())
        async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=None) as first, \
                websockets.connect(f"ws://127.0.0.1:{port}", max_size=None) as second:
            start = time.monotonic()
            for i in range(frames):
                await (first, second)[i % 2].send(live_update("9", "x" * FRAME))
                await asyncio.sleep(0.1)
            took = time.monotonic() - start
            async with websockets.connect(f"ws://127.0.0.1:{port}") as honest:
                await honest.send(live_update("10", "a person's message"))
                await asyncio.sleep(2.0)
        reader.cancel()
    return got, took, count, other


def test_an_agent_cannot_push_the_server_more_than_its_byte_budget(tmp_path):
    require_router()
    (got, took, count, other), output = run_router(built_router(tmp_path), lambda port: flood_from_two_sockets(port, 30))
    sent = 30 * FRAME
    allowed = BURST + PER_SECOND * (took + 1)  # what the bucket lets through in that time, a second's slack
    assert 0 < count and got <= allowed < sent / 3, (got, allowed, sent)
    assert "agent sends more than 65536 bytes a second" in output
    assert other  # another participant's budget is their own
