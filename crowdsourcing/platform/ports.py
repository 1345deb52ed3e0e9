"""Whether a launch can serve on its port, and, when it cannot, what holds the port.

Mephisto's LocalArchitect starts the node router and reports it running without checking that it could
bind: with the port held (say by a router a killed launch left behind) the new router exits with
EADDRINUSE and Mephisto's client connects to the old one, so ``launch`` printed a URL that served nothing.
"""
from __future__ import annotations

import errno
import socket

from parlai_dialeval.errors import DialevalError


def port_is_free(port: int) -> bool:
    """True when a listening socket can bind ``port`` on every interface (as the node router does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # as the router does: a connection of a just-stopped router in TIME_WAIT must not count as in use
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def port_holder(port: int) -> str:
    """What holds ``port``: 'pid 123 (node server.js)' for a server listening on it, else a process whose connection
    uses it as its own end, else a phrase saying it cannot be told."""
    import psutil

    try:
        connections = [c for c in psutil.net_connections(kind="tcp") if c.laddr and c.laddr.port == port]
    except psutil.AccessDenied:
        return "a process this user cannot see"
    listening = sorted({c.pid for c in connections if c.status == psutil.CONN_LISTEN and c.pid})
    if listening:
        return ", ".join(map(_described, listening))
    # a socket bound without listening: a client's end, or a server's connection that outlived its listener
    holding = sorted({c.pid for c in connections if c.pid})
    if holding:
        return ", ".join(map(_described, holding)) + " (a connection of theirs uses it; nothing listens there)"
    return "a process this user cannot see"


def _described(pid: int) -> str:
    import psutil

    try:
        command = " ".join(psutil.Process(pid).cmdline()[:3]) or psutil.Process(pid).name()
    except psutil.Error:
        command = "exited"
    return f"pid {pid} ({command})"


class PortInUseError(DialevalError):
    def __init__(self, port: int, holder: str):
        super().__init__(f"port {port} is in use by {holder}: stop that process or launch with "
                         f"mephisto.architect.port=ANOTHER_PORT")


def require_free_port(port: int) -> None:
    if not port_is_free(port):
        raise PortInUseError(port, port_holder(port))
