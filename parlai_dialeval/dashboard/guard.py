"""What a stranger's connections and guesses may cost the dashboard (issue 52, item 4; docs/security.md).

Waitress closes a connection only once it has been idle for ``channel_timeout``: a client that sends one header
line every 12 s is never idle, and 105 of them held every one of waitress's connections, so the sign-in page
stopped answering. Here:

- ``DashboardServer``: every request must arrive whole (headers and body) within ``request_seconds`` of its first
  byte (or of the connection's opening), else its connection is closed; one source (an IPv4 address, an IPv6 /64)
  holds at most ``CONNECTIONS_PER_SOURCE`` connections at once, a further one is answered 429 and closed. Waitress
  has neither (only the idle timeout and a total), so its server and channel are subclassed for them.
- ``LoginThrottle``: sign-in attempts (``POST /login``, a ``?token=`` in any address) per source: ``LOGIN_BURST``
  wrong ones, then one per ``LOGIN_EVERY`` seconds; past that, 429 with Retry-After, before the app compares
  anything. Hand-written WSGI middleware: Flask-Limiter would be a new dependency for a dozen lines.
"""
from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict
from urllib.parse import parse_qs

from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer

CONNECTIONS_PER_SOURCE = 20  # a researcher's browser opens about 6 per site; a few tabs and a script stay within
LOGIN_BURST = 5  # wrong sign-ins in a row from one source before they are slowed down
LOGIN_EVERY = 12.0  # then one more every this many seconds (5 a minute)
SOURCES_KEPT = 10_000  # sign-in budgets kept at most (the oldest forgotten first)
SECURITY_HEADERS = [("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"),
                    ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"),
                    ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")]


def source_of(address: str) -> str:
    """The key of a source's budgets: an IPv4 address, or an IPv6 address's /64."""
    try:
        parsed = ipaddress.ip_address(str(address).split("%")[0])
    except ValueError:
        return str(address)
    if parsed.version == 4:
        return str(parsed)
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    return str(ipaddress.ip_network(f"{parsed}/64", strict=False))


class DeadlineChannel(HTTPChannel):
    """Waitress's channel, timing the request it is receiving from its first byte, and refusing a source's
    connection past ``CONNECTIONS_PER_SOURCE``."""

    def __init__(self, server, sock, addr, adj, map=None):
        super().__init__(server, sock, addr, adj, map)
        self.request_started: float | None = time.monotonic()  # a connection must send its first request in time
        self.source = source_of(addr[0] if isinstance(addr, tuple) and addr else addr)
        held = sum(getattr(c, "source", None) == self.source for c in list(server.active_channels.values()))
        if held > server.per_source:
            try:
                sock.send(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 10\r\nContent-Length: 0\r\n"
                          b"Connection: close\r\n\r\n")
            except OSError:
                pass
            self.handle_close()

    def received(self, data):
        if self.request is None and self.request_started is None:
            self.request_started = time.monotonic()
        accepted = super().received(data)
        if self.request is None and not self.will_close:  # every request in it complete: none being received
            self.request_started = None
        return accepted


class DashboardServer(TcpWSGIServer):
    """Waitress's TCP server with ``DeadlineChannel``s: a request still incomplete ``request_seconds`` after its
    first byte closes its connection, at the next maintenance (every ``cleanup_interval`` seconds)."""

    channel_class = DeadlineChannel

    def __init__(self, application, request_seconds: float, per_source: int = CONNECTIONS_PER_SOURCE, **adjustments):
        self.request_seconds, self.per_source = request_seconds, per_source
        super().__init__(application, **adjustments)

    def maintenance(self, now):
        super().maintenance(now)
        cutoff = time.monotonic() - self.request_seconds
        for channel in list(self.active_channels.values()):
            started = getattr(channel, "request_started", None)
            if started is not None and started < cutoff and not channel.requests:
                channel.will_close = True  # closed by the loop (writable, then handle_write)


class LoginThrottle:
    """WSGI middleware counting wrong sign-ins per source (a 401 answer to an attempt): ``burst`` of them, then
    one per ``every`` seconds; an attempt past that is answered 429 with Retry-After without reaching the app."""

    def __init__(self, app, burst: int = LOGIN_BURST, every: float = LOGIN_EVERY, clock=time.monotonic):
        self.app, self.burst, self.every, self.clock = app, burst, every, clock
        self.budgets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # source -> (tokens, at)
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        if not is_attempt(environ):
            return self.app(environ, start_response)
        source = source_of(environ.get("REMOTE_ADDR", ""))
        wait = self.wait(source)
        if wait > 0:
            body = (f"<!doctype html><title>Sign in</title><p>Too many wrong sign-ins from your address: try again "
                    f"in {wait} seconds.</p>").encode()
            start_response("429 Too Many Requests", [("Content-Type", "text/html; charset=utf-8"),
                                                     ("Content-Length", str(len(body))), ("Retry-After", str(wait)),
                                                     *SECURITY_HEADERS])
            return [body]
        answered = {}

        def recording(status, headers, exc_info=None):
            answered["status"] = status
            return start_response(status, headers, exc_info)

        result = self.app(environ, recording)
        if answered.get("status", "").startswith("401"):
            self.failed(source)
        return result

    def _tokens(self, source: str) -> float:
        tokens, at = self.budgets.get(source, (float(self.burst), self.clock()))
        return min(float(self.burst), tokens + (self.clock() - at) / self.every)

    def wait(self, source: str) -> int:
        """Seconds until ``source`` may try again (0: now)."""
        with self.lock:
            tokens = self._tokens(source)
        return 0 if tokens >= 1 else int((1 - tokens) * self.every) + 1

    def failed(self, source: str) -> None:
        with self.lock:
            self.budgets[source] = (self._tokens(source) - 1, self.clock())
            self.budgets.move_to_end(source)
            while len(self.budgets) > SOURCES_KEPT:
                self.budgets.popitem(last=False)


def is_attempt(environ) -> bool:
    """A sign-in attempt: the form's POST /login, or a token in the address (app.py's gate reads it on any GET)."""
    if environ.get("REQUEST_METHOD") == "POST" and environ.get("PATH_INFO") == "/login":
        return True
    return "token" in parse_qs(environ.get("QUERY_STRING", ""))
