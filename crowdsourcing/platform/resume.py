"""Resuming a task whose launch was killed (``dialeval launch`` of the same task name).

Every launch leaves ``MARKER`` in its Mephisto run folder, saying which process serves it, and marks it
stopped when it ends cleanly. A run whose marker is not stopped and whose process is gone was
interrupted. Launching the same task name again then:

- offers only the work that run had left: for chat tasks its ``num_conversations`` less the units
  finished, for static tasks the data of the assignments not finished (no unit is collected twice);
- on Prolific, goes on with the interrupted run's study (no second study; the participants' submissions,
  places and the completion code stay as they were);
- starts the new router with the interrupted run's claims (each registration bound to the SHA-256 of its
  page's secret, kept in the run folder by parlai_dialeval/compat/mephisto_claims.py): a request naming a
  participant's registration without their page's secret is refused there;
- lets a worker who was mid-HIT continue where they were if they come back within the unit's time
  limit (``assignment_duration_in_seconds``), from the same registration with the same secret (someone
  naming the worker from another registration gets a new unit, nothing of theirs): the world gets their
  saved record (``RESUMABLE_KEY`` in its options) and carries it on where it stopped: same models (and, for live chat, slots and order), every
  stored turn kept, a half-finished conversation going on with fresh bots given the conversation so far
  (``history_observation``); the page resends what the server never confirmed and the world drops a copy
  of what it had stored (platform/session_world.py);
- stops the node router the killed launch left behind (its pid and start time are in the marker): before
  the port check when it holds the port this launch serves on, else once this launch serves;
- closes the interrupted run: its unfinished agents become ``disconnect`` (partial work, never counted
  as submitted and never paid), its units are expired, its marker is marked stopped.

Export skips a record another record says it ``continued_from`` (platform/export.py), so a continued
unit is exported once.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from parlai_dialeval.crowdsourcing.platform.export import FINISHED
from parlai_dialeval.errors import DialevalError

MARKER = "dialeval_launch.json"
# world option: registration -> {"agent_id", "worker_name", "claim", "record"} of an interrupted unit
RESUMABLE_KEY = "resumable"
CONTINUED_FROM = "continued_from"  # record key: the agent id whose record this one carries on
HISTORY_DELIMITER = "\n"  # ParlAI's default: a bot given the conversation so far as one message


def history_observation(turns: list[dict], context=None) -> dict:
    """A fresh bot's first observation in a conversation carried on after a crash: everything so far as one
    message (its previous instance's state died with the old process)."""
    message = {"id": "human", "text": HISTORY_DELIMITER.join(t["text"] for t in turns), "episode_done": False}
    return {**message, "context": context} if context is not None else message


def submitted(agent) -> bool:
    """Whether the agent's worker really finished: Mephisto also marks a static task's agent completed,
    with no answers, when the run is shut down while they work."""
    if agent.get_status() not in FINISHED:
        return False
    try:
        return bool(agent.state.get_data().get("outputs"))
    except ValueError:  # state.json half-written (platform/export.py): the status is all there is
        return True


def mark_unsubmitted(db, task_run_id: str) -> None:
    """Agents of the run marked finished that never submitted become ``disconnect`` (partial, unpaid)."""
    for agent in db.find_agents(task_run_id=task_run_id):
        if agent.get_status() in FINISHED and not submitted(agent):
            db.update_agent(agent.db_id, status="disconnect")


def _marker_path(task_run) -> Path:
    return Path(task_run.get_run_dir()) / MARKER


def write_marker(task_run, **fields) -> None:
    """Create or update the run's marker (the owning process is recorded when the marker is created)."""
    import psutil

    from parlai_dialeval.atomic import atomic_open

    path = _marker_path(task_run)
    marker = read_marker(task_run) or {"pid": os.getpid(), "pid_started": psutil.Process().create_time(),
                                       "stopped": False}
    marker.update(fields)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as handle:
        json.dump(marker, handle)


def read_marker(task_run) -> dict | None:
    path = _marker_path(task_run)
    return json.loads(path.read_text()) if path.is_file() else None


def launch_state(db, task_name: str) -> tuple[str | None, float | None]:
    """Whether a launch of the task serves it now, from its runs' markers: ("running", None), ("stopped", when
    the last run ended cleanly), ("interrupted", None: a launch was killed), or (None, None) where no run left a
    marker (an earlier release's launch). For the dashboard, which otherwise reads a finished study as running."""
    tasks = db.find_tasks(task_name=task_name)
    markers = [(run, read_marker(run)) for run in db.find_task_runs(task_id=tasks[0].db_id)] if tasks else []
    markers = [(run, marker) for run, marker in markers if marker is not None]
    if not markers:
        return None, None
    if any(not m.get("stopped") and _same_process(m["pid"], m.get("pid_started")) for _, m in markers):
        return "running", None
    if not all(m.get("stopped") for _, m in markers):
        return "interrupted", None
    return "stopped", max(_marker_path(run).stat().st_mtime for run, _ in markers)


def _serving(marker: dict) -> bool:
    """Whether the marker's launch process still runs (this process's own earlier runs count as gone)."""
    return marker["pid"] != os.getpid() and _same_process(marker["pid"], marker["pid_started"])


def _same_process(pid: int, started: float | None) -> bool:
    """Whether ``pid`` still runs and is the process that started at ``started`` (not a reused pid)."""
    import psutil

    try:
        return started is not None and abs(psutil.Process(pid).create_time() - started) < 1
    except psutil.Error:
        return False


def _ended(process) -> bool:
    """Gone, or a zombie: an orphan reparented to init lingers so until reaped, and psutil's ``wait`` on a
    process not our child counts that as running."""
    import psutil

    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def stop_orphaned_router(run) -> str | None:
    """Stop the node router a killed launch of ``run`` left serving (recorded in its marker: a kill -9 of
    the launch leaves its router, in a process group of its own, holding the port); None when none is left."""
    import psutil

    marker = read_marker(run) or {}
    pid = marker.get("router_pid")
    if not pid or not _same_process(pid, marker.get("router_started")):
        return None
    router = psutil.Process(pid)
    for signal_it in (router.terminate, router.kill):
        signal_it()
        end = time.time() + 10
        while not _ended(router) and time.time() < end:
            time.sleep(0.1)
        if _ended(router):
            break
    return f"Stopped the router (pid {pid}, port {marker.get('port')}) the interrupted run {run.db_id} left behind."


@dataclass
class Interrupted:
    """An interrupted run of a task name and the work it had left."""

    run: object  # mephisto TaskRun
    finished: int  # units a worker finished
    planned: int  # units the run was launched with
    left: int  # units the resumed run offers
    unfinished: list = field(default_factory=list)  # agents that never finished
    left_data: list = field(default_factory=list)  # static tasks: data of the assignments not finished


def find_interrupted(db, task_name: str) -> Interrupted | None:
    """The latest interrupted run of ``task_name``; an error if that task is still being served."""
    tasks = db.find_tasks(task_name=task_name)
    runs = sorted(db.find_task_runs(task_id=tasks[0].db_id), key=lambda r: int(r.db_id)) if tasks else []
    interrupted = None
    for run in runs:
        marker = read_marker(run)
        if marker is None or marker["stopped"]:
            continue
        if _serving(marker):
            raise DialevalError(f"task {task_name!r} is being served by pid {marker['pid']} (port "
                                f"{marker.get('port')}): stop that launch first, or launch under another "
                                f"mephisto.task.task_name")
        interrupted = run
    return _work_left(interrupted) if interrupted is not None else None


def _work_left(run) -> Interrupted:
    from omegaconf import OmegaConf

    from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY

    args = run.args if not isinstance(run.args, str) else OmegaConf.create(json.loads(run.args))
    agents = run.db.find_agents(task_run_id=run.db_id)
    finished_units = {a.unit_id for a in agents if submitted(a)}
    left_data, planned = [], len(run.get_units())
    left = planned - len(finished_units)
    if OmegaConf.select(args, "blueprint._blueprint_type") == "dialeval_static":
        # an assignment's data goes out again whole (all its units) when any unit of it is unfinished
        unfinished_assignments = [a for a in run.get_assignments()
                                  if any(unit.db_id not in finished_units for unit in a.get_units())]
        for assignment in unfinished_assignments:
            data = assignment.get_assignment_data()
            server = (data.unit_data or [{}])[0].get(SERVER_KEY)
            left_data.append({**data.shared, **({SERVER_KEY: server} if server is not None else {})})
        left = sum(len(a.get_units()) for a in unfinished_assignments)
    return Interrupted(run=run, finished=len(finished_units), planned=planned, left=left,
                       unfinished=[a for a in agents if not submitted(a)], left_data=left_data)


def claims_of(run) -> dict[str, dict]:
    """Agent id -> {"agent_id", "registration", "worker", "claim", "at"} of the agents a run gave out (its CLAIMS_LOG; a line
    half written when the launch was killed is left out)."""
    from parlai_dialeval.compat.mephisto_claims import CLAIMS_LOG

    path = Path(run.get_run_dir()) / CLAIMS_LOG
    out = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[entry["agent_id"]] = entry
    return out


def resumable_records(interrupted: Interrupted, record_files, time_limit: float) -> dict[str, dict]:
    """Registration -> {"agent_id", "worker_name", "claim", "record"} of the unfinished units whose workers may
    still come back (a unit whose registration is unknown is not)."""
    claims, out = claims_of(interrupted.run), {}
    for agent in interrupted.unfinished:
        claim = claims.get(agent.db_id)
        for name in record_files if claim else ():
            path = f"{agent.get_data_dir()}/{name}"
            record = agent.db.read_dict(path) if agent.db.key_exists(path) else None
            if record and time.time() - record.get("started", 0) < time_limit:
                out[claim["registration"]] = {"agent_id": agent.db_id, "worker_name": agent.get_worker().worker_name,
                                              "claim": claim["claim"], "record": record}
    return out


def prepare(interrupted: Interrupted, cfg, shared, spec) -> str:
    """Point the new run at the work the interrupted one had left; returns the line to print. Workers
    mid-HIT get their unit back in tasks whose spec says ``extra["continues_units"]``."""
    if hasattr(shared, "static_task_data"):
        shared.static_task_data = list(interrupted.left_data)
    else:
        cfg.mephisto.blueprint.num_conversations = interrupted.left
    if cfg.mephisto.provider.get("_provider_type") == "prolific":
        # the new run takes over the interrupted run's study (providers/prolific/study.py, take_over): same
        # places and completion code, so participants mid-task finish there
        cfg.mephisto.provider.resume_from_run = str(interrupted.run.db_id)
    from parlai_dialeval.compat.mephisto_claims import carry_claims

    carry_claims(cfg.mephisto.task.task_name, claims_of(interrupted.run).values())
    head = (f"Resuming task {cfg.mephisto.task.task_name!r}: its run {interrupted.run.db_id} was interrupted with "
            f"{interrupted.finished} of {interrupted.planned} unit(s) finished; {interrupted.left} unit(s) "
            f"offered now.")
    if not spec.extra.get("continues_units"):
        return f"{head} Work left half done is kept as incomplete; returning workers start a new unit."
    limit = float(cfg.mephisto.task.get("assignment_duration_in_seconds") or 0)
    returning = resumable_records(interrupted, spec.extra.get("export_files", ()), limit)
    shared.world_opt[RESUMABLE_KEY] = returning
    return (f"{head} {len(returning)} worker(s) who were mid-HIT get their HIT back if they return within "
            f"{limit:.0f} s of starting it, where they stopped.")


def close(interrupted: Interrupted) -> str | None:
    """The interrupted run's unfinished work is partial from now on (see the module docstring); returns the
    lines naming its router if one was stopped and the old units the provider would not withdraw (MTurk:
    expire them there), else None."""
    from mephisto.data_model.constants.assignment_state import AssignmentState

    stopped = stop_orphaned_router(interrupted.run)  # on another port than this launch's: serving nothing now
    for agent in interrupted.unfinished:
        agent.db.update_agent(agent.db_id, status="disconnect")
    refused = []
    for unit in interrupted.run.get_units():
        if unit.get_status() in AssignmentState.incomplete():
            try:
                unit.expire()
            except Exception as error:  # a provider's API error must not stop the new run, now serving
                refused.append(f"{unit.db_id} ({type(error).__name__}: {error})")
    write_marker(interrupted.run, stopped=True, resumed=True)
    if refused:
        return "\n".join(filter(None, [stopped, (
            f"Could not withdraw {len(refused)} unit(s) of the interrupted run {interrupted.run.db_id} from the "
            f"provider: {'; '.join(refused)}")]))
    return stopped


def take_resumable(opt: dict, agent) -> dict | None:
    """For a world: the saved unit of an interrupted run that this agent's registration held, once, when the
    agent came with the same claim (its page's secret) and worker (None: none)."""
    from parlai_dialeval.compat.mephisto_claims import claim_of

    mephisto_agent = getattr(agent, "mephisto_agent", None)
    claim = claim_of(mephisto_agent) if mephisto_agent is not None else None
    saved = (opt.get(RESUMABLE_KEY) or {}).get(claim["registration"]) if claim else None
    if saved is None or saved["claim"] != claim["claim"] or saved["worker_name"] != mephisto_agent.get_worker().worker_name:
        return None
    return opt[RESUMABLE_KEY].pop(claim["registration"], None)
