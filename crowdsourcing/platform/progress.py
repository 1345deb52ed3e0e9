"""A study's units as its dashboard counts them (done, in flight, left), and the launch's record of those counts
over time, which the dashboard draws.

The launch (``runner.LaunchedTask.serve``) reads Mephisto's unit and agent rows every ``SAMPLE_SECONDS`` and
appends a line to ``<mephisto data>/progress/<task name>.jsonl`` whenever the counts changed (the first reading
included), and once more as it stops: the history is the study's, kept while nobody watches, not a record of when a page was loaded. A
relaunch of the same task name appends to the same file. One JSON object a line: ``at`` (seconds since the
epoch), ``done``, ``in_flight``, ``left``.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

# Mephisto's unit statuses (mephisto.data_model.constants.assignment_state) grouped as the dashboard counts them
UNIT_DONE = {"completed", "accepted", "rejected", "soft_rejected", "mixed"}
UNIT_IN_FLIGHT = {"assigned"}
UNIT_LEFT = {"created", "launched"}
# A unit's status from its agent's, as Mephisto's Unit.get_status computes it (which only the task launcher's
# 10-second poll writes back to the unit's row); an agent who left (disconnect, return, timeout) frees the
# unit for another worker, so it counts as left rather than in flight
AGENT_TO_UNIT = {"none": "launched", "accepted": "assigned", "onboarding": "assigned", "waiting": "assigned",
                 "in task": "assigned", "partner disconnect": "assigned", "completed": "completed",
                 "approved": "accepted", "rejected": "rejected", "soft_rejected": "soft_rejected",
                 "expired": "expired", "disconnect": "launched", "returned": "launched", "timeout": "launched"}
SAMPLE_SECONDS = 10.0  # how often the launch reads the counts (a line is written only when they changed)
COUNTS = ("done", "in_flight", "left")


def unit_status(unit_row_status: str, agent_status: str | None) -> str:
    """The unit's status now: its row's when final or when no agent holds it, else from the agent's."""
    if unit_row_status == "expired" or agent_status is None:
        return unit_row_status
    return AGENT_TO_UNIT.get(agent_status, unit_row_status)


@dataclass(frozen=True)
class UnitRow:
    """One Mephisto unit as the dashboard needs it: its id, status and the worker holding it (if any)."""

    unit_id: str
    status: str
    worker: str | None = None


def unit_counts(units: list[UnitRow]) -> Counter:
    """done / in_flight / left / withdrawn (expired and the like)."""
    return Counter("done" if u.status in UNIT_DONE else "in_flight" if u.status in UNIT_IN_FLIGHT
                   else "left" if u.status in UNIT_LEFT else "withdrawn" for u in units)


def unit_rows(db, task_name: str) -> tuple[list[UnitRow], float | None]:
    """Every unit of the task's runs (status from Mephisto's unit and agent rows, no provider call) and when
    the first run started (seconds since the epoch)."""
    tasks = db.find_tasks(task_name=task_name)
    if not tasks:
        return [], None
    names: dict[str, str] = {}
    agents = {agent.db_id: agent.db_status for agent in db.find_agents(task_id=tasks[0].db_id)}
    rows = []
    for unit in db.find_units(task_id=tasks[0].db_id):
        worker = None
        if unit.worker_id:
            if unit.worker_id not in names:
                names[unit.worker_id] = db.get_worker(unit.worker_id)["worker_name"]
            worker = names[unit.worker_id]
        status = unit_status(unit.db_status, agents.get(unit.agent_id) if unit.agent_id else None)
        rows.append(UnitRow(str(unit.db_id), status, worker))
    starts = [_timestamp(run.start_time) for run in db.find_task_runs(task_id=tasks[0].db_id)]
    starts = [s for s in starts if s is not None]
    return rows, min(starts) if starts else None


def _timestamp(value) -> float | None:
    """SQLite's CURRENT_TIMESTAMP text (UTC) -> seconds since the epoch."""
    try:
        return datetime.fromisoformat(str(value)).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def log_path(data_dir: str | Path, task_name: str) -> Path:
    return Path(data_dir) / "progress" / f"{task_name}.jsonl"


def read_log(path: str | Path) -> list[dict]:
    """The samples a launch wrote, oldest first (a line half written when a launch was killed is left out)."""
    path = Path(path)
    samples = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("at"), (int, float)) and all(
                isinstance(entry.get(key), int) for key in COUNTS):
            samples.append({"at": float(entry["at"]), **{key: entry[key] for key in COUNTS}})
    return samples


class ProgressLog:
    """The launch's side: ``sample()`` reads the counts and appends them when they changed. Its own database
    handle (Mephisto's LocalMephistoDB keeps a connection per thread), so it may run off the event loop."""

    def __init__(self, data_dir: str | Path, task_name: str, database: str | Path):
        from mephisto.abstractions.databases.local_database import LocalMephistoDB

        self.path, self.task_name = log_path(data_dir, task_name), task_name
        self._db = LocalMephistoDB(database_path=str(database))
        self._last: tuple[int, ...] | None = None
        self.next_at = 0.0  # when the launch samples next (time.monotonic)

    def sample(self, now: float | None = None) -> bool:
        """Read the counts; append a line when they changed since the last one written. Returns whether it wrote."""
        counts = unit_counts(unit_rows(self._db, self.task_name)[0])
        current = tuple(counts[key] for key in COUNTS)
        if current == self._last:
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as out:  # one short line: whole, or half written and skipped by read_log
            out.write(json.dumps({"at": time.time() if now is None else now, **dict(zip(COUNTS, current))}) + "\n")
        self._last = current
        return True
