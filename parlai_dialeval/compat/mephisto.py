"""The changes this project makes to Mephisto 1.1.1's start, configuration and pace (the router's ``server.js``
is ``compat/mephisto_router.py``'s, the door's ``compat/mephisto_door.py``'s, what several threads at once need
``compat/mephisto_threads.py``'s). Each checks the installed version first and that it took effect after.

- ``SOURCE_FIX``: dataclass defaults Python 3.11 rejects, rewritten at import. Retire when Mephisto
  uses ``field(default_factory=...)`` in ``hydra_config.py``.
- ``AGENT_SOURCE_FIX``: ``mephisto/data_model/agent.py`` imports detoxify (torch and transformers: about
  half the start of every process that imports Mephisto, each ``dialeval launch`` and ``export``) only to
  score the toxicity of ``/submit_metadata`` feedback, which our router refuses (docs/security.md) and for
  which detoxify would download a model at run time: the import fails as if detoxify were not installed.
  Retire when Mephisto imports detoxify where it uses it.
- ``use_data_dir``: Mephisto's data directory set in code, never asked for on stdin, and LocalArchitect's
  build folder inside it. Retire when Mephisto reads both from its config.
- ``metrics_server_off``: no Prometheus exporter on port 3031. Retire when Mephisto makes it optional.
- ``prompt_run_tracking``: the operator looks at a run of up to 20 units every second, not every 10 (one more
  second per 20 units, up to 10): a run whose last unit is done ended up to 10 s later, and every stop (the
  run's own end, Ctrl-C, a test's shutdown) waited out the tracker's current 10 s sleep (``shutdown_async``
  awaits the tracker). Retire when Mephisto wakes its tracker on a finished unit and on shutdown.
- ``prompt_unit_launching``: the task launcher's unit generator waits 1 s between passes, not 10: a stop joins
  that thread, so every stop within 10 s of a pass (each in-process test run's, most of all) waited out its
  sleep, and a run with a concurrency limit launched a freed unit up to 10 s late. Retire when Mephisto's
  generator waits on an event its shutdown sets.
- ``joined_force_shutdown``: ``Operator.force_shutdown`` (copied) joins each of its three steps' threads with
  its timeout instead of looking every 0.5 s whether they are done, so a stop takes what its steps take,
  not at least 1.5 s. Retire when Mephisto joins them.
- ``prompt_onboarding_end``: ParlAI-chat's ``run_onboarding`` ends by looking every 0.3 s whether the onboarding
  agent submitted, so a participant's "Continue" after a passed onboarding waited up to 0.3 s more for their unit.
  For that call the agent waits for the submit itself. Retire when Mephisto waits on ``did_submit`` there.
- ``share_unit``: a new agent of our provider is handed the ``Unit`` object its caller holds (whose
  ``worker_id`` was just set) through Mephisto's private ``_unit``, as Mephisto's own
  ``Agent.new_from_provider_data`` does; checked: ``Agent.get_unit`` still returns ``self._unit``. Retire
  when ``Agent.new`` takes the unit.
- ``providers_on_import``: Mephisto 1.1.1's provider registry only scans its own package, so our crowd
  providers (Prolific) register right after ``import mephisto`` finishes, whoever imports it, without
  importing Mephisto any earlier (a command that never touches Mephisto does not pay for it). Installed
  by ``compat.install()``. Retire when Mephisto discovers providers through entry points.

The arrival checks (a provider vetting who gets a place) are in ``compat/mephisto_arrivals.py``.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from pathlib import Path

from parlai_dialeval.compat.patching import (CompatError, is_ours, ours, require_call, require_ours, require_source,
                                             require_version)
from parlai_dialeval.compat.source_fixes import SourceFix

WRITTEN_FOR = "1.1.1"
_LOCK = threading.Lock()

SOURCE_FIX = SourceFix("mephisto.operations.hydra_config", "mephisto", WRITTEN_FOR, [
    ("    task: TaskRunArgs = TaskRunArgs()", "    task: TaskRunArgs = field(default_factory=TaskRunArgs)"),
    ("    database: DatabaseArgs = DatabaseArgs()", "    database: DatabaseArgs = field(default_factory=DatabaseArgs)"),
    ("    mephisto: MephistoConfig = MephistoConfig()",
     "    mephisto: MephistoConfig = field(default_factory=MephistoConfig)"),
], header="from dataclasses import field")
AGENT_SOURCE_FIX = SourceFix("mephisto.data_model.agent", "mephisto", WRITTEN_FOR, [
    ("    from detoxify import Detoxify\n\n    DETOXIFY_INSTALLED = True",
     # as many lines as before: inspect.getsource (share_unit's check) reads the file on disk by line number
     '    raise ImportError("detoxify left out by parlai_dialeval.compat (no task scores feedback metadata)")'
     "\n\n    DETOXIFY_INSTALLED = True"),
])


def use_data_dir(path: Path) -> None:
    """Mephisto asks for a data directory on stdin (``input()``) the first time it needs one, and
    LocalArchitect builds its server in site-packages/tmp/local_server_<run id>, where run ids restart
    at 1 in every database, so two launches (tests, several projects) would collide. Both go in
    ``path`` instead."""
    require_version("mephisto", WRITTEN_FOR, "use_data_dir")
    import mephisto.abstractions.architects.local_architect as local_architect
    import mephisto.utils.dirs as dirs

    dirs.loaded_data_dir = str(path)
    local_architect.get_mephisto_tmp_dir = ours(lambda: str(path / "tmp"))
    require_ours(local_architect, "get_mephisto_tmp_dir", "use_data_dir")
    require_call(local_architect.LocalArchitect, "get_mephisto_tmp_dir()", "use_data_dir")
    if dirs.get_root_data_dir() != str(path):
        raise CompatError(f"parlai_dialeval.compat: Mephisto's data directory is {dirs.get_root_data_dir()}, "
                          f"not {path}")


def metrics_server_off() -> None:
    """Mephisto's Prometheus exporter binds port 3031 in every launch (a second launch logs a traceback
    there) and only feeds a Grafana setup this project never installs: leave it off."""
    require_version("mephisto", WRITTEN_FOR, "metrics_server_off")
    import mephisto.operations.operator as operator

    operator.start_metrics_server = ours(lambda *args, **kwargs: None)
    operator.launch_prometheus_server = ours(lambda *args, **kwargs: False)
    for name in ("start_metrics_server", "launch_prometheus_server"):
        require_ours(operator, name, "metrics_server_off")
        require_call(operator.Operator, f"{name}()", "metrics_server_off")


# a look of the operator at a run whose units are all out reads every assignment's status: with SQLite (the default,
# no mephisto.blueprint.cached_database) about 1.1 ms a unit (228 ms for 200 units, measured on the 2-core machine),
# in the event loop that serves the participants' packets. One look per UNITS_PER_SECOND units and second keeps that
# near 2% of the loop; Mephisto's 10 s (RUN_STATUS_POLL_TIME) stays the longest, 1 s the shortest.
UNITS_PER_SECOND = 20


def prompt_run_tracking(operator=None, units: int = 0) -> None:
    """Mephisto's run tracker (``Operator._track_and_kill_runs``) sleeps ``RUN_STATUS_POLL_TIME`` between looks:
    a finished run is noticed up to that late, and ``force_shutdown`` ends by awaiting the tracker, so its
    current sleep too. The tracker reads the module global at each sleep: setting it is enough; ``units``: the
    run's (``runner.start`` sets it again once the run is out). ``operator``: ``mephisto.operations.operator``
    (or a copy of it, in tests)."""
    require_version("mephisto", WRITTEN_FOR, "prompt_run_tracking")
    if operator is None:
        from mephisto.operations import operator
    require_call(operator.Operator._track_and_kill_runs, "asyncio.sleep(RUN_STATUS_POLL_TIME)", "prompt_run_tracking")
    require_call(operator.Operator.shutdown_async, "await self._run_tracker_task", "prompt_run_tracking")
    operator.RUN_STATUS_POLL_TIME = min(10.0, max(1.0, units / UNITS_PER_SECOND))


# seconds between the task launcher's passes over its units (Mephisto's UNIT_GENERATOR_WAIT_SECONDS is 10); a pass
# reads the status of each launched unit
UNIT_GENERATOR_WAIT_SECONDS = 1.0


def prompt_unit_launching(task_launcher=None) -> None:
    """Mephisto's ``TaskLauncher.generate_units`` sleeps ``UNIT_GENERATOR_WAIT_SECONDS`` after each pass, in the
    thread ``TaskLauncher.shutdown`` joins: a stop waits out that sleep (``force_shutdown`` gives up after its
    timeout, 5 s, and goes on). The generator, and our copy of it (``_safe_unit_launcher``), read the module
    global at each sleep. ``task_launcher``: ``mephisto.operations.task_launcher`` (or a copy, in tests)."""
    require_version("mephisto", WRITTEN_FOR, "prompt_unit_launching")
    if task_launcher is None:
        from mephisto.operations import task_launcher
    require_call(task_launcher.TaskLauncher.generate_units, "time.sleep(UNIT_GENERATOR_WAIT_SECONDS)",
                 "prompt_unit_launching")
    require_call(task_launcher.TaskLauncher.shutdown, "self.units_thread.join()", "prompt_unit_launching")
    task_launcher.UNIT_GENERATOR_WAIT_SECONDS = UNIT_GENERATOR_WAIT_SECONDS


FORCE_SHUTDOWN_SOURCE = "27b11211688a009c27a72e475a4062fb05bfb7b1e63558509c9d68ac0bb52052"  # Mephisto 1.1.1's


def joined_force_shutdown(operator=None) -> None:
    """Mephisto's ``force_shutdown`` runs its steps (end the launchers, the architects, the runs) each in a
    thread and sleeps 0.5 s while the thread is alive, up to ``timeout``: every step costs at least 0.5 s,
    however fast it is. Ours is its body with ``join(timeout)`` in place of that loop. ``operator``:
    ``mephisto.operations.operator`` (or a copy of it, in tests)."""
    require_version("mephisto", WRITTEN_FOR, "joined_force_shutdown")
    if operator is None:
        from mephisto.operations import operator
    if is_ours(operator.Operator.force_shutdown):
        return
    require_source(operator.Operator.force_shutdown, FORCE_SHUTDOWN_SOURCE, "joined_force_shutdown")

    @ours
    def force_shutdown(self, timeout=5):
        self.is_shutdown = True

        def end_launchers_and_expire_units():
            for tracked_run in self._task_runs_tracked.values():
                tracked_run.task_launcher.shutdown()
                tracked_run.task_launcher.expire_units()

        def end_architects():
            for tracked_run in self._task_runs_tracked.values():
                tracked_run.architect.shutdown()

        def cleanup_runs():
            for run_id in list(self._task_runs_tracked.keys()):
                self._task_runs_tracked[run_id].shutdown()

        for name, step in (("expire-units", end_launchers_and_expire_units), ("end-architects", end_architects),
                           ("cleanup-runs", cleanup_runs)):
            shutdown_thread = threading.Thread(target=step, name=f"force-shutdown-{name}")
            shutdown_thread.start()
            shutdown_thread.join(timeout)  # as Mephisto's, a step still running after its timeout is left behind
        if self._event_loop.is_running():
            self._event_loop.stop()
        self._event_loop.run_until_complete(self.shutdown_async())

    operator.Operator.force_shutdown = force_shutdown
    require_ours(operator.Operator, "force_shutdown", "joined_force_shutdown")


def require_onboarding_end() -> None:
    """ParlAI-chat's ``run_onboarding`` still ends with the loop ``prompt_onboarding_end`` relies on."""
    from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_task_runner import ParlAIChatTaskRunner

    require_version("mephisto", WRITTEN_FOR, "prompt_onboarding_end")
    for call in ("agent.await_submit(timeout=None)", "time.sleep(0.3)"):
        require_call(ParlAIChatTaskRunner.run_onboarding, call, "prompt_onboarding_end")


@contextlib.contextmanager
def prompt_onboarding_end(agent):
    """While the block runs, ``agent`` (an ``OnboardingAgent``) answers ``await_submit(timeout=None)`` by waiting
    for its ``did_submit`` event instead of looking at it. ParlAI-chat's ``run_onboarding`` ends with
    ``while not agent.await_submit(timeout=None): time.sleep(0.3)``, and the event that ends that loop is the same
    one: set by the submit, a disconnect or a return (``update_status``) and a shutdown. Only this agent, only for
    this call: elsewhere ``await_submit(timeout=None)`` is a look that must not block (task_runner.py). A launch
    checks first that the loop is still Mephisto 1.1.1's (``require_onboarding_end``)."""
    looked = agent.await_submit

    def await_submit(timeout=None):
        if timeout is None:
            agent.did_submit.wait()
        return looked(timeout)

    agent.await_submit = await_submit
    try:
        yield
    finally:
        del agent.await_submit


def require_onboarding_order() -> None:
    """The Mephisto 1.1.1 internals a static task's onboarding with several tries relies on
    (crowdsourcing/platform/onboarding_tries.py) are still there (CompatError otherwise): the
    worker pool filters units before it checks the onboarding qualification and after it grades an
    onboarding, and the client IO answers a known registration id from ``agents_by_registration_id``."""
    from mephisto.operations.client_io_handler import ClientIOHandler
    from mephisto.operations.worker_pool import WorkerPool

    require_version("mephisto", WRITTEN_FOR, "onboarding_tries")
    for method in (WorkerPool.register_agent, WorkerPool.register_agent_from_onboarding):
        require_call(method, "task_runner.filter_units_for_worker", "onboarding_tries")
    require_call(ClientIOHandler._register_agent, "in self.agents_by_registration_id", "onboarding_tries")


def forget_registration(onboarding_agent) -> None:
    """A page that reloads registers again under the same id (Prolific: SESSION_ID-PID), and Mephisto
    answers a known id with the agent it had (client_io_handler._register_agent: a rejected onboarding gets
    "not qualified"); forgotten, the id registers afresh and gets the next try."""
    known = onboarding_agent.get_live_run().client_io.agents_by_registration_id
    for registration, agent_id in list(known.items()):
        if agent_id == onboarding_agent.get_agent_id():
            known.pop(registration, None)


def share_unit(agent, unit) -> None:
    """``agent.get_unit()`` returns ``unit`` itself (not a copy read back from the database)."""
    require_version("mephisto", WRITTEN_FOR, "share_unit")
    from mephisto.data_model.agent import Agent

    require_call(Agent.get_unit, "return self._unit", "share_unit")
    agent._unit = unit


# provider type -> its module, by name: compat imports nothing of ours above the ground layer
PROVIDERS = {"prolific": "parlai_dialeval.providers.prolific.provider"}


def register_providers() -> None:
    require_version("mephisto", WRITTEN_FOR, "providers_on_import")
    for name in PROVIDERS.values():
        importlib.import_module(name)


class _RegisteringLoader(importlib.machinery.SourceFileLoader):
    def exec_module(self, module) -> None:
        super().exec_module(module)
        register_providers()


class _MephistoFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "mephisto":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = _RegisteringLoader(fullname, spec.origin)
        return spec


def providers_on_import() -> None:
    """Register our providers once ``mephisto`` is imported (now, if it already is)."""
    if "mephisto" in sys.modules:
        register_providers()
    elif not any(isinstance(f, _MephistoFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MephistoFinder())


def require_providers() -> None:
    """Our providers are in Mephisto's registry (``mephisto/provider=prolific`` resolves)."""
    from mephisto.operations.registry import PROVIDERS as REGISTERED

    missing = sorted(set(PROVIDERS) - set(REGISTERED))
    if missing:
        raise CompatError(f"parlai_dialeval.compat: providers_on_import did not take effect: {missing} not in "
                          "Mephisto's registry")


def check() -> list[str]:
    """What install.sh confirms: the fixed config imports, and the runtime patches take effect."""
    from mephisto.operations.hydra_config import MephistoConfig, TaskConfig

    if TaskConfig.__dataclass_fields__["mephisto"].default_factory is not MephistoConfig:
        raise ImportError("parlai_dialeval.compat: the hydra_config source fix did not take effect")
    from mephisto.data_model import agent

    if agent.DETOXIFY_INSTALLED or "detoxify" in sys.modules:
        raise ImportError("parlai_dialeval.compat: Mephisto's agent module imported detoxify after all")
    metrics_server_off()
    prompt_run_tracking()
    prompt_unit_launching()
    joined_force_shutdown()
    require_onboarding_order()
    require_onboarding_end()
    require_providers()
    return [f"mephisto {WRITTEN_FOR}: hydra_config dataclass defaults, no detoxify, Prometheus off, run tracking and unit "
            "launching every second, a joined force_shutdown, onboarding tries, an onboarding's end on its submit, our crowd "
            "providers"]
