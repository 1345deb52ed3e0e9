"""The router's door (crowdsourcing/router/dialeval_door.js, hooked in by parlai_dialeval/compat/mephisto_door.py)
on the real built router, this test being the Mephisto server (issue 38, items 1, 2, 9, 12 and 13):

- `GET /task_config.json?mephisto_task_version=<16 KB>`: Mephisto's router passed each mismatching version to
  the server, which logged it whole through rich (1.6 s of CPU at 16 KB; 30 requests stalled it 130 s);
- a request flood from one source: refused past its budget, other sources still served;
- page packets over the socket that Mephisto's server could not read (log_error without data or with
  `data: 5`, live updates nested 2,000 or 100,000 levels deep, a client_timestamp that is text): the server's
  link restarted and packets in flight were lost; at 100,000 levels the router's own loop threw;
- unpaired surrogates and control characters in worker names, messages and topics (the server never answered
  a worker name with one; export dropped the unit of a message with one);
- malformed bodies got Express's page with a stack and the router's paths, and `X-Powered-By: Express`;
- a router built for a rehearsal listened on every interface.
"""
from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import websockets

from parlai_dialeval.compat import mephisto_router as compat_router
from parlai_dialeval.testing.real_model import free_port

from .page_client import PageClient
from .protocol_harness import CliRun, dialeval
from .test_resume_router import built_router
from .test_router_hostile import require_router, run_router, start_router

AGENT = "7"
# one source's budget, smaller than a launch's (dialeval_door.js: a burst of 400, then 40 a second) so that
# a slow test machine still sends faster than it refills
BURST, RATE, FLOOD = 60, 5, 200


def from_address(address: str) -> httpx.AsyncHTTPTransport:
    """A client transport whose connections come from ``address`` (127.0.0.0/8 is all this machine's)."""
    return httpx.AsyncHTTPTransport(local_address=address)


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as the kernel lists them) a socket listens on for ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def page_packet(kind: str, data, **extra) -> str:
    packet = {"packet_type": kind, "subject_id": AGENT, "agent_token": compat_router.token(AGENT), **extra}
    if data is not ...:
        packet["data"] = data
    return json.dumps(packet)


def live(text: str, update_id: str, **task_data) -> dict:
    return {"update_id": update_id, "id": AGENT, "text": text, "task_data": {"action": "message", **task_data}}


async def attack(port: int) -> dict:
    url, seen = f"http://127.0.0.1:{port}", {}
    server_got, page_got = [], []
    async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=None) as server:
        await server.send(json.dumps({"packet_type": "alive", "subject_id": compat_router.SYSTEM_ID,
                                      "data": {"agent_token": compat_router.token(compat_router.SYSTEM_ID)}}))

        async def read(ws, into):
            async for raw in ws:
                into.append(json.loads(raw))

        reader = asyncio.create_task(read(server, server_got))
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            # item 1: thirty 16 KB versions, then a plain mismatching one twice: one short report in all
            for _ in range(30):
                await http.get("/task_config.json", params={"mephisto_task_version": "9" * 16_000})
            for _ in range(2):
                await http.get("/task_config.json", params={"mephisto_task_version": "1.0.0"})
            # a flood from one source (its own loopback address): refused past its budget, others served
            start = time.monotonic()
            async with httpx.AsyncClient(base_url=url, timeout=30, transport=from_address("127.0.0.7")) as stranger:
                replies = await asyncio.gather(*(stranger.get("/is_alive") for _ in range(FLOOD)))
            codes = [r.status_code for r in replies]
            seen["flood"] = (codes.count(200), codes.count(429), time.monotonic() - start)
            seen["other source"] = (await http.get("/is_alive")).status_code
            # item 9: malformed bodies, and the headers of every answer
            broken = await http.post("/submit_task", content=b"{broken", headers={"Content-Type": "application/json"})
            deep = await http.post("/submit_task", content=b"[" * 5000 + b"]" * 5000,
                                   headers={"Content-Type": "application/json"})
            seen["malformed"] = [(r.status_code, r.text, r.headers.get("x-powered-by")) for r in (broken, deep)]
            seen["not found"] = (await http.get("/no/such/path")).text
            seen["task_index"] = (await http.get("/task_index")).text  # Express has no view engine for it
            # item 12: worker names the server could not store
            names = {"surrogate": '"w\\ud800"', "nul": '"w\\u0000x"', "newline": '"w\\nx"', "honest": '"Zoë 张"'}
            seen["names"] = {}
            for name, literal in names.items():
                body = ('{"provider_data": {"worker_name": %s, "agent_registration_id": "r-%s", "assignment_id": "a",'
                        ' "provider_type": "mock"}, "client_timestamp": 0}' % (literal, name))
                try:
                    reply = await http.post("/request_agent", content=body, timeout=3,
                                            headers={"Content-Type": "application/json"})
                    seen["names"][name] = (reply.status_code, reply.json().get("reason"))
                except httpx.ReadTimeout:  # passed on to the server, which this test does not answer
                    seen["names"][name] = "passed on"
        # item 2: page packets the server could not read, then an honest one
        async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=None) as page:
            page_reader = asyncio.create_task(read(page, page_got))
            nested = {"levels 2000": "[" * 2000 + "]" * 2000, "levels 100000": "[" * 100_000 + "]" * 100_000}
            hostile = [page_packet("log_error", ...), page_packet("log_error", 5),
                       page_packet("log_error", {"text": "x" * 5000}),
                       page_packet("alive", [1]), page_packet("heartbeat", "x"),
                       page_packet("mephisto_bound_live_update", live("hi", "u-ts"), client_timestamp="soon"),
                       page_packet("mephisto_bound_live_update", live("lone \ud800 surrogate", "u-sur")),
                       page_packet("mephisto_bound_live_update", live("nul \x00 here", "u-nul")),
                       page_packet("mephisto_bound_live_update", live("", "u-topic", topic="bell \x07")),
                       page_packet("mephisto_bound_live_update", live("", "u-key", **{"k\ud800": 1}))]
            hostile += [page_packet("mephisto_bound_live_update", json.loads('{"update_id": "u-%s", "x": 1}' % name)
                                    ).replace('"x": 1', '"x": ' + text) for name, text in nested.items()]
            for raw in hostile:
                await page.send(raw)
            await page.send(page_packet("log_error", {"text": "TypeError: x is undefined"}))
            await page.send(page_packet("mephisto_bound_live_update", live("two\nlines\tand a tab", "u-ok")))
            await asyncio.sleep(1.5)
            page_reader.cancel()
        reader.cancel()
    seen["server got"] = [p for p in server_got if p.get("packet_type") != "alive"]
    seen["page got"] = page_got
    return seen


def test_the_door_refuses_what_the_server_cannot_take(tmp_path):
    require_router()
    router = built_router(tmp_path)
    config = router / "dialeval_door.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "source_requests_burst": BURST,
                                  "source_requests_per_second": RATE}))
    port = free_port()
    node = start_router(router, port)
    try:
        addresses = listening_addresses(port)
        seen = asyncio.run(attack(port))
    finally:
        node.terminate()
        output = node.communicate(timeout=10)[0]
    # item 13: a router built without a task run (as for a rehearsal) listens on this machine only
    assert addresses == {"0100007F"}, addresses
    assert f"Listening on 127.0.0.1:{port}" in output

    packets = seen["server got"]
    versions = [p["data"]["text"] for p in packets if p["packet_type"] == "log_error" and p["subject_id"] == "mephisto"]
    assert len(versions) == 1 and "using 1.0.0." in versions[0] and len(versions[0]) < 600, versions

    allowed, refused, seconds = seen["flood"]
    assert BURST <= allowed <= BURST + RATE * (seconds + 1) and refused == FLOOD - allowed > 0, seen["flood"]
    assert seen["other source"] == 200

    for status, text, powered in seen["malformed"]:
        assert status == 400 and powered is None, (status, text, powered)
        for leak in ("/work", "node_modules", "at ", "SyntaxError", "<pre>"):
            assert leak not in text, f"error body shows {leak!r}: {text[:300]}"
    assert "Cannot GET" not in seen["not found"]
    assert "/work" not in seen["task_index"] and "at " not in seen["task_index"], seen["task_index"][:300]

    names = seen["names"]
    assert names["surrogate"][0] == 400 and "worker_name" in names["surrogate"][1] and "surrogate" in names["surrogate"][1]
    assert names["nul"][0] == 400 and "control character" in names["nul"][1]
    assert names["newline"][0] == 400
    assert names["honest"] == "passed on"
    registered = [p["data"]["provider_data"]["worker_name"] for p in packets if p["packet_type"] == "register_agent"]
    assert registered == ["Zoë 张"]

    # only the honest packets reached the server, and the page heard which of its acts were refused
    from_page = [(p["packet_type"], p["data"].get("text") or p["data"].get("update_id")) for p in packets
                 if p["subject_id"] == AGENT]
    assert from_page == [("log_error", "TypeError: x is undefined"), ("mephisto_bound_live_update", "two\nlines\tand a tab")]
    refused_acts = sorted(u for p in seen["page got"] for u in p["data"].get("dialeval_refused", []))
    assert refused_acts == ["u-key", "u-nul", "u-sur", "u-topic", "u-ts"], seen["page got"]
    for reason in ("log_error without a data object", "log_error data of", "alive whose data is not an object",
                   "client_timestamp that is not a number", "unpaired surrogate", "control character",
                   "nested more than 32 levels deep", "requests a second from one source"):
        assert reason in output, f"router log has no refusal {reason!r}"
    assert "Transient error" not in output and "RangeError" not in output


SOCKETS = 5  # open sockets a source may hold in this test (dialeval_door.js: 100)


async def hold_sockets(port: int) -> dict:
    """One source (its own loopback address) opens sockets until refused, closes one, opens one more; another
    source connects meanwhile."""
    url, stranger, seen = f"ws://127.0.0.1:{port}", {"local_addr": ("127.0.0.9", 0)}, {}
    held = [await websockets.connect(url, **stranger) for _ in range(SOCKETS)]
    try:
        with pytest.raises(websockets.InvalidStatusCode) as refused:
            await websockets.connect(url, **stranger)
        seen["refused"] = (refused.value.status_code, refused.value.headers.get("Retry-After"))
        async with websockets.connect(url) as other:  # another source is still served
            seen["other source"] = other.open
        await held.pop().close()
        await asyncio.sleep(0.3)  # the router hears the close
        async with websockets.connect(url, **stranger) as again:
            seen["after a close"] = again.open
    finally:
        for socket in held:
            await socket.close()
    return seen


def test_a_source_holds_a_bounded_number_of_sockets(tmp_path):
    """Websocket upgrades never reach Express's middleware: before the door counted them, one source could open
    sockets without limit (each held until the page's heartbeat time-out). Now each upgrade takes from its
    source's request budget and a source holds at most ``source_sockets`` open sockets; past that, 429 with
    Retry-After, and a closed socket frees its place."""
    require_router()
    router = built_router(tmp_path)
    config = router / "dialeval_door.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "source_sockets": SOCKETS}))
    seen, output = run_router(router, hold_sockets)
    assert seen == {"refused": (429, "5"), "other source": True, "after a close": True}, seen
    assert f"refused websocket upgrade: more than {SOCKETS} open sockets from one source" in output


async def serve_unreadable_packets(port: int, stop) -> None:
    """This test as the router: packets Mephisto's server cannot read, then an honest one; open until ``stop``."""
    good = {"packet_type": "log_error", "subject_id": "9", "data": {"text": "honest"}}

    async def handler(ws):
        for raw in ('{"packet_type": "log_error", "subject_id": "9"}', "[" * 2000 + "]" * 2000, "{not json",
                    json.dumps(good)):
            await ws.send(raw)
        await asyncio.get_running_loop().run_in_executor(None, stop.wait)

    async with websockets.serve(handler, "127.0.0.1", port):
        await asyncio.get_running_loop().run_in_executor(None, stop.wait)


def test_the_server_link_survives_packets_it_cannot_read():
    """Mephisto's WebsocketChannel re-raised on a packet it could not read (Packet.from_dict's assertion,
    json's RecursionError): its link restarted ("Socket error ... attempting restart") and what was in flight
    was lost. With compat/mephisto_door.py's SOURCE_FIX the packet is dropped and the link stays."""
    import threading

    import parlai_dialeval  # noqa: F401  (the source fix, before Mephisto loads)
    from mephisto.abstractions.architects.channels.websocket_channel import WebsocketChannel

    port, opened, received, stop = free_port(), [], [], threading.Event()
    channel = WebsocketChannel("c", opened.append, lambda channel_id: None,
                               lambda channel_id, packet: received.append(packet.data), f"ws://127.0.0.1:{port}")
    server = threading.Thread(target=asyncio.run, args=(serve_unreadable_packets(port, stop),))
    server.start()
    try:
        time.sleep(0.5)
        channel.open()
        end = time.time() + 20
        while not received and time.time() < end:
            time.sleep(0.2)
        time.sleep(1.0)  # a restart would open it again now
        seen_open = list(opened)
        channel.close()
    finally:
        stop.set()
        server.join()
    assert received == [{"text": "honest"}]
    assert seen_open == ["c"]  # opened once: never restarted


def test_mephisto_logs_are_plain_bounded_and_rate_limited():
    """Mephisto logged a stranger's text whole through rich (wrapping time quadratic in its length: 1.6 s at
    16 KB), escapes and newlines as they came, and as often as it came."""
    import logging

    from parlai_dialeval.compat import mephisto_door

    mephisto_door.bounded_logging()
    from mephisto.operations.client_io_handler import logger
    from rich.logging import RichHandler

    handlers = logger.handlers + logging.getLogger().handlers
    assert not [h for h in handlers if isinstance(h, RichHandler)] and any(map(mephisto_door.is_ours, handlers))
    ours = next(h for h in logger.handlers if mephisto_door.is_ours(h))
    stranger = "\x1b[2J" + "version " * 2000 + "\nFAKE LINE \ud800"
    record = logger.makeRecord(logger.name, logging.WARNING, __file__, 1, "[Version Mismatch!!]: %s", (stranger,), None)
    line = ours.format(record)
    assert len(line) < mephisto_door.LINE_CHARS + 200 and "characters cut" in line
    assert "\x1b" not in line and "\n" not in line and "\\x1b" in line and "\\ud800" in line
    limit = mephisto_door.RateLimit()
    passed = sum(limit.filter(logger.makeRecord(logger.name, logging.WARNING, __file__, 1, "x", (), None))
                 for _ in range(5000))
    assert mephisto_door.LINES_BURST <= passed < mephisto_door.LINES_BURST + 100


async def pipelined(port: int, count: int, path: str, source: str) -> int:
    """``count`` requests in one write on one connection from the loopback address ``source`` (as fast as the
    router reads them): how many were refused 429."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    request = f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    writer.write(request * count)
    await writer.drain()
    answers = b""
    try:
        while answers.count(b"HTTP/1.1 ") < count:
            chunk = await asyncio.wait_for(reader.read(1 << 20), 30)
            if not chunk:
                break
            answers += chunk
    finally:
        writer.close()
    return answers.count(b"HTTP/1.1 429")


async def outsider_and_insider(port: int, honest: list[PageClient], seen: dict) -> None:
    """While the honest workers chat: an outsider without a session stalls nothing with thirty 16 KB version
    reports in a moment, a request flood and malformed bodies; mallory, with a session, sends forty packets
    Mephisto's server could not read (each restarted its link to the router, and the honest lost messages)."""
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=url, timeout=30) as http, \
            httpx.AsyncClient(base_url=url, timeout=30, transport=from_address("127.0.0.9")) as stranger, \
            httpx.AsyncClient(base_url=url, timeout=30, transport=from_address("127.0.0.10")) as another:
        while not all(getattr(c, "agent_id", None) for c in honest):
            await asyncio.sleep(0.5)
        await asyncio.sleep(2)  # they are chatting
        await asyncio.gather(*(stranger.get("/task_config.json", params={"mephisto_task_version": f"{i}" + "9" * 16_000})
                               for i in range(30)))
        seen["flood refused"] = await pipelined(port, 1500, "/", "127.0.0.9")
        # from another source: the flood emptied this one's budget, and a refill in time was a race
        seen["bad name"] = (await another.post("/request_agent", content=(
            '{"provider_data": {"worker_name": "eve\\udc00", "agent_registration_id": "eve", "assignment_id": "e", '
            '"provider_type": "mock"}}'), headers={"Content-Type": "application/json"})).status_code
        broken = await another.post("/submit_task", content=b'{"USED_AGENT_ID": ', headers={
            "Content-Type": "application/json"})
        seen["broken body"] = (broken.status_code, broken.text, broken.headers.get("x-powered-by"))

        # from an address of her own: places per address are a share of the study's (2 of its 3 here)
        mallory = PageClient("mallory", port, inputs=2, think=0.3, deadline=time.time() + 120, address="127.0.0.11")
        async with mallory.http_client(timeout=60) as her_http:
            assert await mallory.open(her_http)
        nested = "[" * 2000 + "]" * 2000
        hostile = [{"packet_type": "log_error"}, {"packet_type": "log_error", "data": 5},
                   {"packet_type": "mephisto_bound_live_update", "data": {"update_id": "deep", "x": "NESTED"}},
                   {"packet_type": "mephisto_bound_live_update",
                    "data": {"update_id": "lone", "text": "a \ud800 b", "task_data": {"action": "message"}}}]
        for i in range(40):
            packet = {**hostile[i % len(hostile)], "subject_id": mallory.agent_id, "agent_token": mallory.token}
            await mallory.ws.send(json.dumps(packet).replace('"NESTED"', nested))
            await asyncio.sleep(0.05)
        await mallory.close()


async def door_scenario(port: int, seen: dict) -> list[PageClient]:
    deadline = time.time() + 400
    honest = [PageClient(name, port, inputs=2, think=0.3, deadline=deadline) for name in ("alice", "bob")]
    async with httpx.AsyncClient() as http:
        await asyncio.gather(*(c.run(http) for c in honest), outsider_and_insider(port, honest, seen))
    return honest


def test_a_launch_survives_strangers_and_unreadable_packets(tmp_path):
    require_router()
    port = free_port()
    run = CliRun("live_chat_da", tmp_path, ["conf=offline_small", f"mephisto.architect.port={port}",
                                             "mephisto.task.task_name=door_launch",
                                             "mephisto.blueprint.num_conversations=3",
                                             "mephisto.task.max_num_concurrent_units=0",
                                             "live_chat.min_inputs=2", "live_chat.seed=0"])
    seen: dict = {}
    try:
        addresses = listening_addresses(port)
        honest = asyncio.run(door_scenario(port, seen))
    finally:
        run.stop()
    text = run.log()
    # item 13: a rehearsal (mock provider) serves this machine only, and says so
    assert addresses == {"0100007F"}, addresses
    assert f"Its router serves 127.0.0.1:{port}: this machine only" in text
    # items 1, 9, 12: answered at the door
    assert seen["flood refused"] > 0 and seen["bad name"] == 400
    assert seen["broken body"][0] == 400 and seen["broken body"][2] is None and "/" not in seen["broken body"][1]
    # the server never restarted its link, logged no report of 16 KB, and the log stayed small
    served = text[text.find("Listening on"):]  # the server's tries before the router listened are no restart
    assert "Listening on" in text and "attempting restart" not in served and "Socket error" not in served
    assert "9" * 1000 not in text and len(text) < 300_000, len(text)
    # every honest message stored once, confirmed, and only the honest workers' work exported as complete
    assert all(c.done for c in honest), [c.seen for c in honest]
    dialeval("export", "door_launch", "--out", str(tmp_path / "out.jsonl"), "--mephisto-data", str(run.data_dir))
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    convs = [r for r in records if r["type"] == "conversation"]
    assert sorted({c["worker_id"].split("_")[0] for c in convs if c["status"] == "complete"}) == ["alice", "bob"]
    honest_turns = sorted(t["text"] for c in convs if not c["worker_id"].startswith("mallory")
                          for t in c["turns"] if t["speaker"] == "human")
    assert honest_turns == sorted(t for c in honest for t in c.sent)
    assert all(sorted(c.confirmed) == sorted(c.sent) and not c.unconfirmed for c in honest)
