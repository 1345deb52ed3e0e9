"""Serving the dashboard: waitress on its own thread (beside ``dialeval launch`` or alone for
``dialeval dashboard``), bound to 127.0.0.1 unless told otherwise, with its secret.

Waitress reads and writes every connection on one event loop and hands the app only whole requests, so an
idle or slow client (half its headers sent, a body trickling in) holds its own connection and nobody
else's; it drops a connection idle for ``channel_timeout`` and refuses a body over ``MAX_BODY`` before
reading it. Werkzeug's own server (Mephisto pins Werkzeug 1.0.1) served one connection at a time with no
timeouts. dashboard/guard.py adds what waitress lacks: a deadline for a whole request (a client trickling a
header line every few seconds is never idle), a cap on one source's connections, and a throttle on wrong
sign-ins."""
from __future__ import annotations

import logging
import os
import secrets
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from parlai_dialeval.errors import DialevalError

DEFAULT_PORT = 3400
PASSWORD_ENV = "DIALEVAL_DASHBOARD_PASSWORD"
CHANNEL_TIMEOUT = 20  # seconds a connection may sit idle (a request half sent included) before it is closed
REQUEST_SECONDS = 10  # seconds a request (headers and body) has to arrive whole (dashboard/guard.py)
CONNECTION_LIMIT = 200  # connections at once; one source holds at most guard.CONNECTIONS_PER_SOURCE of them
MAX_HEADERS = 16 * 1024  # bytes of request line and headers: the session cookie and a participant's address


@dataclass
class Dashboard:
    server: object
    thread: threading.Thread
    host: str
    port: int
    token: str | None  # None: the password of DIALEVAL_DASHBOARD_PASSWORD opens it
    token_file: Path | None = None  # the token, readable by its owner only (removed by ``stop``)

    @property
    def url(self) -> str:
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{shown}:{self.port}/"

    def announce(self, terminal: bool | None = None) -> str:
        """The line telling the researcher where the dashboard is. The token is shown on a terminal only:
        output going to a file (a saved launch log) names the token's file instead. ``terminal``: whether
        the line goes to a terminal (default: whether stdout is one; `launch` sends stdout to its log)."""
        if self.token is None:
            return f"Dashboard: {self.url} (sign in with the password in ${PASSWORD_ENV})"
        if self.token_file is None or (sys.stdout.isatty() if terminal is None else terminal):
            return f"Dashboard: {self.url}?token={self.token} (the token is needed; keep it private)"
        return (f"Dashboard: {self.url} (sign in with the token in {self.token_file}, readable by you only; "
                "it is shown only when the output goes to a terminal)")

    def stop(self) -> None:
        from waitress import wasyncore

        # closed on the server's own loop (its sockets are not thread-safe); an empty map ends the loop
        try:
            self.server.trigger.pull_trigger(lambda: wasyncore.close_all(self.server._map))
        except OSError:  # the loop has already ended and closed its trigger: nothing left to close
            pass
        self.thread.join(10)
        self.server.task_dispatcher.shutdown()
        if self.token_file is not None:
            self.token_file.unlink(missing_ok=True)


def add_server_args(parser, prefix: str = "") -> None:
    """--[dashboard-]host, --[dashboard-]port, --[dashboard-]refresh, --[dashboard-]slow-reply."""
    from parlai_dialeval.crowdsourcing.platform.speed import PATIENCE_SECONDS

    parser.add_argument(f"--{prefix}host", default="127.0.0.1",
                        help="address the dashboard listens on (default 127.0.0.1: this machine only; reach it from "
                             "elsewhere through an SSH tunnel rather than opening it)")
    parser.add_argument(f"--{prefix}port", type=int, default=DEFAULT_PORT, help="the dashboard's port")
    parser.add_argument(f"--{prefix}refresh", type=int, default=5, help="seconds between the overview's reloads")
    parser.add_argument(f"--{prefix}slow-reply", type=float, default=PATIENCE_SECONDS,
                        help="warn when one bot reply in twenty keeps people waiting longer than this many seconds, "
                             "for its first token or the whole reply (default 10: about as long as a person keeps "
                             "their attention on a dialogue, Nielsen 1993)")


def start(source, host: str = "127.0.0.1", port: int = DEFAULT_PORT, refresh: int = 5,
          token_dir: Path | None = None) -> Dashboard:
    """Serve ``source`` (a ``TaskSource``) in a background thread; its token also goes in a file of
    ``token_dir`` readable by its owner only. The app answers one request at a time
    (one waitress thread: Mephisto's SQLite handle keeps a connection per thread, and one researcher's page
    needs no more); connections are read and written meanwhile by waitress's loop."""
    from parlai_dialeval.dashboard.app import MAX_BODY, create_app
    from parlai_dialeval.dashboard.guard import DashboardServer, LoginThrottle
    from parlai_dialeval.crowdsourcing.platform.ports import port_holder, port_is_free

    if refresh < 1:
        raise DialevalError(f"--refresh: the overview reloads every N >= 1 seconds (got {refresh})")
    password = os.environ.get(PASSWORD_ENV)
    if password is not None and len(password) < 12:
        raise DialevalError(f"${PASSWORD_ENV} is {len(password)} characters long; use at least 12 (or unset it "
                            "and use the token printed at start)")
    token = None if password else secrets.token_urlsafe(24)
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth": a line per queued reload
    if not port_is_free(port):
        raise DialevalError(f"dashboard port {port} is in use by {port_holder(port)}: stop that process or pick another "
                            "port (dialeval dashboard --port, dialeval launch --dashboard-port)")
    app = LoginThrottle(create_app(source, password or token, refresh))
    server = DashboardServer(app, request_seconds=REQUEST_SECONDS, host=host, port=port, threads=1,
                             channel_timeout=CHANNEL_TIMEOUT, cleanup_interval=1, connection_limit=CONNECTION_LIMIT,
                             max_request_header_size=MAX_HEADERS, max_request_body_size=MAX_BODY,
                             ident="", expose_tracebacks=False, asyncore_use_poll=True)  # ident "": no Server header
    thread = threading.Thread(target=server.run, name="dialeval-dashboard", daemon=True)
    thread.start()
    dashboard = Dashboard(server, thread, host, server.effective_port, token)  # port 0: the one the system chose
    if token is not None and token_dir is not None:
        dashboard.token_file = write_token(Path(token_dir) / f"{source.task_name}-{dashboard.port}.token", token)
    return dashboard


def write_token(path: Path, token: str) -> Path:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # never readable by others, even briefly
    os.fchmod(descriptor, 0o600)  # a file left by an earlier run keeps its mode through O_CREAT
    with os.fdopen(descriptor, "w") as handle:
        handle.write(token + "\n")
    return path
