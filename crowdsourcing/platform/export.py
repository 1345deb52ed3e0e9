"""Everything a task collected in Mephisto's database -> canonical records (docs/data_model.md).

Every agent that ever worked on a unit of the task is read, whatever its status: finished, returned,
disconnected, timed out or still working. The task's export function turns them into records; what
it cannot turn into records is listed in the report with the reason, never dropped silently.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parlai_dialeval.errors import DialevalError

# Mephisto agent status -> what the work became, for the canonical `status` field.
FINISHED = {"completed", "approved", "rejected", "soft_rejected"}
RETURNED = {"returned", "expired"}


def work_status(agent_status: str) -> str:
    """complete / returned / incomplete (disconnected, timed out or still in progress)."""
    if agent_status in FINISHED:
        return "complete"
    if agent_status in RETURNED:
        return "returned"
    return "incomplete"


@dataclass
class UnitData:
    """One agent's work on one unit, as the export functions see it."""

    worker_id: str  # the provider's worker name (an MTurk worker id; the mock provider's name)
    mephisto_worker_id: str
    unit_id: str
    assignment_id: str  # Mephisto assignment (a HIT on MTurk)
    task_run_id: str
    agent_id: str
    agent_status: str
    state: dict  # the agent state's data (messages / inputs / outputs)
    task_start: float | None
    task_end: float | None
    files: dict[str, Any] = field(default_factory=dict)  # extra JSON files the task wrote for this agent
    problems: list[str] = field(default_factory=list)  # what could not be read (reported by export)

    @property
    def status(self) -> str:
        return work_status(self.agent_status)


@dataclass
class ExportReport:
    records: list[dict]
    units: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # units that produced no record, and why

    def summary(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.by_status.items()))
        kinds: dict[str, int] = {}
        for record in self.records:
            kinds[record["type"]] = kinds.get(record["type"], 0) + 1
        lines = [f"{self.units} unit(s) read ({counts or 'none'}); wrote "
                 + ", ".join(f"{n} {k}" for k, n in kinds.items())]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def read_units(db, task_name: str, extra_files: tuple[str, ...] = ()) -> list[UnitData]:
    tasks = db.find_tasks(task_name=task_name)
    if not tasks:
        known = sorted(t.task_name for t in db.find_tasks())
        raise DialevalError(f"no Mephisto task named {task_name!r} in {db.db_path}; known: {', '.join(known) or 'none'}")
    units = []
    for agent in db.find_agents(task_id=tasks[0].db_id):
        problems = []
        files = {}
        for name in extra_files:
            path = f"{agent.get_data_dir()}/{name}"
            if db.key_exists(path):
                try:
                    files[name] = db.read_dict(path)
                except ValueError as error:
                    problems.append(f"{name} unreadable ({error})")
        try:
            state = agent.state
            state_data, start, end = state.get_data(), state.get_task_start(), state.get_task_end()
        except ValueError as error:
            # Mephisto 1.1.1 rewrites state.json in place from two threads; under load it can be left corrupt
            problems.append(f"Mephisto's state.json unreadable ({error})")
            state_data, start, end = {}, None, None
        worker = agent.get_worker()
        units.append(UnitData(
            worker_id=worker.worker_name, mephisto_worker_id=agent.worker_id, unit_id=agent.unit_id,
            assignment_id=agent.assignment_id, task_run_id=agent.task_run_id, agent_id=agent.db_id,
            agent_status=agent.get_status(), state=state_data, task_start=start, task_end=end, files=files,
            problems=problems))
    return sorted(units, key=lambda u: (int(u.unit_id) if u.unit_id.isdigit() else u.unit_id, u.agent_id))


def task_type_of(db, task_name: str) -> str | None:
    """The crowdsourcing task folder a Mephisto task was launched from (its frontend entry)."""
    import json

    from omegaconf import OmegaConf

    tasks = db.find_tasks(task_name=task_name)
    for run in db.find_task_runs(task_id=tasks[0].db_id) if tasks else []:
        args = OmegaConf.create(json.loads(run.args)) if isinstance(run.args, str) else run.args
        entry = OmegaConf.select(args, "blueprint.frontend_entry", default=None)
        if entry:
            return str(entry)
    return None


def collect(task_name: str, data_dir: str | Path | None = None, task_type: str | None = None):
    """(ExportReport, MephistoDB) for a task, read but not written anywhere."""
    from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto
    from parlai_dialeval.crowdsourcing.platform.registry import available_tasks, get_task

    data_dir = prepare_mephisto(data_dir)
    db_file = database_path(data_dir)
    if not db_file.is_file():
        raise DialevalError(f"no Mephisto database at {db_file}; launch a task first or give --mephisto-data")
    from mephisto.abstractions.databases.local_database import LocalMephistoDB

    db = LocalMephistoDB(database_path=str(db_file))
    if task_type is None:
        task_type = task_name if task_name in available_tasks() else task_type_of(db, task_name)
    if task_type is None:
        raise DialevalError(f"cannot tell which crowdsourcing task {task_name!r} ran; give --task-type "
                            f"(one of {', '.join(available_tasks())})")
    spec = get_task(task_type)
    units = read_units(db, task_name, tuple(spec.extra.get("export_files", ())))
    report = spec.export(units, task_name)
    report.notes += [f"unit {u.unit_id} (worker {u.worker_id}): {p}" for u in units for p in u.problems]
    report.units = len(units)
    for unit in units:
        report.by_status[unit.agent_status] = report.by_status.get(unit.agent_status, 0) + 1
    return report, db, spec


def export_task(task_name: str, out: str | Path, data_dir: str | Path | None = None,
                task_type: str | None = None) -> ExportReport:
    from parlai_dialeval.data import from_records, write_jsonl

    report, _, _ = collect(task_name, data_dir, task_type)
    from_records([dict(r) for r in report.records], source=f"mephisto task {task_name}")  # validates
    write_jsonl(report.records, out)
    return report
