"""Free TCP ports for tests and rehearsals, chosen by the kernel at run time, so any number of test suites,
benchmarks and rehearsals run side by side on one machine."""
from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing is bound to now (the kernel's choice for port 0, on every interface, as the node router
    and Mephisto's servers bind). Take it just before the launch that uses it: it is not reserved."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]
