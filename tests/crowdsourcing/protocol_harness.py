"""Runs one of this project's crowdsourcing tasks in-process with MockArchitect + MockProvider
(no node, npm or browser), for the protocol tests: register scripted workers, send their acts,
read what the world showed them, export. See the notes on Mephisto 1.1.1 in docs/crowdsourcing_protocols.md.
"""
from __future__ import annotations

import time
from pathlib import Path

from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto


class MockRun:
    def __init__(self, task: str, data_dir: Path, port: int, overrides: list[str] | None = None):
        data_dir = prepare_mephisto(data_dir)
        from mephisto.abstractions.databases.local_database import LocalMephistoDB
        from mephisto.operations.operator import Operator
        from mephisto.tools.scripts import augment_config_from_db

        from parlai_dialeval.crowdsourcing.platform.config import compose
        from parlai_dialeval.crowdsourcing.platform.registry import get_task

        self.spec = get_task(task)
        self.db = LocalMephistoDB(database_path=str(database_path(data_dir)))
        cfg = compose(self.spec, ["mephisto/architect=mock", f"mephisto.architect.port={port}",
                                  "mephisto.architect.should_run_server=true", *(overrides or [])])
        self.config = augment_config_from_db(cfg, self.db)
        self.operator = Operator(self.db)
        self.operator.launch_task_run(self.config.mephisto, shared_state=self.spec.shared_state(self.config))
        self.live_run = list(self.operator.get_running_task_runs().values())[0]
        self.server = self.live_run.architect.server

    def wait(self, condition, timeout: float = 10.0, what: str = "condition") -> None:
        assert self.operator._run_loop_until(condition, timeout), f"timed out waiting for {what}"

    def settle(self) -> None:
        time.sleep(0.1)
        self.wait(lambda: len(self.live_run.client_io.request_id_to_channel_id) == 0, 5, "channel requests")

    def register(self, worker: str, registration: str) -> None:
        self.server.register_mock_agent(worker, registration)
        self.settle()

    def onboarding_agent(self, worker: str):
        name = f"{worker}_sandbox"
        self.wait(lambda: any(a.get_worker().worker_name == name for a in self.db.find_onboarding_agents()),
                  what=f"onboarding agent of {worker}")
        return [a for a in self.db.find_onboarding_agents() if a.get_worker().worker_name == name][-1]

    def unit_agent(self, worker: str):
        name = f"{worker}_sandbox"
        self.wait(lambda: any(a.get_worker().worker_name == name for a in self.db.find_agents()),
                  what=f"unit agent of {worker}")
        return [a for a in self.db.find_agents() if a.get_worker().worker_name == name][-1]

    def live_agent(self, agent):
        """The operator's own copy of an agent: a copy read from the database keeps a stale state."""
        return self.live_run.worker_pool.get_agent_for_id(agent.get_agent_id()) or agent

    def last_task_data(self, agent, after: int = 0, key: str = "phase") -> dict:
        """The latest task_data carrying ``key`` that the world sent to ``agent`` (waits for one newer than
        message number ``after``)."""
        def found():
            messages = self.live_agent(agent).state.get_data()["outputs"]["messages"]
            return [m for m in messages[after:] if key in (m.get("task_data") or {})]
        self.wait(lambda: bool(found()), what=f"task_data with {key}")
        return found()[-1]["task_data"]

    def message_count(self, agent) -> int:
        return len(self.live_agent(agent).state.get_data()["outputs"]["messages"])

    def act(self, agent, task_data: dict, text: str = "") -> None:
        self.server.send_agent_act(agent.get_agent_id(), {"text": text, "task_data": task_data,
                                                          "id": "worker", "episode_done": False})
        self.settle()

    def shutdown(self) -> None:
        try:
            self.operator.force_shutdown(timeout=5)
        finally:
            self.server.shutdown_mock()
