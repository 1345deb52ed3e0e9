"""testing/ports.py: a port handed to one process is not handed to another for KEPT_SECONDS, though the kernel's
bind(0) may choose it again (two test workers' launches met on one port before: the second launch refused it)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from parlai_dialeval.testing import ports


def _kernel_says(monkeypatch, tmp_path, *choices):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(ports.tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    offered = iter(choices)
    monkeypatch.setattr(ports, "kernel_port", lambda: next(offered))


def test_a_port_the_kernel_offers_twice_is_handed_out_once(tmp_path, monkeypatch):
    _kernel_says(monkeypatch, tmp_path, 40000, 40000, 40001)
    assert [ports.free_port(), ports.free_port()] == [40000, 40001]
    assert oct(os.stat(ports.ledger_path()).st_mode & 0o777) == "0o600"


def test_an_old_or_cut_line_of_the_ledger_is_forgotten(tmp_path, monkeypatch):
    _kernel_says(monkeypatch, tmp_path, 40000, 40002)
    ports.ledger_path().write_text(f"40000 {int(time.time()) - ports.KEPT_SECONDS - 1}\n40002 17\n4000")
    assert ports.free_port() == 40000
    assert ports.ledger_path().read_text() == f"40000 {int(time.time())}\n"


def test_a_port_another_process_was_given_is_not_given_here(tmp_path, monkeypatch):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    theirs = int(subprocess.run([sys.executable, "-c", "from parlai_dialeval.testing.ports import free_port; "
                                 "print(free_port())"], env=env, capture_output=True, text=True, check=True).stdout)
    _kernel_says(monkeypatch, tmp_path, theirs, theirs + 1)
    assert ports.free_port() == theirs + 1
