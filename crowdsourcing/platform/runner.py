"""Launching a task: compose its config, load its shared state (bots) once, run it with Mephisto, stop it.

The default (every task's conf) is the embedded setup: LocalArchitect + node router, MockProvider,
SQLite in the data directory. ``mephisto/provider=mturk_sandbox`` or ``mturk`` (with
``mephisto.provider.requester_name=...`` registered through ``mephisto register``) and a public
architect (``mephisto/architect=heroku`` or ``ec2``) run the same task on MTurk.

Stopping (``LaunchedTask.serve``): the first Ctrl-C or SIGTERM lets no new worker in and waits for the
units in flight; a second stops at once, saving their partial work. Mephisto's own
``wait_for_runs_then_shutdown`` ends in tracebacks and leaves the node router running on SIGTERM.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from parlai_dialeval.compat import mephisto as compat_mephisto, mephisto_claims, mephisto_door as compat_door
from parlai_dialeval.compat import mephisto_threads
from parlai_dialeval.crowdsourcing.platform import resume
from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto
from parlai_dialeval.crowdsourcing.platform.launch_log import say
from parlai_dialeval.crowdsourcing.platform.progress import SAMPLE_SECONDS, ProgressLog
from parlai_dialeval.crowdsourcing.platform.registry import get_task
from parlai_dialeval.errors import DialevalError

WORKER_PREFIX = "worker_"
# Mephisto's MockProvider stores a URL's worker_id=NAME as worker NAME_sandbox
SANDBOX_SUFFIX = "_sandbox"
POLL_SECONDS = 0.5  # how often serve() looks at the run (stop requests, units in flight)
# units whose workers have not started them yet; a stop expires these so nobody new is let in
NOT_STARTED = ("created", "launched")
# a stop tells the pages of agents in these statuses that the researcher ended the study
STILL_WORKING = ("none", "accepted", "onboarding", "waiting", "in task")
ENDED_KEY = "dialeval_ended"  # the live update saying so (frontend/src/components/transport.js)
ENDED_NOTICE_SECONDS = 0.5  # the event loop runs this long for the channels to send it before they close


def unused_worker_ids(db, count: int = 1) -> list[str]:
    """``count`` worker ids ``worker_N`` that no worker of this database has used."""
    taken = {w.worker_name.removesuffix(SANDBOX_SUFFIX) for w in db.find_workers()}
    found, number = [], 1
    while len(found) < count:
        if f"{WORKER_PREFIX}{number}" not in taken:
            found.append(f"{WORKER_PREFIX}{number}")
        number += 1
    return found


class _OursWithoutTraceback(logging.Filter):
    """Mephisto logs the traceback of any error while launching; ours (DialevalError, raised by the Prolific
    provider's setup) say in one line what is wrong and what to do, and ``launch`` prints that line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], DialevalError):
            record.exc_info = None
        return True


def one_line_per_log() -> None:
    """Mephisto gives each of its loggers a handler and the root logger another, so every line printed
    twice: keep the loggers' own handlers only (and no traceback for our own errors)."""
    from mephisto.utils.logger_core import loggers

    for logger in loggers.values():
        logger.propagate = False
        if not any(isinstance(f, _OursWithoutTraceback) for f in logger.filters):
            logger.addFilter(_OursWithoutTraceback())
    # the mock provider also prints each unit's line itself (with a placeholder worker_id=x)
    logging.getLogger("mephisto.abstractions.providers.mock.mock_unit").setLevel(logging.WARNING)


@dataclass
class LaunchedTask:
    operator: object
    db: object
    config: object
    data_dir: Path
    task_run_id: str = ""
    resume_note: str | None = None  # the line saying an interrupted run is resumed
    progress: ProgressLog | None = None  # the study's progress over time, for the dashboard (platform/progress.py)
    stop_requests: int = field(default=0, init=False)

    @property
    def task_name(self) -> str:
        return self.config.mephisto.task.task_name

    def worker_url(self, worker: str | None = None, assignment: str = "1") -> str:
        """The worker page's URL (mock provider); ``worker`` defaults to an id no worker has used yet."""
        worker = worker or unused_worker_ids(self.db)[0]
        port = self.config.mephisto.architect.get("port", "3000")
        return f"http://localhost:{port}/?worker_id={worker}&assignment_id={assignment}"

    def serving_note(self) -> str:
        """Which address the task's router serves (a rehearsal's is this machine only, unless told otherwise)."""
        from parlai_dialeval.compat.mephisto_door import LOCAL_HOST, router_host

        host, port = router_host(self.config.mephisto), self.config.mephisto.architect.get("port", "3000")
        if host == LOCAL_HOST:
            return (f"Its router serves {host}:{port}: this machine only (mephisto.blueprint.router_host=0.0.0.0 "
                    "serves your network).")
        return f"Its router serves {host}:{port}" + (" (every interface: anyone who can reach this machine)."
                                                     if host in ("0.0.0.0", "::") else ".")

    def in_flight(self) -> int:
        """Units (and onboardings) a worker is working on right now."""
        return sum(len(run.task_runner.running_units) + len(run.task_runner.running_assignments)
                   + len(run.task_runner.running_onboardings)
                   for run in self.operator.get_running_task_runs().values())

    def stop_new_work(self) -> None:
        """Launch no more units and withdraw those no worker has started; units in flight go on."""
        for run in self.operator.get_running_task_runs().values():
            run.task_launcher.shutdown()
            for unit in run.task_launcher.units:
                if unit.get_status() in NOT_STARTED:
                    unit.expire()

    def serve(self, say: Callable[[str], None] = print) -> None:
        """Run until every unit is done or the run is stopped (see the module docstring); always shuts
        everything down, the node router included, and says what was saved."""
        loop = self.operator._event_loop
        asyncio.set_event_loop(loop)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._request_stop)
        try:
            loop.run_until_complete(self._serve(say))
        finally:
            self.shutdown()  # still under our handlers: a Ctrl-C meanwhile only counts as one more request
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        say(self.saved_summary())

    def _request_stop(self) -> None:
        self.stop_requests += 1

    async def _serve(self, say: Callable[[str], None]) -> None:
        draining = False
        while self.operator.get_running_task_runs():
            if self.stop_requests >= 2:
                say(f"Stopping now; the {self.in_flight()} unit(s) in flight keep their work so far (partial).")
                return
            if self.stop_requests == 1 and not draining:
                draining = True
                self.stop_new_work()
                say(f"Stopping: no new workers are let in; waiting for {self.in_flight()} unit(s) in flight to "
                    f"finish. Press Ctrl-C again (or `kill {os.getpid()}`) to stop at once, keeping their work so far.")
            if draining and not self.in_flight():
                return
            if self.progress is not None and time.monotonic() >= self.progress.next_at:
                self.progress.next_at = time.monotonic() + SAMPLE_SECONDS
                await asyncio.get_running_loop().run_in_executor(None, self._sample_progress)
            await asyncio.sleep(POLL_SECONDS)

    def _sample_progress(self) -> None:
        try:
            self.progress.sample()
        except Exception as error:  # a busy database or a full disk costs a point of the chart, never the study
            logging.getLogger(__name__).warning("progress not recorded: %s: %s", type(error).__name__, error)

    def shutdown(self) -> None:
        """Stop everything now: the worlds still running save their partial work, the router exits; the
        run is marked stopped (a later launch of the task name starts afresh instead of resuming it). The pages
        still in the study are told first, so that they say the researcher ended it (not that a server failed)."""
        self._tell_pages_it_ended()
        for run in self.operator.get_running_task_runs().values():
            # channels before the router, as Mephisto does for a finished run: a router that exits first
            # makes Mephisto's socket log a traceback and try to reconnect
            run.client_io.shutdown()
        self.operator.force_shutdown(timeout=5)
        mephisto_threads.flush_chat_states()  # the worlds' last messages, in Mephisto's state files now
        if self.task_run_id and self.config.mephisto.provider.get("_provider_type") == "prolific":
            from parlai_dialeval.providers.prolific import webhooks

            webhooks.stop(self.db, self.task_run_id)  # unsubscribed: nothing serves its events any more
        if self.progress is not None:
            self._sample_progress()
        if self.task_run_id:
            from mephisto.data_model.task_run import TaskRun

            resume.mark_unsubmitted(self.db, self.task_run_id)
            resume.write_marker(TaskRun.get(self.db, self.task_run_id), stopped=True)

    def _tell_pages_it_ended(self) -> None:
        """A live update ``{ENDED_KEY: "stopped"}`` to each agent still working, then the event loop runs a moment so
        that the channels send it (frontend/src/components/transport.js shows the catalogue's "ended.stopped")."""
        told = 0
        for run in self.operator.get_running_task_runs().values():
            pool = run.worker_pool
            for agent in [*pool.agents.values(), *pool.onboarding_agents.values()]:
                if agent.db_status in STILL_WORKING:
                    run.client_io.send_live_update(agent.get_agent_id(), {ENDED_KEY: "stopped"})
                    told += 1
        loop = self.operator._event_loop
        if told and not loop.is_running() and not loop.is_closed():
            loop.run_until_complete(asyncio.sleep(ENDED_NOTICE_SECONDS))

    def saved_summary(self) -> str:
        agents = self.db.find_agents(task_run_id=self.task_run_id) if self.task_run_id else []
        counts: dict[str, int] = {}
        for agent in agents:
            counts[agent.get_status()] = counts.get(agent.get_status(), 0) + 1
        described = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no work"
        return (f"Saved in {self.data_dir}: {described} (units by worker status). "
                f"Export: dialeval export {self.task_name} --out FILE.jsonl")


def start(task: str, overrides: list[str] | None = None, data_dir: str | Path | None = None,
          update: dict | None = None) -> LaunchedTask:
    """Start a task run and return at once; the caller waits (``serve``) or stops it (``shutdown``).

    ``update`` sets config keys after the overrides (dotted key -> any value, e.g. a dict of models),
    for callers in Python where a Hydra override string would be awkward.
    """
    data_dir = prepare_mephisto(data_dir)
    spec = get_task(task)
    from parlai_dialeval.crowdsourcing.platform.adaptive import config as adaptive

    adaptive.check_overrides(spec, overrides)
    from mephisto.abstractions.databases.local_database import LocalMephistoDB
    from mephisto.abstractions.databases.local_singleton_database import MephistoSingletonDB
    from mephisto.operations.operator import Operator
    from mephisto.tools.scripts import augment_config_from_db
    from omegaconf import OmegaConf

    from parlai_dialeval.crowdsourcing.platform.config import compose

    cfg = compose(spec, overrides)  # a typo stops the launch before anything is created
    for key, value in (update or {}).items():
        OmegaConf.update(cfg, key, value, merge=False)
    adaptive.check_settings(cfg)  # before the task loads its data or bots
    compat_door.door_config(cfg.mephisto)  # a malformed address list: one line, before anything starts
    # mephisto.blueprint.cached_database: Mephisto's MephistoSingletonDB keeps the run's units, agents and task
    # run in memory (LocalMephistoDB rereads SQLite and rebuilds the task run's config at every lookup: with
    # hundreds of participants the server spent its time there, docs/scaling.md)
    cached = bool(cfg.mephisto.blueprint.get("cached_database"))
    db = (MephistoSingletonDB if cached else LocalMephistoDB)(database_path=str(database_path(data_dir)))
    if cfg.mephisto.provider.get("_provider_type") == "prolific":  # Mephisto would exit(1) with its own advice
        from parlai_dialeval.providers.prolific.settings import require_requester

        require_requester(cfg.mephisto, db)
    cfg = augment_config_from_db(cfg, db)
    one_line_per_log()
    interrupted = resume.find_interrupted(db, cfg.mephisto.task.task_name)
    port, orphan = _served_port(cfg.mephisto.architect), None
    if port is not None:
        from parlai_dialeval.crowdsourcing.platform.ports import port_is_free, require_free_port

        if interrupted is not None and (resume.read_marker(interrupted.run) or {}).get("port") == port:
            orphan = resume.stop_orphaned_router(interrupted.run)  # a killed launch's router holds our port
            end = time.monotonic() + 30  # its connections to participants' pages hold the port a moment longer
            while orphan and not port_is_free(port) and time.monotonic() < end:
                time.sleep(0.5)
        require_free_port(port)
    shared = spec.shared_state(cfg)
    note = None
    if interrupted is not None and interrupted.left > 0:
        note = resume.prepare(interrupted, cfg, shared, spec)
    mephisto_claims.carry_places(cfg.mephisto.task.task_name, study_places(cfg, shared))
    from parlai_dialeval.crowdsourcing.platform.adaptive import launch as adaptive_launch

    controller = adaptive_launch.attach(spec, cfg, shared, db, data_dir, resumed=note is not None)
    operator = Operator(db)
    try:
        with adaptive_launch.launching(controller):
            run_id = operator.launch_task_run_or_die(cfg.mephisto, shared_state=shared)
    except BaseException as error:  # Ctrl-C while launching included: never leave a router behind
        operator.force_shutdown(timeout=5)
        if not isinstance(error, Exception) or isinstance(error, DialevalError):  # ours already say what to do
            raise
        raise DialevalError(f"Mephisto could not launch {task}: {type(error).__name__}: {error}") from error
    launched = LaunchedTask(operator=operator, db=db, config=cfg, data_dir=data_dir, task_run_id=run_id,
                            resume_note=note, progress=ProgressLog(data_dir, cfg.mephisto.task.task_name,
                                                                   database_path(data_dir)))
    if cfg.mephisto.provider.get("_provider_type") == "prolific":  # where participants come from
        from parlai_dialeval.providers.prolific.provider import ProlificProvider

        say(ProlificProvider.announcement(run_id) or f"Prolific: no study was set up for task run {run_id}")
    # how often the operator looks at the run: each look costs with its units (compat's prompt_run_tracking)
    compat_mephisto.prompt_run_tracking(units=sum(len(run.task_launcher.units)
                                                  for run in operator.get_running_task_runs().values()))
    one_line_per_log()
    if controller is not None:
        try:
            controller.bind(launched)
        except BaseException:
            launched.shutdown()
            raise
    if port is not None:
        _require_router(launched, port)
    from mephisto.data_model.task_run import TaskRun

    asked = [q["name"] for q in (getattr(shared, "frontend_task_opts", None) or {}).get("questionnaire", [])]
    # the questions asked, for the export (Mephisto keeps only its own part of the config)
    resume.write_marker(TaskRun.get(db, run_id), port=port, questionnaire=asked, **_router(launched))
    if interrupted is not None:
        refused = resume.close(interrupted)
        launched.resume_note = "\n".join(filter(None, [note, orphan, refused])) or None
    return launched


def study_places(cfg, shared) -> int:
    """The places (units) the launch offers: its HITs (a chat task's ``num_conversations``, a static task's
    assignments, or ``adaptive_budget`` HITs when collection is adaptive and bounded), each a unit, or
    ``units_per_assignment`` of a static task. The router lets one address take a share of them."""
    static = hasattr(shared, "static_task_data")
    hits = len(shared.static_task_data) if static else int(cfg.mephisto.blueprint.get("num_conversations") or 0)
    if cfg.get("adaptive") and int(cfg.get("adaptive_budget") or 0) > 0:
        hits = int(cfg.adaptive_budget)
    return hits * (int(cfg.mephisto.blueprint.get("units_per_assignment") or 1) if static else 1)


def _served_port(architect) -> int | None:
    """The port this machine must serve on: the local node router's, or the mock architect's own server."""
    kind = architect.get("_architect_type")
    if kind == "local" or (kind == "mock" and architect.get("should_run_server")):
        return int(architect.get("port", 3000))
    return None


def _router(launched: LaunchedTask) -> dict:
    """The node router's pid and start time, for the run's marker (a relaunch stops it if it is orphaned)."""
    import psutil

    for run in launched.operator.get_running_task_runs().values():
        process = getattr(run.architect, "server_process", None)
        if process is not None and process.poll() is None:
            try:
                return {"router_pid": process.pid, "router_started": psutil.Process(process.pid).create_time()}
            except psutil.Error:
                pass
    return {}


def _require_router(launched: LaunchedTask, port: int) -> None:
    """The node router must still be running once launched (it exits at once when it cannot bind)."""
    from parlai_dialeval.crowdsourcing.platform.ports import PortInUseError, port_holder

    for run in launched.operator.get_running_task_runs().values():
        process = getattr(run.architect, "server_process", None)
        if process is not None and process.poll() is not None:
            holder = port_holder(port)
            launched.shutdown()
            raise PortInUseError(port, holder)

