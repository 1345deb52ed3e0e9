"""Launching a task: compose its config, load its shared state (bots) once, run it with Mephisto.

The default (every task's conf) is the embedded setup: LocalArchitect + node router, MockProvider,
SQLite in the data directory. ``mephisto/provider=mturk_sandbox`` or ``mturk`` (with
``mephisto.provider.requester_name=...`` registered through ``mephisto register``) and a public
architect (``mephisto/architect=heroku`` or ``ec2``) run the same task on MTurk.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto
from parlai_dialeval.crowdsourcing.platform.registry import get_task


@dataclass
class LaunchedTask:
    operator: object
    db: object
    config: object
    data_dir: Path

    def worker_url(self, worker: str = "worker_1", assignment: str = "1") -> str:
        port = self.config.mephisto.architect.get("port", "3000")
        return f"http://localhost:{port}/?worker_id={worker}&assignment_id={assignment}"

    def wait(self, log_rate: int | None = 30) -> None:
        self.operator.wait_for_runs_then_shutdown(skip_input=True, log_rate=log_rate)

    def shutdown(self) -> None:
        self.operator.force_shutdown()


def start(task: str, overrides: list[str] | None = None, data_dir: str | Path | None = None,
          update: dict | None = None) -> LaunchedTask:
    """Start a task run and return at once; the caller waits (``wait``) or stops it (``shutdown``).

    ``update`` sets config keys after the overrides (dotted key -> any value, e.g. a dict of models),
    for callers in Python where a Hydra override string would be awkward.
    """
    data_dir = prepare_mephisto(data_dir)
    spec = get_task(task)
    from mephisto.abstractions.databases.local_database import LocalMephistoDB
    from mephisto.operations.operator import Operator
    from mephisto.tools.scripts import augment_config_from_db
    from omegaconf import OmegaConf

    from parlai_dialeval.crowdsourcing.platform.config import compose

    db = LocalMephistoDB(database_path=str(database_path(data_dir)))
    cfg = compose(spec, overrides)
    for key, value in (update or {}).items():
        OmegaConf.update(cfg, key, value, merge=False)
    cfg = augment_config_from_db(cfg, db)
    shared = spec.shared_state(cfg)
    operator = Operator(db)
    operator.launch_task_run(cfg.mephisto, shared_state=shared)
    return LaunchedTask(operator=operator, db=db, config=cfg, data_dir=data_dir)
