"""Issue 38 item 10: what a study writes is its owner's alone, and the dashboard's token stays out of logs.

A real `dialeval launch live_chat_da conf=offline_small --dashboard` (mock provider, output to a log file as a
researcher saving it would) with one worker's whole HIT through the real router: the data folder is 0700, its
database and every file and folder of the raw chat no one else's, `dialeval export` writes 0600; the log holds
the dashboard's address but not its token, which is in a file only its owner reads and opens the dashboard.
Older data folders (0755 folders, 0644 databases) are closed at the next command; on a terminal the token is
printed as before."""
from __future__ import annotations

import asyncio
import re
import stat
import sys
import time
from pathlib import Path

import httpx
import pytest

from parlai_dialeval.testing.real_model import free_port

from .page_client import PageClient
from .protocol_harness import CliRun
from .test_dashboard import SECRET, StandIn


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_launch_writes_for_its_owner_only_and_keeps_the_token_out_of_its_log(tmp_path):
    port, dashboard_port = free_port(), free_port()
    # two conversations, one worker: the run (and its dashboard) would end by itself once every unit is done
    run = CliRun("live_chat_da", tmp_path, [
        "conf=offline_small", f"mephisto.architect.port={port}", "mephisto.task.task_name=private_lc",
        "mephisto.blueprint.num_conversations=2", "live_chat.min_inputs=1", "live_chat.seed=0", "--dashboard",
        "--dashboard-port", str(dashboard_port)])
    try:
        worker = PageClient("private01", port, inputs=1, think=0.1, deadline=time.time() + 240)

        async def one_hit():
            async with httpx.AsyncClient() as http:
                await worker.run(http)

        asyncio.run(one_hit())
        assert worker.done, worker.seen
        found = None
        for _ in range(60):
            found = re.search(r"Dashboard: (http://127\.0\.0\.1:\d+/) \(sign in with the token in (\S+),", run.log())
            if found:
                break
            time.sleep(0.5)
        assert found, run.log()[-3000:]
        token_file = Path(found[2])
        token = token_file.read_text().strip()
        assert token_file.parent == run.data_dir / "dashboard" and mode(token_file) == 0o600
        with httpx.Client(base_url=found[1], timeout=30) as web:
            assert web.post("/login", data={"token": token}).status_code == 302
            assert "private01" in web.get("/").text
    finally:
        run.stop()
    assert token not in run.log()
    assert not token_file.exists()  # gone with the dashboard
    data = run.data_dir
    assert mode(data) == 0o700 and mode(data / "database.db") == 0o600
    raw_chat = list((data / "data").rglob("*"))
    assert any(p.is_file() and "private01" in p.read_text(errors="ignore") for p in raw_chat)  # the worker's words
    opened = [f"{p.relative_to(data)} {oct(mode(p))}" for p in raw_chat if mode(p) & 0o077]
    assert opened == []
    out = tmp_path / "export" / "private.jsonl"
    run.export("private_lc", out)
    assert mode(out) == 0o600 and "private01" in out.read_text()


def test_an_older_data_folder_is_closed_by_the_next_command(tmp_path):
    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

    data = tmp_path / "mephisto"
    (data / "prolific").mkdir(parents=True)
    opened = [data / "database.db", data / "database.db-wal", data / "prolific" / "prolific.db"]
    for path in opened:
        path.write_bytes(b"")
        path.chmod(0o644)
    for folder in (data, data / "prolific"):
        folder.chmod(0o755)
    prepare_mephisto(data)
    assert [oct(mode(p)) for p in (data, data / "prolific")] == ["0o700"] * 2
    assert [oct(mode(p)) for p in opened] == ["0o600"] * 3


def test_a_journal_sqlite_removes_while_the_folder_is_closed_is_no_error(tmp_path, monkeypatch):
    # A Prolific launch with --dashboard died with "prolific.db-journal: no such file or folder": the dashboard
    # closes the data folder while the running task commits, and SQLite deletes its journal between the listing
    # and the chmod. Here the journal goes exactly there.
    from parlai_dialeval.crowdsourcing.platform import env

    data = tmp_path / "mephisto"
    (data / "prolific").mkdir(parents=True)
    database, journal = data / "prolific" / "prolific.db", data / "prolific" / "prolific.db-journal"
    for path in (database, journal):
        path.write_bytes(b"")
        path.chmod(0o644)
    listed = Path.glob

    def listing_then_commit(self, pattern):
        found = list(listed(self, pattern))
        if journal in found:
            journal.unlink()
        return iter(found)

    monkeypatch.setattr(Path, "glob", listing_then_commit)
    env.keep_private(data)
    assert oct(mode(database)) == "0o600" and not journal.exists()


def test_the_token_goes_to_a_terminal_or_to_its_file(tmp_path, monkeypatch):
    from parlai_dialeval.dashboard.server import PASSWORD_ENV, start

    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    dashboard = start(StandIn(), port=0, token_dir=tmp_path / "dashboard")
    try:
        assert dashboard.token != SECRET
        monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
        line = dashboard.announce()
        assert dashboard.token not in line and str(dashboard.token_file) in line
        assert dashboard.token_file.read_text() == dashboard.token + "\n" and mode(dashboard.token_file) == 0o600
        assert mode(dashboard.token_file.parent) == 0o700
        monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
        assert f"?token={dashboard.token}" in dashboard.announce()
    finally:
        dashboard.stop()
    assert not dashboard.token_file.exists()
