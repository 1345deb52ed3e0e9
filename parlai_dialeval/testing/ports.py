"""Free TCP ports for tests and rehearsals, chosen by the kernel at run time, so any number of test suites,
benchmarks and rehearsals run side by side on one machine."""
from __future__ import annotations

import fcntl
import os
import socket
import tempfile
import time
from pathlib import Path

# A port is bound seconds after it is chosen (a launch starts its router first), and meanwhile the kernel may
# give the same port to another process's bind(0): two test workers' launches met on one port (EADDRINUSE, the
# launch refused it). Every port handed out is kept in a ledger shared by this user's processes and not handed
# out again for this long.
KEPT_SECONDS = 600


def ledger_path() -> Path:
    return Path(tempfile.gettempdir()) / f"dialeval-free-ports-{os.getuid()}"


def kernel_port() -> int:
    """A port nothing is bound to now: the kernel's choice for port 0, on every interface, as the node router and
    Mephisto's servers bind."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def free_port() -> int:
    """A port nothing is bound to now and that no process of this user was given in the last ``KEPT_SECONDS``.
    Take it just before the launch that uses it: it is not reserved against other programs."""
    descriptor = os.open(ledger_path(), os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "r+") as ledger:
        fcntl.flock(ledger, fcntl.LOCK_EX)  # released when the file closes
        now = time.time()
        given = {}
        for line in ledger:
            fields = line.split()  # "port seconds"; a line cut by a crash is skipped
            if len(fields) == 2 and all(f.isdigit() for f in fields) and now - int(fields[1]) < KEPT_SECONDS:
                given[int(fields[0])] = int(fields[1])
        port = kernel_port()
        for _ in range(100):
            if port not in given:
                break
            port = kernel_port()
        given[port] = now
        ledger.seek(0)
        ledger.truncate()
        ledger.write("".join(f"{p} {int(t)}\n" for p, t in given.items()))
    return port
