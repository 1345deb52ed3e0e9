"""Free TCP ports for tests and rehearsals, chosen by the kernel at run time, so any number of test suites,
benchmarks and rehearsals run side by side on one machine."""
from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import time
from pathlib import Path

from parlai_dialeval.crowdsourcing.platform.ports import port_is_free

# A port is bound seconds after it is chosen (a launch starts its router first). Meanwhile another program may be
# given it: two test workers' launches met on one port (EADDRINUSE, the launch refused it), and a port the kernel
# had chosen for bind(0) was bound by some other socket before the router ("in use by a process this user cannot
# see": no listener). So ports come from outside the kernel's ephemeral range, which it never hands out by itself
# (bind(0), connect()), and every port handed out is kept in a ledger shared by this user's processes and not
# handed out again for this long.
KEPT_SECONDS = 600
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_CHOOSER = random.Random()  # its own generator: a test seeding the global one neither steers nor is steered


def ledger_path() -> Path:
    return Path(tempfile.gettempdir()) / f"dialeval-free-ports-{os.getuid()}"


def ports_the_kernel_never_picks() -> range:
    """The larger block below (from 10000) or above the kernel's ephemeral range (the ports bind(0) and connect()
    are given); empty where that range cannot be read (not Linux)."""
    try:
        low, high = map(int, EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return range(0)
    return max(range(max(10000, low - 16384), low), range(high + 1, 65536), key=len)


def unbound_port() -> int:
    """A port nothing is bound to now, outside the kernel's ephemeral range where it can be read, else the
    kernel's own choice for port 0."""
    pool = ports_the_kernel_never_picks()
    for _ in range(100 if pool else 0):
        port = _CHOOSER.choice(pool)
        if port_is_free(port):
            return port
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
        port = unbound_port()
        for _ in range(100):
            if port not in given:
                break
            port = unbound_port()
        given[port] = now
        ledger.seek(0)
        ledger.truncate()
        ledger.write("".join(f"{p} {int(t)}\n" for p, t in given.items()))
    return port
