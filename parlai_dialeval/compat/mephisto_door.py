"""What a stranger's or a participant's bytes may cost Mephisto 1.1.1's server (docs/security.md).

- ``SERVER_PATCHES`` (applied by ``compat/mephisto_router.py`` with its own) hook
  ``crowdsourcing/router/dialeval_door.js`` into each run's ``server.js``: requests (websocket upgrades
  included) and open sockets limited per source, no
  ``X-Powered-By``, bodies with unpaired surrogates, control characters or deep nesting refused naming the
  field, generic error bodies instead of Express's stack page, a mismatching ``mephisto_task_version``
  passed on short and once a minute (30 requests of 16 KB stalled the server two minutes), and the router
  listening on ``router_host`` (``prepare``). Retire when Mephisto's router validates its input.
- ``SOURCE_FIX``: ``WebsocketChannel``'s reader re-raised on a packet it could not read (``json.loads``,
  ``Packet.from_dict``): the link to the router restarted and the packets in flight were lost. The packet
  is dropped and logged instead. Retire when Mephisto's channel drops unreadable packets.
- ``bounded_logging``: Mephisto's loggers (and the root logger its first ``get_logger`` configures) print
  through rich, whose line wrapping takes time quadratic in the text, and log packets whole: every line is
  printed plainly, cut to ``LINE_CHARS``, its control characters escaped, at most ``LINES_PER_SECOND`` a
  second. Retire when Mephisto logs untrusted values bounded.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import re
import shutil
import sys
import threading
import time
from pathlib import Path

from parlai_dialeval.compat.patching import is_ours, ours, require_ours, require_version
from parlai_dialeval.compat.source_fixes import SourceFix

WRITTEN_FOR = "1.1.1"
DOOR = "dialeval_door.js"
SOURCES = "dialeval_sources.js"  # whose address a request comes from (the door's and the claims' budgets)
CONFIG = "dialeval_door.json"
LOCAL_HOST = "127.0.0.1"  # a rehearsal with the mock provider: this machine only
# A rehearsal's participants are the researcher and colleagues at this machine: its loopback is the lab's own
# address, or a researcher trying the task in a few tabs would be told "too many people from your network".
REHEARSAL_LAB = ("127.0.0.1", "::1")
PUBLIC_HOST = "0.0.0.0"  # a crowd provider's participants come from anywhere

# (what, exact text in server.js, replacement); each must match once, after compat/mephisto_router.py's
SERVER_PATCHES: list[tuple[str, str, str]] = [
    ("no X-Powered-By, requests per source", "const app = express();\n",
     'const app = express();\nconst door = require("./dialeval_door");\ndoor.harden(app);\n'),
    ("bodies the server could not store", "const server = http.createServer(app);\n",
     "door.after_parsing(app);\nconst server = http.createServer(app);\n"),
    ("version reports short and rare", "  const { mephisto_task_version } = req.query;\n",
     "  const mephisto_task_version = door.reported_version(req.query.mephisto_task_version, "
     "CURR_MEPHISTO_TASK_VERSION);\n"),
    ("generic error bodies", 'app.use(express.static("static"));\n',
     'app.use(express.static("static"));\ndoor.errors(app);\n'),
    ("websocket upgrades per source", "maxPayload: guard.MAX_PAYLOAD });",  # the guard's patch of the wss line
     "maxPayload: guard.MAX_PAYLOAD, verifyClient: door.admit_socket });"),
    ("listen on the chosen address",
     'server.listen(PORT, function () {\n  console.log("Listening on %d", server.address().port);\n',
     'server.listen(PORT, door.HOST, function () {\n  console.log("Listening on %s:%d", door.HOST, '
     "server.address().port);\n"),
]

_READ = ("                packet_dict = json.loads(msg_json)\n"
         "                packet = Packet.from_dict(packet_dict)\n"
         "                self.on_message(self.channel_id, packet)\n"
         "            except Exception as e:\n"
         "                # TODO(CLEAN) properly handle only failed from_dict calls\n")
SOURCE_FIX = SourceFix("mephisto.abstractions.architects.channels.websocket_channel", "mephisto", WRITTEN_FOR, [
    (_READ + "                logger.exception(repr(e), exc_info=True)\n                raise",
     _READ + "                logger.warning(f\"dropped a packet the server cannot read: {e!r}\")  # dialeval: link kept"),
])

# Stated limits at the door (docs/security.md): characters of an id in a request for a place (Prolific's are 24,
# MTurk's 12-14), and of any text in a page's act (the tasks' own limits, 2,000 for a message and 5,000 for free
# text by default, are enforced by their worlds below this)
ID_CHARS = 128
TEXT_CHARS = 20_000
LIMITS = {"id_chars": ID_CHARS, "text_chars": TEXT_CHARS}
PROXY_HEADER = "X-Forwarded-For"  # the header a proxy named in router_trusted_proxies sets with the client's address
HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,64}")
TRUSTED_PROXIES_HELP = (
    "addresses or networks of reverse proxies or tunnel agents in front of the router whose forwarding header "
    "names the participant's address (default: none, every header is ignored and the peer's address counts); behind "
    "cloudflared or ngrok on this machine: [127.0.0.1], with router_host=127.0.0.1")
PROXY_HEADER_HELP = ("the header those proxies set with the participant's address: X-Forwarded-For (default; the "
                     "address right of the last named proxy counts), Forwarded, X-Real-IP or CF-Connecting-IP")
ROUTER_HOST_HELP = ("address the task's router listens on; default 127.0.0.1 (this machine only) with the mock "
                    "provider, 0.0.0.0 (every interface) with a crowd provider; 127.0.0.1 behind a reverse proxy on "
                    "this machine")
LINE_CHARS = 2000  # a line's text at most (a traceback keeps its first and last lines)
TAIL_CHARS = 400
LINES_PER_SECOND = 50  # Mephisto's own lines of a crowd arriving at once stay within these
LINES_BURST = 500


def rehearsal(mephisto_args) -> bool:
    """Whether the launch runs on the mock provider: a rehearsal whose participants are at this machine."""
    return (mephisto_args.get("provider") or {}).get("_provider_type", "mock") == "mock"


def router_host(mephisto_args) -> str:
    """The address the node router listens on: ``mephisto.blueprint.router_host`` when set, else this machine
    only for the mock provider and every interface for a crowd provider."""
    blueprint = mephisto_args.get("blueprint") or {}
    if blueprint.get("router_host"):
        return str(blueprint.get("router_host"))
    return LOCAL_HOST if rehearsal(mephisto_args) else PUBLIC_HOST


def address_list(values, key: str) -> list[str]:
    """``values`` (a list of addresses or networks: "192.0.2.7", "10.0.0.0/8", "2001:db8::/48") checked and
    written as dialeval_door.js reads them; DialevalError naming ``key`` and the bad entry otherwise."""
    from parlai_dialeval.errors import DialevalError

    if values is None:
        return []
    if isinstance(values, str) or not all(isinstance(value, str) for value in values):
        raise DialevalError(f"mephisto.blueprint.{key}: a list of addresses or networks, e.g. {key}=[127.0.0.1] "
                            f"(got {values!r})")
    checked = []
    for value in values:
        try:
            network = ipaddress.ip_network(value.strip(), strict=False)
        except ValueError:
            raise DialevalError(f"mephisto.blueprint.{key}: {value!r} is not an IP address or network "
                                "(e.g. 127.0.0.1, 10.0.0.0/8, 2001:db8::/48)") from None
        checked.append(str(network.network_address) if network.num_addresses == 1 else str(network))
    return checked


def door_config(mephisto_args) -> dict:
    """dialeval_door.json for a launch's router: the address it listens on, the proxies whose forwarding header
    names the client (none by default) and which header that is, and the lab's own addresses (no per-source
    budget); raises DialevalError on a malformed list (``dialeval launch`` checks this before anything starts)."""
    from parlai_dialeval.errors import DialevalError

    blueprint = mephisto_args.get("blueprint") or {}
    header = str(blueprint.get("router_proxy_header") or PROXY_HEADER)
    if not HEADER_NAME.fullmatch(header):
        raise DialevalError(f"mephisto.blueprint.router_proxy_header: {header!r} is not a header name "
                            "(X-Forwarded-For, Forwarded, X-Real-IP, CF-Connecting-IP)")
    lab = address_list(blueprint.get("router_lab_addresses"), "router_lab_addresses")
    if rehearsal(mephisto_args) and not lab:
        lab = list(REHEARSAL_LAB)
    return {**LIMITS, "host": router_host(mephisto_args),
            "trusted_proxies": address_list(blueprint.get("router_trusted_proxies"), "router_trusted_proxies"),
            "proxy_header": header.lower(), "lab_addresses": lab}


def prepare(router_dir: Path, task_run) -> None:
    """Put the door beside a built router's server.js, with its settings (a router built without a task run,
    as the router tests do, listens on this machine only and trusts no proxy)."""
    config = door_config(task_run.args) if task_run is not None else {**LIMITS, "host": LOCAL_HOST}
    from parlai_dialeval.compat.mephisto_router import ROUTER_DIR

    for name in (DOOR, SOURCES):
        shutil.copy2(ROUTER_DIR / name, router_dir / name)
    (router_dir / CONFIG).write_text(json.dumps(config))


def _escaped(text: str, newlines: bool) -> str:
    """``text`` with control characters (an ANSI escape can rewrite a terminal) and unpaired surrogates (the
    stream's encoder raised on them) written as escapes; newlines kept only where ``newlines``."""
    out = []
    for char in text:
        code = ord(char)
        if (code < 32 and not (newlines and char == "\n")) or 127 <= code < 160 or 0xD800 <= code < 0xE000:
            out.append(char.encode("unicode_escape", "backslashreplace").decode("ascii")
                       if code < 0xD800 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def bounded(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, keeping its end (a traceback's last line names the error)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit - TAIL_CHARS]} ... [{len(text) - limit} characters cut] ... {text[-TAIL_CHARS:]}"


class BoundedFormatter(logging.Formatter):
    """One plain line per record: the message cut and escaped (newlines too: a stranger's text cannot forge
    a log line), a traceback cut and escaped (its own newlines kept)."""

    def format(self, record: logging.LogRecord) -> str:
        record = logging.makeLogRecord(record.__dict__)
        record.msg, record.args = _escaped(bounded(record.getMessage()), newlines=False), None
        return super().format(record)

    def formatException(self, ei) -> str:
        return _escaped(bounded(super().formatException(ei)), newlines=True)


class RateLimit(logging.Filter):
    """At most ``LINES_PER_SECOND`` lines a second (a burst of ``LINES_BURST``); the next line printed says
    how many were left out. Hand-written: the standard library has no rate limit for log records."""

    def __init__(self):
        super().__init__()
        self.tokens, self.last, self.dropped, self.lock = float(LINES_BURST), time.monotonic(), 0, threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(LINES_BURST, self.tokens + (now - self.last) * LINES_PER_SECOND)
            self.last = now
            if self.tokens < 1:
                self.dropped += 1
                return False
            self.tokens -= 1
            dropped, self.dropped = self.dropped, 0
        if dropped:
            record.msg, record.args = f"[{dropped} log lines left out: too many] {record.getMessage()}", None
        return True


def _bounded_handler() -> logging.Handler:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(BoundedFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(_RATE)
    return ours(handler)


_RATE = RateLimit()  # one budget for every Mephisto logger: a flood through several stays bounded


def _replace_rich(logger: logging.Logger) -> None:
    from rich.logging import RichHandler

    for handler in list(logger.handlers):
        if isinstance(handler, RichHandler):
            logger.removeHandler(handler)
            if not any(is_ours(h) for h in logger.handlers):
                logger.addHandler(_bounded_handler())


def bounded_logging() -> None:
    """Every Mephisto logger, present and future, and the root logger print through the bounded handler."""
    require_version("mephisto", WRITTEN_FOR, "bounded_logging")
    from mephisto.utils import logger_core

    if not is_ours(logger_core.get_logger):
        original = logger_core.get_logger

        @ours
        def get_logger(*args, **kwargs):
            logger = original(*args, **kwargs)
            _replace_rich(logger)
            _replace_rich(logging.getLogger())
            return logger

        logger_core.get_logger = get_logger
    require_ours(logger_core, "get_logger", "bounded_logging")
    for logger in [*logger_core.loggers.values(), logging.getLogger()]:
        _replace_rich(logger)


def _has_constant(code, text: str) -> bool:
    return any(text in c if isinstance(c, str) else hasattr(c, "co_consts") and _has_constant(c, text)
               for c in code.co_consts)


def check() -> list[str]:
    """What install.sh confirms: the channel's source fix took effect and the loggers are bounded."""
    from mephisto.abstractions.architects.channels.websocket_channel import WebsocketChannel

    if not _has_constant(WebsocketChannel.open.__code__, "dropped a packet the server cannot read"):
        raise ImportError("parlai_dialeval.compat: the websocket_channel source fix did not take effect")
    bounded_logging()
    return [f"mephisto {WRITTEN_FOR}: unreadable packets dropped without restarting the link, bounded plain "
            f"logging, {len(SERVER_PATCHES)} router door patches"]
