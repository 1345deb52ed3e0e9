"""How a task folder declares itself to ``dialeval launch`` / ``export`` / ``qc_workers``.

A task is a package ``crowdsourcing/<task>/`` whose ``task.py`` defines ``TASK = TaskSpec(...)``.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from parlai_dialeval.errors import DialevalError

CROWDSOURCING_DIR = Path(__file__).resolve().parents[1]


@dataclass
class TaskSpec:
    """What the platform needs to know about a task.

    name: the task folder and the name used on the command line.
    config_class: a ``mephisto.operations.hydra_config.TaskConfig`` subclass (dataclass fields with
        ``metadata={"help": ...}``); its defaults list picks ``conf/<default_conf>.yaml``.
    default_conf: the YAML in ``crowdsourcing/<task>/conf/`` used when no ``conf=NAME`` override is given.
    shared_state: ``fn(cfg) -> SharedTaskState`` built once per launch (load bots here, once).
    export: ``fn(units: list[UnitData], task_name) -> ExportReport`` (platform/export.py): canonical
        records of the unit agents, and a note for every unit that yields none.
    export_onboarding: optional ``fn(attempts: list[UnitData], task_name) -> ExportReport`` for the
        onboarding attempts (``UnitData.onboarding``), marked ``onboarding: true`` (comparisons) or
        ``status: onboarding`` (conversations); without it each attempt becomes a note.
    worker_checks: optional ``fn(records) -> DataFrame`` with columns worker_id, passed, ... (qc_workers).
    extra: ``export_files`` (JSON files the worlds write per agent, read back by export),
        ``continues_units`` (its worlds carry on a unit of an interrupted run, platform/resume.py) and
        ``adaptive`` (a pairwise task that collects in batches with ``adaptive=true``, platform/adaptive/config.py).
    """

    name: str
    config_class: type
    shared_state: Callable[[Any], Any]
    export: Callable[..., Any]
    default_conf: str = "example"
    export_onboarding: Callable[..., Any] | None = None
    worker_checks: Callable[..., Any] | None = None
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def task_dir(self) -> Path:
        return CROWDSOURCING_DIR / self.name

    @property
    def conf_dir(self) -> Path:
        return self.task_dir / "conf"


def available_tasks() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules([str(CROWDSOURCING_DIR)])
                  if (CROWDSOURCING_DIR / info.name / "task.py").is_file())


def get_task(name: str) -> TaskSpec:
    if name not in available_tasks():
        raise DialevalError(f"unknown crowdsourcing task {name!r}; available: {', '.join(available_tasks()) or 'none'}")
    module = importlib.import_module(f"parlai_dialeval.crowdsourcing.{name}.task")
    spec = getattr(module, "TASK", None)
    if not isinstance(spec, TaskSpec):
        raise DialevalError(f"crowdsourcing/{name}/task.py must define TASK = TaskSpec(...)")
    return spec
