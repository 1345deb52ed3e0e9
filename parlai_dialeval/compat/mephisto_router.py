"""The one place where Mephisto 1.1.1's node router is patched (site-packages stays as it is).

Every launch builds its router from Mephisto's ``server.js``; ``install()`` wraps LocalArchitect's
``build_router`` so that the copy it builds:

- runs on this project's router dependencies (``crowdsourcing/router``: package.json + package-lock.json,
  installed by install.sh with ``npm ci``), linked in, so a launch never runs ``npm install`` (Mephisto
  runs it in site-packages at every launch, without a timeout) and starts with no network;
- loads ``crowdsourcing/router/dialeval_guard.js``: a participant's page must send, with every packet
  and every POST, the token the router issued for its agent id (an HMAC with a secret written next to
  server.js at build time); forged or missing tokens are refused and logged, never routed; only the
  Mephisto server's socket (whose ``alive`` carries the system token, added to Mephisto's
  ``ClientIOHandler._send_alive`` here) may send system packets; frames, bodies and packet rates are
  bounded; a unit is submitted once; file uploads (multer) and ``/download_file`` are gone;
- keeps the packets bound for the Mephisto server while it has no socket to the router (a relaunched
  server's router listens a moment before the server connects: pages reloading after a crash asked for
  their agent then, Mephisto's router dropped the request and the page waited for ever) and sends them
  once it connects (32 MiB at most: dialeval_guard.js's HELD_BYTES_LIMIT; a request for an agent past that is
  answered 503 "busy", and the page's transport.js asks again after Retry-After);
- no longer resends every packet: its ws send callback gets ``null`` on success, which Mephisto's
  router took for a failure;
- keeps what goes to a page whose socket has closed (a reload, a lost connection) until the page's new
  socket announces itself, then sends it before anything newer: Mephisto's router sent it into the closed socket
  and it was lost (a bot's reply showed only after a reload), and what came just after the alive overtook it (the
  page took the newer number for its first and dropped the older one: a page waited for ever for its next phase);
- loads ``crowdsourcing/router/dialeval_claims.js``: registrations bound to their page's secret, new ones limited
  per source, places of pages that never connect given back, a silent page's registration taken back with its
  resume code; its settings, patches and the claims kept for a relaunch are ``compat/mephisto_claims.py``'s
  (Mephisto's ``ClientIOHandler.associate_agent_with_registration`` is wrapped by its ``registering`` here);
- loads ``crowdsourcing/router/dialeval_replay.js``: what goes to a page is numbered and kept until the page says
  it has it, and a page's new socket gets what its dropping one lost (a bot's reply sent into it);
- is listening before LocalArchitect's ``deploy`` returns (``_deploy_until_listening``): Mephisto sleeps 1 s after
  starting node and lets its server's channel connect; on a busy machine node took longer, the connection was
  refused and the launch's log showed an ERROR ("Connect call failed ... attempting restart") before it recovered;
- gives a page that reloads or loses its socket ``reconnect_seconds`` (Mephisto: 10) to come back, and a
  page whose heartbeats stop ``ping_seconds`` (Mephisto: 15), before it marks the participant
  disconnected: under a crowd arriving at once a reload takes longer than 10 s (docs/scaling.md); set
  per task with ``mephisto.blueprint.router_reconnect_seconds`` / ``router_ping_seconds``.

Mephisto's agents also confirm to the page each act the world has stored (``_acknowledging``), so that
the page can resend what was not.

Through compat/patching.py like every patch: the Mephisto version must be the one the patches were written for,
each text replacement must match exactly once, each replaced method must be ours afterwards, and the one
copied method body (``_send_alive``) must still be the one it was copied from: anything else raises
``CompatError`` before a router is started.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import time
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import urlsplit

from parlai_dialeval.compat import mephisto_door as door
from parlai_dialeval.compat.mephisto_claims import CLAIM_PATCHES, CLAIMS_CONFIG, claims_config, registering
from parlai_dialeval.compat.patching import (CompatError, is_ours, ours, replace_once, require_call, require_ours,
                                             require_source, require_version)

MEPHISTO_VERSION = "1.1.1"
# crowdsourcing/ of the repository, installed as parlai_dialeval.crowdsourcing (found without importing it)
ROUTER_DIR = Path(find_spec("parlai_dialeval.crowdsourcing").origin).parent / "router"
GUARD = "dialeval_guard.js"
CLAIMS = "dialeval_claims.js"
REPLAY = "dialeval_replay.js"
SECRET_FILE = "dialeval_router_secret"
SYSTEM_ID = "mephisto"
ACK_KEY = "dialeval_ack"  # a live update to the page: the update ids of its acts the world has stored
REFUSED_KEY = "dialeval_refused"  # ... of its acts refused (by the router's door, or by the world: refuse_taken)
REFUSALS_KEPT = 100  # refused update ids an agent keeps, to say so again to a page that resends one
# One secret per server process: every router it builds checks tokens against it.
SECRET = secrets.token_bytes(32)


# seconds a page has to reconnect / between heartbeats before the router calls its participant disconnected: a page
# whose heartbeats stop (a browser that died, a phone locked) keeps its place this long, and comes back within it
RECONNECT_SECONDS = 45
PING_SECONDS = 300
TIMING = {"reconnect_seconds": ("const FAILED_RECONNECT_TIME = 10000;\n", "const FAILED_RECONNECT_TIME = {};\n"),
          "ping_seconds": ("const FAILED_PING_TIME = 15000;\n", "const FAILED_PING_TIME = {};\n")}


# (what, exact text in Mephisto 1.1.1's server.js, replacement)
SERVER_PATCHES: list[tuple[str, str, str]] = [
    ("load the guard instead of multer",
     'const multer = require("multer");\n',
     'const guard = require("./dialeval_guard");\n'),
    ("bounded bodies", "app.use(bodyParser.text());", "app.use(bodyParser.text({ limit: guard.BODY_LIMIT }));"),
    ("bounded form bodies", "    extended: true,\n",
     "    extended: true,\n    limit: guard.BODY_LIMIT,\n    parameterLimit: 100,\n"),
    ("bounded JSON bodies", "app.use(bodyParser.json());", "app.use(bodyParser.json({ limit: guard.BODY_LIMIT }));"),
    ("no upload storage",
     'var storage = multer.diskStorage({\n  destination: function (req, file, cb) {\n    cb(null, "/tmp/");\n  },\n'
     '  filename: function (req, file, cb) {\n'
     '    const uniqueSuffix = Date.now() + "-" + Math.round(Math.random() * 1e9);\n'
     '    cb(null, uniqueSuffix + "-" + file.fieldname + "-" + file.originalname);\n  },\n});\n\n'
     'var upload = multer({ storage: storage });\n',
     ""),
    ("bounded frames", "const wss = new WebSocket.Server({ server });",
     "const wss = new WebSocket.Server({ server, maxPayload: guard.MAX_PAYLOAD });"),
    ("ws 8 calls back with null on success", "if (error === undefined) {",
     "if (error === undefined || error === null) {"),
    ("check every packet", "      packet = JSON.parse(packet);\n",
     "      packet = guard.admit(socket, packet);\n      if (packet === null) {\n        return;\n      }\n"),
    ("issue the token with the agent", "res_obj.json(packet);", "res_obj.json(guard.with_token(packet));"),
    ("check registrations", 'app.post("/request_agent", function (req, res) {',
     'app.post("/request_agent", guard.registration_check, function (req, res) {'),
    ("check onboarding submissions", 'app.post("/submit_onboarding", function (req, res) {',
     'app.post("/submit_onboarding", guard.post_check, function (req, res) {'),
    ("check unit submissions", 'app.post("/submit_task", upload.any(), function (req, res) {',
     'app.post("/submit_task", guard.post_check, function (req, res) {'),
    ("check metadata", 'app.post("/submit_metadata", function (req, res) {',
     'app.post("/submit_metadata", guard.post_check, function (req, res) {'),
    ("check error logs", 'app.post("/log_error", function (req, res) {',
     'app.post("/log_error", guard.post_check, function (req, res) {'),
    ("serve no files", 'app.get("/download_file/:file", function (req, res) {',
     'app.get("/download_file/:file", guard.no_files, function (req, res) {'),
    ("keep what goes to the server until it is on the line",
     "function _send_message(socket, packet) {\n  if (!socket) {\n",
     "function _send_message(socket, packet) {\n"
     "  if (socket === mephisto_socket && (!socket || socket.readyState !== 1)) {\n"
     "    guard.hold(mephisto_message_queue, packet, pending_agent_requests);  // sent once the server is attached\n"
     "    return;\n  }\n  guard.release(packet);\n  if (!socket) {\n"),
    # bounded by what the world sends that agent (its bot's replies) until it ends the agent's unit
    ("keep what goes to a page until its socket is back",
     "  let socket = agent_id_to_socket[agent.agent_id];\n  if (socket) {\n",
     "  let socket = agent_id_to_socket[agent.agent_id];\n"
     "  if (socket && (socket.readyState !== 1 || agent.unsent_messages.length > 0)) {\n"
     "    agent.unsent_messages.push(packet);  // sent by the main thread once the page's socket is alive, in order\n"
     "  } else if (socket) {\n"),
    ("the main thread sends what it kept for a page only into an open socket",
     "      if (!agent_state.is_alive) {\n",
     "      if (!agent_state.is_alive || agent_id_to_socket[agent_id].readyState !== 1) {\n"),
]


# (what, exact text in Mephisto 1.1.1's server.js, replacement): dialeval_replay.js hooked in
REPLAY_PATCHES: list[tuple[str, str, str]] = [
    ("load the replay", 'const fs = require("fs");\n', 'const fs = require("fs");\nconst replay = require("./dialeval_replay");\n'),
    ("number and keep what goes to a page", "function forward_to_agent(packet) {\n",
     "function forward_to_agent(packet) {\n  replay.number(packet);\n"),
    ("a page's new socket gets what it has not had",
     "    agent_id_to_socket[agent_id] = socket;\n    socket_id_to_agent[socket.id] = agent;\n",
     "    agent_id_to_socket[agent_id] = socket;\n    socket_id_to_agent[socket.id] = agent;\n"
     "    replay.resume(alive_packet, (kept) => _send_message(socket, kept));\n"),
    ("a page's heartbeat says what it has", '        packet["data"] = { last_mephisto_ping: last_mephisto_ping };\n',
     '        replay.heard(packet);\n        packet["data"] = { last_mephisto_ping: last_mephisto_ping };\n'),
    ("nothing more for a submitted unit's page", "  // Cleanup local state for a task that's already submitted\n",
     "  // Cleanup local state for a task that's already submitted\n  replay.forget(agent_id);\n"),
]


def token(agent_id: str) -> str:
    """The token the router issues for ``agent_id`` (dialeval_guard.js computes the same)."""
    return hmac.new(SECRET, f"agent:{agent_id}".encode(), hashlib.sha256).hexdigest()


# SHA-256 of Mephisto 1.1.1's ClientIOHandler._send_alive source, which _send_alive copies
SEND_ALIVE_SOURCE = "7e8104fdcc6988f29e1dc4c1f6d37f6f2d1f3262a0e6215693901b179dc2d12f"


def patch_server(source: str, reconnect_seconds: float = RECONNECT_SECONDS, ping_seconds: float = PING_SECONDS) -> str:
    """Mephisto's server.js with every patch applied (the disconnect timings given); each must match once."""
    seconds = {"reconnect_seconds": reconnect_seconds, "ping_seconds": ping_seconds}
    timing = [(f"{name}: {seconds[name]} s", old, new.format(int(seconds[name] * 1000)))
              for name, (old, new) in TIMING.items()]
    for what, old, new in SERVER_PATCHES + door.SERVER_PATCHES + CLAIM_PATCHES + REPLAY_PATCHES + timing:
        source = replace_once(source, old, new, f"Mephisto's server.js (router patch {what!r})")
    return source


def router_modules() -> Path:
    """The installed router dependencies; a clear error when install.sh has not installed them."""
    modules = ROUTER_DIR / "node_modules"
    if not (modules / "ws" / "package.json").is_file() or not (modules / "express" / "package.json").is_file():
        raise CompatError(f"router dependencies missing in {modules}: run "
                               f"`cd {ROUTER_DIR} && npm ci --omit=dev` (install.sh does this)")
    return modules


def prepare_router_dir(router_dir: Path, claims: dict | None = None, **timing: float) -> None:
    """Turn a copy of Mephisto's node router into ours, in place (``claims``: claims_config's settings;
    ``timing``: patch_server's seconds)."""
    server = router_dir / "server.js"
    patched = patch_server(server.read_text(), **timing)
    modules = router_modules()
    for stale in ("node_modules", "package.json", "package-lock.json", "uploads"):
        path = router_dir / stale
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
    server.write_text(patched)
    for name in ("package.json", "package-lock.json", GUARD, CLAIMS, REPLAY):
        shutil.copy2(ROUTER_DIR / name, router_dir / name)
    (router_dir / CLAIMS_CONFIG).write_text(json.dumps(claims or claims_config(None)))
    (router_dir / "node_modules").symlink_to(modules, target_is_directory=True)
    secret = router_dir / SECRET_FILE
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(SECRET)


def router_builder(build_router):
    """Mephisto's ``build_router`` building our router (idempotent: a wrapped builder is returned as is)."""
    if is_ours(build_router):
        return build_router
    from mephisto.abstractions.architects.router import build_router as module

    def build(build_dir, task_run, version: str = "node", server_source_path=None):
        if version != "node" or server_source_path is not None:
            raise CompatError("parlai_dialeval runs only its own node router "
                                   f"(asked for server_type={version!r}, server_source_path={server_source_path!r})")
        # Giving Mephisto's source folder as the server source skips its `npm install` in site-packages.
        router_dir = Path(build_router(build_dir, task_run, version, server_source_path=module.NODE_SERVER_SOURCE_ROOT))
        # a router built without a task run (the router tests) takes the default timings
        blueprint = (task_run.args.get("blueprint") if task_run is not None else None) or {}
        prepare_router_dir(router_dir, claims_config(task_run), **{name: blueprint.get(f"router_{name}") or default for name, default in (
            ("reconnect_seconds", RECONNECT_SECONDS), ("ping_seconds", PING_SECONDS))})
        door.prepare(router_dir, task_run)
        return str(router_dir)

    return ours(build)


# node starts the router in about 0.3 s on a quiet machine; past this the launch goes on and Mephisto's channel
# retries on its own (logging each refusal)
ROUTER_START_SECONDS = 30.0


def wait_until_listening(process, host: str, port: int, seconds: float = ROUTER_START_SECONDS) -> bool:
    """True once ``host:port`` accepts a connection; False when ``process`` (the router) exits first or
    ``seconds`` pass (an exited router is the launch's own check to report: runner._require_router)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and process.poll() is None:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _deploy_until_listening(deploy):
    """LocalArchitect's ``deploy``, returning once the router accepts connections at the address its server's
    channel will connect to (idempotent)."""
    if is_ours(deploy):
        return deploy

    def deploy_until_listening(self) -> str:
        address = deploy(self)
        url = urlsplit(self._get_socket_urls()[0])
        wait_until_listening(self.server_process, url.hostname, url.port)
        return address

    return ours(deploy_until_listening)


@ours
def _send_alive(self, channel_id: str) -> bool:
    """Mephisto's ``ClientIOHandler._send_alive`` with the system token the router asks for."""
    from mephisto.data_model.packet import PACKET_TYPE_ALIVE, Packet

    return self.channels[channel_id].enqueue_send(
        Packet(packet_type=PACKET_TYPE_ALIVE, subject_id=SYSTEM_ID, data={"agent_token": token(SYSTEM_ID)}))


def acknowledge_taken(agent) -> None:
    """Confirm to the page the acts ``agent``'s world has taken so far; the caller has stored them. A world
    calls it itself where it stores an act before a long step (live chat, before the bot's reply streams),
    so the participant's message shows as sent at once rather than after the reply."""
    taken = agent.__dict__.pop("dialeval_taken", None)
    if taken and agent.agent_in_active_run():
        agent.get_live_run().client_io.send_live_update(agent.get_agent_id(), {ACK_KEY: taken})
        agent.__dict__.setdefault("dialeval_acked", set()).update(taken)


def refuse_taken(agent, act, reason: str) -> None:
    """The world did not store ``act``, just taken from ``agent`` (a ParlAI wrapper or a Mephisto agent), and
    tells the participant ``reason`` (a sentence of the page's catalogue): it is taken out of the acts to confirm,
    and the page is told it was refused, with the reason (``REFUSED_KEY``, as the router's door tells it), so
    the page never shows as sent a message that is not stored, and stops resending it."""
    live = getattr(agent, "mephisto_agent", agent)
    update_id = act.get("update_id") if isinstance(act, dict) else None
    taken = getattr(live, "__dict__", {}).get("dialeval_taken") or []
    if not isinstance(update_id, str) or update_id not in taken:
        return
    taken.remove(update_id)
    refused = live.__dict__.setdefault("dialeval_refused", {})
    refused[update_id] = reason
    while len(refused) > REFUSALS_KEPT:  # said again to a page resending one (below); the oldest are forgotten
        refused.pop(next(iter(refused)))
    if live.agent_in_active_run():
        live.get_live_run().client_io.send_live_update(live.get_agent_id(), {REFUSED_KEY: [update_id], "reason": reason})


def _acknowledging(get_live_update):
    """Mephisto's ``Agent.get_live_update``, confirming to the page what the world has taken.

    A world asks for a worker's next act only once its parley that took the previous ones has ended, and
    every world of ours ends a parley by saving its record (platform/session_world.py): so on entry the
    acts taken so far are stored, and their update ids go back to the page (``ACK_KEY``), which resends
    what was never confirmed (frontend/src/components/transport.js)."""
    if is_ours(get_live_update):
        return get_live_update

    def get_live_update_acknowledged(self, timeout=None):
        acknowledge_taken(self)
        act = get_live_update(self, timeout)
        if isinstance(act, dict) and act.get("update_id") is not None:
            self.__dict__.setdefault("dialeval_taken", []).append(act["update_id"])
        return act

    return ours(get_live_update_acknowledged)


def _reacknowledging(on_message):
    """Mephisto's ``ClientIOHandler._on_message``, acknowledging again a copy of an act already stored (or
    refusing again one refused): the page resends an act whose answer it never got, and Mephisto drops the copy
    by its update id."""
    if is_ours(on_message):
        return on_message
    from mephisto.data_model.packet import PACKET_TYPE_MEPHISTO_BOUND_LIVE_UPDATE

    def on_message_reacknowledging(self, packet, channel_id):
        update_id = packet.data.get("update_id") if isinstance(packet.data, dict) else None
        if packet.type == PACKET_TYPE_MEPHISTO_BOUND_LIVE_UPDATE and update_id in self.seen_update_ids:
            agent = self.get_live_run().worker_pool.get_agent_for_id(packet.subject_id)
            if agent is not None and update_id in agent.__dict__.get("dialeval_acked", ()):
                self.send_live_update(packet.subject_id, {ACK_KEY: [update_id]})
            elif agent is not None and update_id in agent.__dict__.get("dialeval_refused", {}):
                self.send_live_update(packet.subject_id, {REFUSED_KEY: [update_id],
                                                          "reason": agent.__dict__["dialeval_refused"][update_id]})
        return on_message(self, packet, channel_id)

    return ours(on_message_reacknowledging)


def install() -> None:
    """Patch LocalArchitect's router build, Mephisto's system alive, its agents' acknowledgements and its
    registrations' claims (checked, idempotent)."""
    require_version("mephisto", MEPHISTO_VERSION, "the node router patches")
    import mephisto.abstractions.architects.local_architect as local_architect
    from mephisto.data_model.agent import _AgentBase
    from mephisto.operations import client_io_handler

    if client_io_handler.SYSTEM_CHANNEL_ID != SYSTEM_ID:
        raise CompatError(f"Mephisto's system channel id is {client_io_handler.SYSTEM_CHANNEL_ID!r}, "
                               f"the router guard expects {SYSTEM_ID!r}")
    handler = client_io_handler.ClientIOHandler
    if not is_ours(handler._send_alive):
        require_source(handler._send_alive, SEND_ALIVE_SOURCE, "the system alive token")
    local_architect.build_router = router_builder(local_architect.build_router)
    architect = local_architect.LocalArchitect
    if not is_ours(architect.deploy):
        require_call(architect.deploy, "time.sleep(1)", "the router listening before the channel connects")
    require_call(architect.get_channels, "self._get_socket_urls()", "the router listening before the channel connects")
    architect.deploy = _deploy_until_listening(architect.deploy)
    handler._send_alive = _send_alive
    _AgentBase.get_live_update = _acknowledging(_AgentBase.get_live_update)
    handler._on_message = _reacknowledging(handler._on_message)
    handler.associate_agent_with_registration = registering(handler.associate_agent_with_registration)
    for owner, name in ((local_architect, "build_router"), (architect, "deploy"), (handler, "_send_alive"),
                        (_AgentBase, "get_live_update"), (handler, "_on_message"),
                        (handler, "associate_agent_with_registration")):
        require_ours(owner, name, "the node router patches")


def check() -> list[str]:
    """What install.sh confirms: every server.js patch fits Mephisto's router (and whether the router's
    own dependencies are installed: without npm they are not, and install.sh says so)."""
    from mephisto.abstractions.architects.router import build_router as module

    install()
    patch_server((Path(module.NODE_SERVER_SOURCE_ROOT) / "server.js").read_text())
    try:
        modules = f"dependencies in {router_modules()}"
    except CompatError as missing:
        modules = str(missing)
    return [f"mephisto {MEPHISTO_VERSION} router: {len(SERVER_PATCHES) + len(door.SERVER_PATCHES) + len(CLAIM_PATCHES) + len(REPLAY_PATCHES) + len(TIMING)} server.js patches fit, session tokens "
            f"and acknowledgements installed; {modules}"]
