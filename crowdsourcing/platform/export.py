"""Everything a task collected in Mephisto's database -> canonical records (docs/data_model.md).

Every agent that ever worked on a unit of the task is read, whatever its status: finished, returned,
disconnected, timed out or still working; so is every onboarding attempt. The task's export functions
turn them into records (onboarding ones marked: comparisons ``onboarding: true``, conversations
``status: onboarding``); what they cannot turn into records is listed in the report with the reason,
never dropped silently. A submission is hostile until checked: a task's export is wrapped in
``guard_units``, so one malformed unit becomes a note (and an entry of ``ExportReport.malformed``)
while the other units export, both in ``dialeval export`` and in adaptive collection.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parlai_dialeval.data.versions import FINISHED_AGENT_STATUSES as FINISHED
from parlai_dialeval.data.versions import submission_of  # the canonical `submission`, read here too
from parlai_dialeval.errors import DialevalError

# Mephisto agent status -> what the work became, for the canonical `status` field; the `submission` field's
# mapping lives with the data model, which reads it back from the exports of format 1.0 (data/versions.py).
RETURNED = {"returned", "expired"}


def record_status(record: dict) -> str:
    """The canonical status of a session world's unfinished record: ``failed`` when a bot failed it
    (platform/session_world.py), else ``incomplete``."""
    return "failed" if record.get("status") == "failed" else "incomplete"


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
    server: dict[str, Any] = field(default_factory=dict)  # server-only unit data (dialeval_static's `server`)
    onboarding: bool = False  # an onboarding attempt (unit_id and assignment_id are then empty)
    unverified: bool = False  # the crowd provider does not vouch for the work (``provider_standing``)
    ended: bool = False  # the provider says the worker returned or timed out the assignment (``provider_standing``)

    @property
    def status(self) -> str:
        return work_status(self.agent_status)

    @property
    def submission(self) -> str:
        return submission_of(self.agent_status)

    def conversation_id(self, task_name: str, slot: int | None = None) -> str:
        """Unique per agent: a unit served again (its first worker left) keeps its unit id, so the id
        names the agent too, else the two workers' conversations would share ids."""
        return "_".join(str(part) for part in (task_name, self.unit_id, self.agent_id, slot) if part is not None)


@dataclass
class ExportReport:
    records: list[dict]
    units: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # units that produced no record, and why
    onboarding_by_status: dict[str, int] = field(default_factory=dict)  # onboarding attempts read
    # units whose submission could not be exported: {agent_id, unit_id, worker_id, onboarding, reason}
    malformed: list[dict] = field(default_factory=list)
    # the optional questionnaire (platform/questionnaire.py), apart from the records: the questions the launch
    # asked ([]: none), a row per participant who consented, how many submissions declined
    questions: list[str] = field(default_factory=list)
    participants: list[dict] = field(default_factory=list)
    declined: int = 0

    def summary(self) -> str:
        def counts(by_status: dict[str, int]) -> str:
            return ", ".join(f"{n} {s}" for s, n in sorted(by_status.items())) or "none"

        kinds: dict[str, int] = {}
        for record in self.records:
            kinds[record["type"]] = kinds.get(record["type"], 0) + 1
        onboarding = sum(1 for r in self.records if r.get("onboarding") or r.get("status") == "onboarding")
        lines = [f"{self.units} unit(s) read ({counts(self.by_status)}); "
                 f"{sum(self.onboarding_by_status.values())} onboarding attempt(s) read "
                 f"({counts(self.onboarding_by_status)}); wrote "
                 + ", ".join(f"{n} {k}" for k, n in kinds.items())
                 + f" ({onboarding} of them onboarding)"]
        if self.malformed:
            lines.append(f"{len(self.malformed)} malformed submission(s) not exported (see the notes)")
        if self.questions:
            lines.append(f"questionnaire: {len(self.participants)} participant(s) answered with consent, "
                         f"{self.declined} submission(s) declined (kept apart from the votes)")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def unit_label(unit: UnitData) -> str:
    """How notes name a unit agent or an onboarding attempt."""
    what = f"onboarding attempt {unit.agent_id}" if unit.onboarding else f"unit {unit.unit_id}"
    return f"{what} (worker {unit.worker_id}, {unit.agent_status})"


def unit_seconds(unit: UnitData) -> float | None:
    """Seconds between the unit's start and its submission on Mephisto's clock (None where either is unknown):
    what a static page's claimed times must fit in (platform/answer_record.py)."""
    if unit.task_start is None or unit.task_end is None:
        return None
    return max(0.0, float(unit.task_end) - float(unit.task_start))


def submitted_duration(value, where: str) -> float | None:
    """A duration the page submitted (seconds): None when absent, else a finite number >= 0 (ValueError)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: duration must be a number of seconds, got {value!r:.60}")
    return float(value)


def submission(unit: UnitData) -> dict:
    """What a static task's page submitted for the unit (``outputs``): {} when nothing; ValueError when it is
    not an object (anyone can post the server any JSON)."""
    outputs = unit.state.get("outputs")
    if outputs is None:
        return {}
    if not isinstance(outputs, dict):
        raise ValueError(f"the submission is a {type(outputs).__name__}, not an object")
    return outputs


def _reason(error: Exception, limit: int = 300) -> str:
    """One line of at most ``limit`` characters (a submission may hold megabytes)."""
    text = str(error) if isinstance(error, (ValueError, DialevalError)) else f"{type(error).__name__}: {error}"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _validated(report: ExportReport) -> ExportReport:
    """``report`` when its records are canonical (parlai_dialeval.data validates); DataError otherwise."""
    from parlai_dialeval.data import from_records

    from_records(report.records, source="the export of this unit")
    return report


def guard_units(export):
    """A task's export (``fn(units, task_name, ...) -> ExportReport``) that never raises on what participants
    submitted: when the whole export fails, or yields records that are not canonical, the units at fault are
    found by exporting halves (then halves of the failing halves, down to single units); they become notes
    and ``malformed`` entries, and the rest export together.
    It runs on Mephisto's assignment-generator thread in adaptive collection, where an exception would end
    the run: any exception counts (a bug in a task's export then shows as notes on every unit, not as a
    traceback)."""

    @functools.wraps(export)
    def guarded(units, task_name, *args, **kwargs) -> ExportReport:
        def run(chosen):
            return _validated(export(chosen, task_name, *args, **kwargs))

        def split(chosen) -> tuple[list, list]:
            """(units that export, [(unit, error)]) by halving: a few bad units cost O(log n) exports each."""
            half = len(chosen) // 2
            (good_a, bad_a), (good_b, bad_b) = isolate(chosen[:half]), isolate(chosen[half:])
            return good_a + good_b, bad_a + bad_b

        def isolate(chosen) -> tuple[list, list]:
            try:
                run(chosen)
                return list(chosen), []
            except Exception as error:  # noqa: BLE001
                return ([], [(unit, error) for unit in chosen]) if len(chosen) <= 1 else split(chosen)

        try:
            return run(units)
        except Exception as error:  # noqa: BLE001  (the units at fault are found below)
            first = error
        good, bad = split(units) if len(units) > 1 else ([], [(unit, first) for unit in units])
        malformed = [{"agent_id": unit.agent_id, "unit_id": unit.unit_id, "worker_id": unit.worker_id,
                      "onboarding": unit.onboarding, "reason": _reason(error)} for unit, error in bad]
        notes = [f"{unit_label(unit)}: not exported: {entry['reason']}" for (unit, _), entry in zip(bad, malformed)]
        try:
            report = run(good)
        except Exception as error:  # noqa: BLE001  (units fine alone that fail together: none exported)
            report = ExportReport(records=[], notes=[f"no unit exported: together they fail ({_reason(error)})"])
        report.notes += notes
        report.malformed += malformed
        return report

    return guarded


def _read_agent(db, agent, extra_files: tuple[str, ...], **fields) -> UnitData:
    """One (unit or onboarding) agent's saved work; what cannot be read goes to ``problems``."""
    problems, files = list(fields.pop("problems", [])), {}
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
    standing = provider_standing(db, agent, worker, fields.get("onboarding", False))
    return UnitData(worker_id=worker.worker_name, mephisto_worker_id=agent.worker_id,
                    task_run_id=agent.task_run_id, agent_id=agent.db_id,
                    # work on an assignment the worker gave back is never complete, whatever Mephisto recorded
                    agent_status="returned" if standing == "ended" else agent.get_status(),
                    state=state_data, task_start=start, task_end=end, files=files, problems=problems,
                    unverified=standing is not None, ended=standing == "ended", **fields)


def provider_standing(db, agent, worker, onboarding: bool) -> str | None:
    """None when the crowd provider vouches for the work; ``unverified`` when it never confirmed the worker's
    identity; ``ended`` when the worker has since returned or timed out the assignment (it can never be paid).
    Only Prolific checks identities (providers/prolific/verify.py: every arrival, before it gets a place);
    MTurk signs its own, the mock provider has none to check."""
    if worker.provider_type != "prolific":
        return None
    from parlai_dialeval.providers.prolific import verify

    if verify.unconfirmed(db, agent.db_id, worker.worker_name, agent.task_run_id if onboarding else None):
        return "unverified"
    return "ended" if not onboarding and verify.ended(db, agent.db_id) else None


def export_marked(export, units: list[UnitData], task_name: str) -> ExportReport:
    """``export(units, task_name)`` with the work of unverified identities exported apart and each of its
    records marked ``unverified: true`` (analyses leave them out unless asked: docs/data_model.md); a note
    names each such unit. Their ``study`` records are the other units' already, unless there are none."""
    doubtful = [u for u in units if u.unverified]
    report = export([u for u in units if not u.unverified], task_name)
    if not doubtful:
        return report
    apart = export(doubtful, task_name)
    studies = {r.get("name") for r in report.records if r["type"] == "study"}
    report.records += [r if r["type"] == "study" else {**r, "unverified": True} for r in apart.records
                       if r["type"] != "study" or r.get("name") not in studies]
    report.notes += apart.notes + [
        f"{unit_label(u)}: " + ("returned or timed out on Prolific (never paid): exported as returned, marked "
                                if u.ended else "identity never confirmed by Prolific: exported marked ")
        + "unverified (left out of analyses unless --include-unverified)" for u in doubtful]
    report.malformed += apart.malformed
    return report


def _unit_server_data(agent) -> tuple[dict, list[str]]:
    """The unit's server-only data (its entry of the assignment's ``unit_data``), and what went wrong."""
    from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY

    try:
        unit = agent.get_unit()
        return dict(unit.get_assignment_data().unit_data[unit.unit_index].get(SERVER_KEY) or {}), []
    except (OSError, ValueError, KeyError, IndexError) as error:
        return {}, [f"assignment data unreadable ({error!r})"]


def read_units(db, task_name: str, extra_files: tuple[str, ...] = ()) -> list[UnitData]:
    """Every unit agent of the task (onboarding attempts: ``read_onboarding``)."""
    units = []
    for agent in db.find_agents(task_id=_task(db, task_name).db_id):
        server, problems = _unit_server_data(agent)
        units.append(_read_agent(db, agent, extra_files, unit_id=agent.unit_id, assignment_id=agent.assignment_id,
                                 server=server, problems=problems))
    return sorted(units, key=lambda u: (int(u.unit_id) if u.unit_id.isdigit() else u.unit_id, u.agent_id))


def read_onboarding(db, task_name: str, extra_files: tuple[str, ...] = ()) -> list[UnitData]:
    """Every onboarding attempt of the task, passed, failed or abandoned (``onboarding=True``); ``server``
    is the run's server-only onboarding data (dialeval_static)."""
    from mephisto.data_model.task_run import TaskRun

    from parlai_dialeval.crowdsourcing.platform.blueprint import onboarding_server_path

    attempts, server_of_run = [], {}
    for agent in db.find_onboarding_agents(task_id=_task(db, task_name).db_id):
        if agent.task_run_id not in server_of_run:
            path = onboarding_server_path(TaskRun.get(db, agent.task_run_id))
            server_of_run[agent.task_run_id] = db.read_dict(path) if db.key_exists(path) else {}
        attempts.append(_read_agent(db, agent, extra_files, unit_id="", assignment_id="", onboarding=True,
                                    server=server_of_run[agent.task_run_id]))
    return sorted(attempts, key=lambda u: int(u.agent_id) if u.agent_id.isdigit() else u.agent_id)


def _task(db, task_name: str):
    tasks = db.find_tasks(task_name=task_name)
    if not tasks:
        known = sorted(t.task_name for t in db.find_tasks())
        raise DialevalError(f"no task named {task_name!r} was launched with this data directory ({db.db_path}); "
                            f"tasks there: {', '.join(known) or 'none'} (the name is the launch's "
                            "mephisto.task.task_name)")
    return tasks[0]


def drop_continued(units: list[UnitData]) -> tuple[list[UnitData], list[str]]:
    """The units to export, and a note for each one left out because a later unit carried its record on
    after a restart (platform/resume.py): that unit exports the work of both, once."""
    from parlai_dialeval.crowdsourcing.platform.resume import CONTINUED_FROM

    successor = {str(record[CONTINUED_FROM]): unit for unit in units for record in unit.files.values()
                 if isinstance(record, dict) and record.get(CONTINUED_FROM) is not None}
    keep = [unit for unit in units if unit.agent_id not in successor]
    notes = [f"unit {unit.unit_id} (worker {unit.worker_id}, {unit.agent_status}): continued after a restart as unit "
             f"{successor[unit.agent_id].unit_id}, exported there" for unit in units if unit.agent_id in successor]
    return keep, notes


def task_type_of(db, task_name: str) -> str | None:
    """The crowdsourcing task folder a Mephisto task was launched from: the ``frontend_entry`` that our
    blueprints (dialeval_chat, dialeval_static) record in the run's args."""
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
    """(ExportReport, MephistoDB, TaskSpec) for a task, read but not written anywhere."""
    from parlai_dialeval.crowdsourcing.platform.env import data_dir_path, database_path, prepare_mephisto

    # Checked before prepare_mephisto, which makes the folder: a mistyped --mephisto-data leaves nothing behind.
    data_dir = data_dir_path(data_dir)
    db_file = database_path(data_dir)
    if not db_file.is_file():
        raise DialevalError(f"no task named {task_name!r}: nothing was ever launched with data directory {data_dir} "
                            f"(no {db_file.name}); give the launch's --mephisto-data")
    data_dir = prepare_mephisto(data_dir)
    from mephisto.abstractions.databases.local_database import LocalMephistoDB

    db = LocalMephistoDB(database_path=str(db_file))
    report, spec = collect_from_db(db, task_name, task_type)
    return report, db, spec


def collect_from_db(db, task_name: str, task_type: str | None = None):
    """(ExportReport, TaskSpec): every unit and onboarding attempt of ``task_name`` through its task's export.
    The task is ``task_type``, else the one recorded in the run (its blueprint's ``frontend_entry``)."""
    from parlai_dialeval.crowdsourcing.platform import questionnaire
    from parlai_dialeval.crowdsourcing.platform.registry import available_tasks, get_task

    _task(db, task_name)  # a name never launched: say so before anything else
    if task_type is None:
        task_type = task_type_of(db, task_name) or (task_name if task_name in available_tasks() else None)
    if task_type is None:
        raise DialevalError(f"cannot tell which crowdsourcing task {task_name!r} ran (a run of Mephisto's stock "
                            f"blueprints records none); give --task-type (one of {', '.join(available_tasks())})")
    spec = get_task(task_type)
    extra_files = tuple(spec.extra.get("export_files", ()))
    units, continued = drop_continued(read_units(db, task_name, extra_files))
    attempts = read_onboarding(db, task_name, extra_files)
    report = export_marked(spec.export, units, task_name)
    report.notes += continued
    if spec.export_onboarding is not None:
        onboarding = export_marked(spec.export_onboarding, attempts, task_name)
        report.records += onboarding.records
        report.notes += onboarding.notes
        report.malformed += onboarding.malformed
    else:
        report.notes += [f"onboarding attempt {u.agent_id} (worker {u.worker_id}, {u.agent_status}): task "
                         f"{task_type} exports no onboarding records" for u in attempts]
    report.notes += [f"{'onboarding attempt ' + u.agent_id if u.onboarding else 'unit ' + u.unit_id} "
                     f"(worker {u.worker_id}): {p}" for u in units + attempts for p in u.problems]
    report.questions = questionnaire.asked_in_db(db, task_name)
    if report.questions:
        report.participants, report.declined = questionnaire.participant_rows(units, report.questions)
    report.units = len(units)
    for unit in units:
        report.by_status[unit.agent_status] = report.by_status.get(unit.agent_status, 0) + 1
    for attempt in attempts:
        report.onboarding_by_status[attempt.agent_status] = report.onboarding_by_status.get(attempt.agent_status, 0) + 1
    return report, spec


def export_task(task_name: str, out: str | Path, data_dir: str | Path | None = None,
                task_type: str | None = None) -> ExportReport:
    from parlai_dialeval.data import from_records, write_jsonl

    report, _, _ = collect(task_name, data_dir, task_type)
    from_records([dict(r) for r in report.records], source=f"mephisto task {task_name}")  # validates
    write_jsonl(report.records, out)
    if report.questions:  # the questionnaire's answers: their own file, never in the records
        from parlai_dialeval.crowdsourcing.platform.questionnaire import participants_path, write_participants

        write_participants(report.participants, report.questions, participants_path(out))
    return report
