"""testing/ports.py: a port handed to one process is not handed to another for KEPT_SECONDS, though it may come up
again (two test workers' launches met on one port before: the second launch refused it), and it lies outside the
kernel's ephemeral range, so no other program's bind(0) or connect() is given it meanwhile (a launch refused a port
"in use by a process this user cannot see")."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from parlai_dialeval.testing import ports


def _offered(monkeypatch, tmp_path, *choices):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(ports.tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    offered = iter(choices)
    monkeypatch.setattr(ports, "unbound_port", lambda: next(offered))


def test_a_port_offered_twice_is_handed_out_once(tmp_path, monkeypatch):
    _offered(monkeypatch, tmp_path, 40000, 40000, 40001)
    assert [ports.free_port(), ports.free_port()] == [40000, 40001]
    assert oct(os.stat(ports.ledger_path()).st_mode & 0o777) == "0o600"


def test_an_old_or_cut_line_of_the_ledger_is_forgotten(tmp_path, monkeypatch):
    _offered(monkeypatch, tmp_path, 40000, 40002)
    ports.ledger_path().write_text(f"40000 {int(time.time()) - ports.KEPT_SECONDS - 1}\n40002 17\n4000")
    assert ports.free_port() == 40000
    assert ports.ledger_path().read_text() == f"40000 {int(time.time())}\n"


def test_a_port_another_process_was_given_is_not_given_here(tmp_path, monkeypatch):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    theirs = int(subprocess.run([sys.executable, "-c", "from parlai_dialeval.testing.ports import free_port; "
                                 "print(free_port())"], env=env, capture_output=True, text=True, check=True).stdout)
    _offered(monkeypatch, tmp_path, theirs, theirs + 1)
    assert ports.free_port() == theirs + 1


def test_ports_lie_outside_the_kernels_ephemeral_range_and_nothing_binds_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(ports.tempfile, "tempdir", None)
    low, high = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())  # Linux, as CI
    given = [ports.free_port() for _ in range(20)]
    assert len(set(given)) == 20 and all(p < low or p > high for p in given), (given, low, high)
    for port in given:
        with socket.socket() as sock:
            sock.bind(("", port))  # nothing held it
    # a port something listens on is never offered
    with socket.socket() as server:
        server.bind(("", given[0]))
        server.listen()
        offered = iter([given[0], given[1]])
        monkeypatch.setattr(ports._CHOOSER, "choice", lambda pool: next(offered))
        assert ports.unbound_port() == given[1]


def test_a_port_held_by_a_connection_names_its_process_not_someone_unseen():
    """A connection's own end blocks a router's bind as a listener does (the launch said "in use by a process this
    user cannot see", looking for listeners only)."""
    from parlai_dialeval.crowdsourcing.platform.ports import port_holder, port_is_free

    port = ports.free_port()
    with socket.socket() as server, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client.bind(("", port))
        client.connect(server.getsockname())
        assert not port_is_free(port)
        assert port_holder(port) == (f"pid {os.getpid()} ({' '.join(__import__('psutil').Process().cmdline()[:3])}) "
                                     "(a connection of theirs uses it; nothing listens there)")
