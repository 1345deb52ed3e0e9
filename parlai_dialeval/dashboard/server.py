"""Serving the dashboard: a Werkzeug server on its own thread (beside ``dialeval launch`` or alone for
``dialeval dashboard``), bound to 127.0.0.1 unless told otherwise, with its secret."""
from __future__ import annotations

import logging
import os
import secrets
import threading
from dataclasses import dataclass

from parlai_dialeval.errors import DialevalError

DEFAULT_PORT = 3400
PASSWORD_ENV = "DIALEVAL_DASHBOARD_PASSWORD"


@dataclass
class Dashboard:
    server: object
    thread: threading.Thread
    host: str
    port: int
    token: str | None  # None: the password of DIALEVAL_DASHBOARD_PASSWORD opens it

    @property
    def url(self) -> str:
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{shown}:{self.port}/"

    def announce(self) -> str:
        if self.token is None:
            return f"Dashboard: {self.url} (sign in with the password in ${PASSWORD_ENV})"
        return f"Dashboard: {self.url}?token={self.token} (the token is needed; keep it private)"

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(10)
        self.server.server_close()


def add_server_args(parser, prefix: str = "") -> None:
    """--[dashboard-]host, --[dashboard-]port, --[dashboard-]refresh."""
    parser.add_argument(f"--{prefix}host", default="127.0.0.1",
                        help="address the dashboard listens on (default 127.0.0.1: this machine only; reach it from "
                             "elsewhere through an SSH tunnel rather than opening it)")
    parser.add_argument(f"--{prefix}port", type=int, default=DEFAULT_PORT, help="the dashboard's port")
    parser.add_argument(f"--{prefix}refresh", type=int, default=5, help="seconds between the overview's reloads")


def start(source, host: str = "127.0.0.1", port: int = DEFAULT_PORT, refresh: int = 5) -> Dashboard:
    """Serve ``source`` (a ``TaskSource``) in a background thread. One request at a time: Mephisto's SQLite
    handle keeps a connection per thread, and one researcher's page needs no more."""
    from werkzeug.serving import make_server

    from parlai_dialeval.dashboard.app import create_app
    from parlai_dialeval.crowdsourcing.platform.ports import port_holder, port_is_free

    if refresh < 1:
        raise DialevalError(f"--refresh: the overview reloads every N >= 1 seconds (got {refresh})")
    password = os.environ.get(PASSWORD_ENV)
    if password is not None and len(password) < 12:
        raise DialevalError(f"${PASSWORD_ENV} is {len(password)} characters long; use at least 12 (or unset it "
                            "and use the token printed at start)")
    token = None if password else secrets.token_urlsafe(24)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per reload would drown the launch's output
    if not port_is_free(port):
        raise DialevalError(f"dashboard port {port} is in use by {port_holder(port)}: stop that process or pick another "
                            "port (dialeval dashboard --port, dialeval launch --dashboard-port)")
    server = make_server(host, port, create_app(source, password or token, refresh), threaded=False)
    thread = threading.Thread(target=server.serve_forever, name="dialeval-dashboard", daemon=True)
    thread.start()
    return Dashboard(server, thread, host, port, token)
