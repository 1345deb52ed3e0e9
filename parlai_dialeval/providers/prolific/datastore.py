"""The Prolific provider's local state, next to Mephisto's database (``<data dir>/prolific/``).

``prolific.db`` (SQLite) maps task runs to studies and agents to submissions, keeps the block list and
the review decisions (written before each API call, so a crash between the two is found and never pays
twice). Tokens live apart in ``credentials.json`` (mode 0600), never in the database, configs or logs.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from parlai_dialeval.errors import DialevalError

SCHEMA = """
CREATE TABLE IF NOT EXISTS studies (
    task_run_id TEXT PRIMARY KEY, task_name TEXT, requester_name TEXT, api_base_url TEXT, study_id TEXT,
    workspace_id TEXT, project_id TEXT, block_group_id TEXT, internal_name TEXT, completion_code TEXT,
    places INTEGER DEFAULT 0, launched INTEGER DEFAULT 0, currency TEXT, reward_minor INTEGER,
    status TEXT DEFAULT 'creating');
CREATE TABLE IF NOT EXISTS agents (
    agent_id TEXT PRIMARY KEY, task_run_id TEXT, unit_id TEXT, participant_id TEXT, study_id TEXT,
    submission_id TEXT);
CREATE TABLE IF NOT EXISTS blocked (
    worker_name TEXT PRIMARY KEY, reason TEXT, created REAL);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, task_name TEXT, study_id TEXT, submission_id TEXT,
    participant_id TEXT, kind TEXT, amount_minor INTEGER, currency TEXT, reason TEXT, category TEXT,
    state TEXT, setup_id TEXT, bonuses_before INTEGER, detail TEXT, created REAL, updated REAL);
CREATE UNIQUE INDEX IF NOT EXISTS one_bonus_per_reason ON decisions (submission_id, reason) WHERE kind = 'bonus';
CREATE UNIQUE INDEX IF NOT EXISTS one_message_per_text ON decisions (participant_id, study_id, reason)
    WHERE kind = 'message';
"""


class ProlificDatastore:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / "prolific.db"
        self._lock = threading.RLock()
        with self.connect() as db:
            db.executescript(SCHEMA)

    @contextmanager
    def connect(self):
        with self._lock:
            db = sqlite3.connect(self.path, timeout=30)
            db.row_factory = sqlite3.Row
            try:
                with db:
                    yield db
            finally:
                db.close()

    def one(self, sql: str, *args) -> dict | None:
        with self.connect() as db:
            row = db.execute(sql, args).fetchone()
        return dict(row) if row else None

    def all(self, sql: str, *args) -> list[dict]:
        with self.connect() as db:
            return [dict(r) for r in db.execute(sql, args).fetchall()]

    def run(self, sql: str, *args) -> int:
        with self.connect() as db:
            return db.execute(sql, args).lastrowid

    def update(self, table: str, key: str, value, **fields) -> None:
        sets = ", ".join(f"{k} = ?" for k in fields)
        self.run(f"UPDATE {table} SET {sets} WHERE {key} = ?", *fields.values(), value)

    # ---- studies and agents
    def study_of_run(self, task_run_id: str) -> dict | None:
        return self.one("SELECT * FROM studies WHERE task_run_id = ?", str(task_run_id))

    def agent(self, agent_id: str) -> dict | None:
        return self.one("SELECT * FROM agents WHERE agent_id = ?", str(agent_id))

    def add_agent(self, agent_id, task_run_id, unit_id, participant_id, study_id, submission_id) -> None:
        self.run("INSERT OR REPLACE INTO agents VALUES (?, ?, ?, ?, ?, ?)", str(agent_id), str(task_run_id),
                 str(unit_id), participant_id, study_id, submission_id)

    def launch_place(self, task_run_id: str) -> tuple[int, int]:
        """Count one more launched unit; returns (launched, places the study has)."""
        with self.connect() as db:
            db.execute("UPDATE studies SET launched = launched + 1 WHERE task_run_id = ?", (str(task_run_id),))
            row = db.execute("SELECT launched, places FROM studies WHERE task_run_id = ?",
                             (str(task_run_id),)).fetchone()
        return row["launched"], row["places"]

    # ---- blocks
    def is_blocked(self, worker_name: str) -> bool:
        return self.one("SELECT 1 AS b FROM blocked WHERE worker_name = ?", worker_name) is not None

    def set_blocked(self, worker_name: str, reason: str | None) -> None:
        if reason is None:
            self.run("DELETE FROM blocked WHERE worker_name = ?", worker_name)
        else:
            self.run("INSERT OR REPLACE INTO blocked VALUES (?, ?, ?)", worker_name, reason, time.time())

    def blocked_workers(self) -> list[str]:
        return [r["worker_name"] for r in self.all("SELECT worker_name FROM blocked ORDER BY worker_name")]

    # ---- decisions (the review ledger)
    def record_decision(self, **fields) -> int:
        fields.setdefault("state", "pending")
        fields["created"] = fields["updated"] = time.time()
        names = ", ".join(fields)
        try:
            marks = ", ".join("?" * len(fields))
            return self.run(f"INSERT INTO decisions ({names}) VALUES ({marks})", *fields.values())
        except sqlite3.IntegrityError:
            raise DialevalError(f"a {fields.get('kind')} for submission {fields.get('submission_id')} with "
                                f"{'reason' if fields.get('kind') == 'bonus' else 'text'} {fields.get('reason')!r} is "
                                "already recorded (see `dialeval review`)") from None

    def set_decision(self, decision_id: int, **fields) -> None:
        self.update("decisions", "id", decision_id, updated=time.time(), **fields)

    def decisions(self, **where) -> list[dict]:
        clause = " AND ".join(f"{k} = ?" for k in where) or "1"
        return self.all(f"SELECT * FROM decisions WHERE {clause} ORDER BY id", *where.values())


# ---- credentials: outside the database, readable by the owner only
def credentials_path(root: str | Path) -> Path:
    return Path(root) / "credentials.json"


def save_token(root: str | Path, requester_name: str, token: str, api_base_url: str) -> Path:
    path = credentials_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = json.loads(path.read_text()) if path.is_file() else {}
    entries[requester_name] = {"token": token, "api_base_url": api_base_url}
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(entries, handle)
    os.replace(tmp, path)
    return path


def load_credentials(root: str | Path, requester_name: str) -> dict:
    """{"token": ..., "api_base_url": ...} of a registered requester."""
    path = credentials_path(root)
    entries = json.loads(path.read_text()) if path.is_file() else {}
    if requester_name not in entries:
        raise DialevalError(f"no Prolific token registered for requester {requester_name!r} (looked in {path}); "
                            f"run `dialeval prolific register {requester_name} --token-env VAR` first")
    return entries[requester_name]
