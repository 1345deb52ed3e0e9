"""Hostile clients against the real node router (`dialeval launch live_chat_da conf=offline_small`).

Two honest workers (tests/crowdsourcing/page_client.py: the page's packets, session token included) do a
whole HIT while a third participant, mallory, with a session of her own, attacks: she submits for, writes
as, reads for and moves the socket of an honest worker whose agent id she knows; replays a submission;
claims to be the Mephisto server; sends oversized frames, malformed JSON, 2,000 headers, a multipart bomb
and a flood of 1,000 messages in a second. After each attack the router answers and the honest workers
carry on; at the end the export holds exactly the honest workers' work, and the router logged each
refusal. The router is crowdsourcing/router/dialeval_guard.js hooked in by parlai_dialeval/compat/mephisto_router.py.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest
from needs import needs
import websockets

from parlai_dialeval.compat import mephisto_router as compat_router
from parlai_dialeval.testing.ports import free_port
from parlai_dialeval.tls import shared_tls_context

from .page_client import PageClient
from .protocol_harness import CliRun, dialeval

TASK = "hostile_router"
INJECTED = "INJECTED BY MALLORY"


def require_router() -> None:
    missing = shutil.which("node") is None or not (compat_router.ROUTER_DIR / "node_modules" / "ws").is_dir()
    if missing:
        message = f"node or the router dependencies ({compat_router.ROUTER_DIR}/node_modules) are missing: run install.sh"
        needs(message)


async def raw_http(port: int, request: bytes) -> bytes:
    """Send bytes as they are (no client library would send these) and read what comes back."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(4096), 10)
    except (ConnectionError, asyncio.TimeoutError):
        return b""
    finally:
        writer.close()


class Mallory:
    """A participant with a session of her own who knows the honest workers' agent ids."""

    def __init__(self, port: int):
        self.port = port
        self.received: list[dict] = []

    ADDRESS = "127.0.0.12"  # her own (places per address are a share of the study's)

    async def open(self, http: httpx.AsyncClient) -> None:
        registration = {"worker_name": "mallory", "agent_registration_id": "mallory-mallory",
                        "assignment_id": "mallory", "provider_type": "mock"}
        async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=self.ADDRESS, verify=shared_tls_context())) as own:
            reply = await own.post(f"http://127.0.0.1:{self.port}/request_agent", timeout=60,
                                   json={"provider_data": registration, "client_timestamp": time.time()})
        details = reply.json()["data"]
        self.agent_id, self.token = details["agent_id"], details["agent_token"]
        self.ws = await self.connect()
        await self.send({"packet_type": "alive", "subject_id": self.agent_id, "agent_token": self.token, "data": {}})

    async def connect(self):
        ws = await websockets.connect(f"ws://127.0.0.1:{self.port}", max_size=None, local_addr=(self.ADDRESS, 0))
        asyncio.get_running_loop().create_task(self._read(ws))
        return ws

    async def _read(self, ws) -> None:
        try:
            async for raw in ws:
                self.received.append(json.loads(raw))
        except websockets.ConnectionClosed:
            pass

    async def send(self, packet: dict, ws=None) -> None:
        packet.setdefault("client_timestamp", time.time())
        await (ws or self.ws).send(json.dumps(packet))

    def live(self, subject: str, text: str, token: str | None) -> dict:
        packet = {"packet_type": "mephisto_bound_live_update", "subject_id": subject,
                  "data": {"id": subject, "text": text, "task_data": {"action": "message"}, "episode_done": False}}
        if token is not None:
            packet["agent_token"] = token
        return packet


async def assert_up(http: httpx.AsyncClient, honest: list[PageClient], after: str) -> None:
    reply = await http.get(f"{honest[0].http_url}/is_alive", timeout=10)  # the router they work on
    assert reply.status_code == 200, f"router down after {after}"
    await asyncio.sleep(0.5)
    broken = [c.name for c in honest if not c.done and not c.connected]
    assert not broken, f"honest workers {broken} lost their socket after {after}: {[c.seen for c in honest]}"


async def attack(port: int, honest: list[PageClient], log: list[str]) -> None:
    """Every attack, each followed by a check that the router is up and the honest workers carry on."""
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(verify=shared_tls_context()) as http:
        mallory = Mallory(port)
        await mallory.open(http)
        while not all(getattr(c, "agent_id", None) for c in honest):
            await asyncio.sleep(0.5)
        victim = honest[0]
        await asyncio.sleep(3)  # the victim is chatting

        # forged submissions for the victim: no token, mallory's own token, a made-up one
        for token in (None, mallory.token, "0" * 64):
            body = {"USED_AGENT_ID": victim.agent_id, "final_data": {"answers": INJECTED}, "client_timestamp": 0}
            if token is not None:
                body["agent_token"] = token
            reply = await http.post(url + "/submit_task", json=body)
            assert reply.status_code == 403, f"forged submission with token {token!r}: HTTP {reply.status_code}"
        for path in ("/submit_metadata", "/log_error"):
            reply = await http.post(url + path, json={"USED_AGENT_ID": victim.agent_id, "agent_token": mallory.token})
            assert reply.status_code == 403, f"forged {path}: HTTP {reply.status_code}"
        await assert_up(http, honest, "forged submissions")
        log.append("forged submissions")

        # forged live packets and heartbeats as the victim, and the server's packets towards its page
        for token in (None, mallory.token):
            await mallory.send(mallory.live(victim.agent_id, INJECTED, token))
            await mallory.send({"packet_type": "alive", "subject_id": victim.agent_id, "agent_token": token,
                                "data": {}})
            await mallory.send({"packet_type": "heartbeat", "subject_id": victim.agent_id, "agent_token": token})
        await mallory.send({"packet_type": "client_bound_live_update", "subject_id": victim.agent_id,
                            "data": {"text": INJECTED, "id": "Chatbot", "task_data": {}}})
        await mallory.send({"packet_type": "update_status", "subject_id": victim.agent_id,
                            "data": {"status": "disconnect"}})
        # claiming to be the Mephisto server, then asking for what only it may see
        await mallory.send({"packet_type": "alive", "subject_id": "mephisto", "data": {}})
        await mallory.send({"packet_type": "alive", "subject_id": "mephisto", "data": {"agent_token": mallory.token}})
        await mallory.send({"packet_type": "request_statuses", "subject_id": "mephisto", "data": {}})
        await mallory.send({"packet_type": "agent_details", "subject_id": "x", "data": {"request_id": "x"}})
        await assert_up(http, honest, "forged packets")
        log.append("forged packets")

        # oversized frames: over the page limit (refused), over the router's frame limit (socket closed)
        await mallory.send(mallory.live(mallory.agent_id, "x" * (600 * 1024), mallory.token))
        big = await websockets.connect(f"ws://127.0.0.1:{port}", max_size=None)
        with pytest.raises(websockets.ConnectionClosed):
            await big.send("x" * (17 * 1024 * 1024))
            await asyncio.wait_for(big.recv(), 10)
        await assert_up(http, honest, "oversized frames")
        log.append("oversized frames")

        # malformed JSON and JSON that is no packet
        for raw in ("{not json", "[1, 2]", "null", '"text"', "{}", '{"packet_type": 5}', b"\x00\xff\x10"):
            await mallory.ws.send(raw)
        reply = await http.post(url + "/submit_task", content=b"{broken", headers={"Content-Type": "application/json"})
        assert reply.status_code == 400
        reply = await http.post(url + "/request_agent", json={"provider_data": "nonsense"})
        assert reply.status_code == 400
        await assert_up(http, honest, "malformed JSON")
        log.append("malformed JSON")

        # 2,000 headers (CVE-2024-37890 crashed ws < 8.17.1 on an upgrade whose key fell past Node's limit)
        filler = b"a: b\r\n" * 2000  # short lines: within Node's 16 KiB of headers, past its 2,000 header lines
        answer = await raw_http(port, b"GET / HTTP/1.1\r\nHost: x\r\n" + filler + b"Upgrade: websocket\r\n"
                                b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                                b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        assert not answer.startswith(b"HTTP/1.1 101"), answer[:100]
        await raw_http(port, b"GET /is_alive HTTP/1.1\r\nHost: x\r\n" + filler + b"\r\n")
        await assert_up(http, honest, "2,000 headers")
        log.append("2,000 headers")

        # a multipart bomb (CVE-2022-24434 crashed dicer): many parts, a malformed header, 400 KB in all
        parts = b"".join(b"--b\r\nContent-Disposition: form-data; name=\"f%d\"; filename=\"x\"\r\n\r\n%s\r\n"
                         % (i, b"y" * 30) for i in range(5000))
        bomb = parts + b"--b\r\nContent-Disposition: form-data; name=\"\r\n\xff\xff: \r\n\r\n--b--\r\n"
        for path in ("/submit_task", "/submit_onboarding"):
            reply = await http.post(url + path, content=bomb, headers={"Content-Type": "multipart/form-data; boundary=b"})
            assert reply.status_code in (400, 403), f"multipart bomb on {path}: HTTP {reply.status_code}"
        reply = await http.post(url + "/submit_task", content=b'{"a": "' + b"z" * (2 * 1024 * 1024) + b'"}',
                                headers={"Content-Type": "application/json"})
        assert reply.status_code == 413
        await assert_up(http, honest, "multipart bomb")
        log.append("multipart bomb")

        # a flood of 1,000 messages in a second from mallory's own, valid session
        start = time.time()
        for i in range(1000):
            await mallory.send(mallory.live(mallory.agent_id, f"flood {i}", mallory.token))
        assert time.time() - start < 5
        await assert_up(http, honest, "a flood of 1,000 messages")
        log.append("flood")

        # mallory's socket never received anything meant for the victim
        for_victim = [p for p in mallory.received if p.get("subject_id") == victim.agent_id]
        assert not for_victim, f"mallory's socket received the victim's packets: {for_victim[:3]}"

        # a replayed submission, once the honest workers submitted theirs
        while not all(c.done for c in honest) and time.time() < victim.deadline:
            await asyncio.sleep(1)
        assert all(c.done for c in honest), [c.seen for c in honest]
        reply = await http.post(url + "/submit_task", json=victim.submission)
        assert reply.status_code == 409, f"replayed submission: HTTP {reply.status_code}"
        log.append("replayed submission")
        await mallory.ws.close()


async def scenario(port: int, log: list[str]) -> list[PageClient]:
    deadline = time.time() + 400
    honest = [PageClient(name, port, inputs=2, think=0.3, deadline=deadline) for name in ("alice", "bob")]
    async with httpx.AsyncClient(verify=shared_tls_context()) as http:
        await asyncio.gather(*(c.run(http) for c in honest), attack(port, honest, log))
    return honest


@pytest.mark.slow  # a real launch through a whole HIT: minutes, not seconds
def test_hostile_clients_leave_honest_work_intact(tmp_path):
    require_router()
    port = free_port()
    run = CliRun("live_chat_da", tmp_path, ["conf=offline_small", f"mephisto.architect.port={port}",
                                             f"mephisto.task.task_name={TASK}",
                                             "mephisto.blueprint.num_conversations=3",
                                             "mephisto.task.max_num_concurrent_units=0",
                                             "live_chat.min_inputs=2", "live_chat.seed=0"])
    log: list[str] = []
    try:
        honest = asyncio.run(scenario(port, log))
    finally:
        run.stop()
    assert log == ["forged submissions", "forged packets", "oversized frames", "malformed JSON", "2,000 headers",
                   "multipart bomb", "flood", "replayed submission"]
    text = run.log()
    for reason in ("POST /submit_task: missing or forged token", "mephisto_bound_live_update with a missing or forged",
                   "heartbeat with a missing or forged token", "alive with a missing or forged token",
                   "client_bound_live_update from a socket that is not the Mephisto server's",
                   "system alive without the server's token", "frame of", "not JSON",
                   "more than 50 packets in a second", "unit already submitted (replay)"):
        assert reason in text, f"router log has no refusal {reason!r}"

    dialeval("export", TASK, "--out", str(tmp_path / "out.jsonl"), "--mephisto-data", str(run.data_dir))
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    convs = [r for r in records if r["type"] == "conversation"]
    complete = sorted({c["worker_id"].split("_")[0] for c in convs if c["status"] == "complete"})
    assert complete == ["alice", "bob"]
    honest_turns = sorted(t["text"] for c in convs if not c["worker_id"].startswith("mallory")
                          for t in c["turns"] if t["speaker"] == "human")
    assert honest_turns == sorted(t for c in honest for t in c.sent)
    # every message was acknowledged end to end (the server confirms what the world stored)
    assert all(sorted(c.confirmed) == sorted(c.sent) and not c.unconfirmed for c in honest)
    assert INJECTED not in json.dumps([c for c in convs if not c["worker_id"].startswith("mallory")])


def test_router_patches_are_checked(monkeypatch):
    """Through compat/patching.py's mechanism: each text patch of Mephisto's server.js must match once; a
    Mephisto of another version is refused; the copied ``_send_alive`` body must still be Mephisto's; each
    replaced method is ours afterwards, and a second install changes nothing."""
    from mephisto.operations.client_io_handler import ClientIOHandler

    from parlai_dialeval.compat import patching
    from parlai_dialeval.compat.patching import CompatError, is_ours

    with pytest.raises(CompatError, match="expected exactly one .* server.js .*found 0"):
        compat_router.patch_server('const multer = require("multer");\n')
    compat_router.install()
    assert is_ours(ClientIOHandler._send_alive) and is_ours(ClientIOHandler._on_message)
    on_message = ClientIOHandler._on_message
    compat_router.install()
    assert ClientIOHandler._on_message is on_message  # wrapped once, not twice

    def _send_alive(self, channel_id):  # an upstream whose alive packet changed
        return None

    monkeypatch.setattr(ClientIOHandler, "_send_alive", _send_alive)
    with pytest.raises(CompatError, match="system alive token: .*_send_alive is not the code the patch copied"):
        compat_router.install()
    monkeypatch.setattr(patching.importlib.metadata, "version", lambda name: "1.2.0")
    with pytest.raises(CompatError, match="node router patches was written for mephisto 1.1.1, 1.2.0 is installed"):
        compat_router.install()


# The advisories that hit Mephisto 1.1.1's router and the versions that fixed them, as the GitHub Advisory
# Database listed them on ADVISORIES_CHECKED. Kept by hand: `npm audit` posts to npm's audit endpoint, which
# CI's network (GET only from npm's registry) refuses (405), so install time cannot ask; the list's age is
# checked instead. To renew it: `npm audit --omit=dev` in crowdsourcing/router where the endpoint answers,
# then FIXED and the date.
FIXED = {"ws": (8, 17, 1), "body-parser": (1, 20, 3), "path-to-regexp": (0, 1, 12), "cookie": (0, 7, 0),
         "qs": (6, 14, 1), "express": (4, 21, 2)}
ADVISORIES_CHECKED, ADVISORIES_MAX_AGE = date(2026, 11, 24), timedelta(days=90)


def test_router_lockfile_has_no_known_vulnerable_versions():
    """The versions the router runs on (package-lock.json) are past the fixes of the advisories that hit
    Mephisto 1.1.1's router: ws CVE-2024-37890 (fixed 8.17.1), body-parser CVE-2024-45590 (1.20.3),
    path-to-regexp CVE-2024-52798 (0.1.12), cookie CVE-2024-47764 (0.7.0), qs GHSA-6rw7-vpxm-498p (6.14.1);
    multer / busboy / dicer (CVE-2022-24434) are gone."""
    lock = json.loads((compat_router.ROUTER_DIR / "package-lock.json").read_text())
    versions = {path.rsplit("node_modules/", 1)[-1]: tuple(int(x) for x in entry["version"].split("."))
                for path, entry in lock["packages"].items() if path}
    assert not {"multer", "busboy", "dicer"} & versions.keys()
    for name, minimum in FIXED.items():
        assert versions[name] >= minimum, f"{name} {versions[name]} is older than {minimum}"


def test_router_advisory_list_is_not_stale():
    """A hand-kept list goes stale silently: past ADVISORIES_MAX_AGE it fails until someone checks it again."""
    age = date.today() - ADVISORIES_CHECKED
    assert age <= ADVISORIES_MAX_AGE, (
        f"the router's advisory list (FIXED) was checked {age.days} days ago, on {ADVISORIES_CHECKED}: run "
        "`npm audit --omit=dev` in crowdsourcing/router, update FIXED and ADVISORIES_CHECKED")


def start_router(router: Path, port: int) -> subprocess.Popen:
    """`node server.js` of a built router on ``port``, once it answers (its output piped, for the caller)."""
    node = subprocess.Popen(["node", "server.js"], cwd=router, env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    end = time.time() + 30
    while time.time() < end:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/is_alive", timeout=2, verify=shared_tls_context()).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    return node


def run_router(router: Path, scenario) -> tuple:
    """(what ``scenario(port)`` returned, the router's output): a built router started on a free port for the
    coroutine and stopped after it, however it ends."""
    port = free_port()
    node = start_router(router, port)
    try:
        result = asyncio.run(scenario(port))
    finally:
        node.terminate()
        output = node.communicate(timeout=10)[0]
    return result, output


def test_built_router_runs_on_our_modules_without_npm(tmp_path):
    """A launch's router build never runs `npm install` (Mephisto's source folder is given as the server
    source), links the modules install.sh installed, and starts from them: no network needed."""
    require_router()
    from mephisto.abstractions.architects.router import build_router as mephisto_router

    sources = []

    def mephisto_build(build_dir, task_run, version, server_source_path=None):
        sources.append(server_source_path)
        shutil.copytree(server_source_path, Path(build_dir) / "router")
        return str(Path(build_dir) / "router")

    router = Path(compat_router.router_builder(mephisto_build)(str(tmp_path), None))
    assert sources == [mephisto_router.NODE_SERVER_SOURCE_ROOT]
    assert (router / "node_modules").resolve() == (compat_router.ROUTER_DIR / "node_modules").resolve()
    assert (router / compat_router.SECRET_FILE).stat().st_mode & 0o077 == 0
    port = free_port()
    node = start_router(router, port)
    try:
        reply = httpx.post(f"http://127.0.0.1:{port}/submit_task", json={"USED_AGENT_ID": "1", "final_data": {}})
        assert reply.status_code == 403
        assert httpx.get(f"http://127.0.0.1:{port}/download_file/..%2Fetc%2Fpasswd").status_code == 404
    finally:
        node.terminate()
        output = node.communicate(timeout=10)[0]
    assert "refused POST /submit_task: missing or forged token" in output
