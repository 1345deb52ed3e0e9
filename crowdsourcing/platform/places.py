"""Places held without activity (issue 38), for the dashboard: agents still holding a unit (Mephisto status
waiting, onboarding or in task) whose world has taken no act of theirs since they were given it, longer ago
than ``idle_seconds``. The router gives back the place of a page that never opens a socket
(crowdsourcing/router/dialeval_claims.js); a script that connects and then does nothing holds its place until
the task's turn timeout, and shows here. Read from the run folders (the claims log, the worlds' saved records)
and Mephisto's database only, so a separate process can ask cheaply.
"""
from __future__ import annotations

import time

from parlai_dialeval.crowdsourcing.platform.resume import claims_of
from parlai_dialeval.crowdsourcing.platform.session_world import ACTS_KEY

HELD = ("waiting", "onboarding", "in task")


def idle_places(db, task_name: str, record_files, idle_seconds: float = 300, now: float | None = None) -> list[dict]:
    """[{"agent_id", "worker", "registration", "held_seconds"}] of the task's places held without an act,
    longest held first (``record_files``: the task's saved records, its spec's ``extra["export_files"]``)."""
    now = time.time() if now is None else now
    out = []
    for task in db.find_tasks(task_name=task_name):
        for run in db.find_task_runs(task_id=task.db_id):
            claims = claims_of(run)
            for agent in db.find_agents(task_run_id=run.db_id):
                claim = claims.get(agent.db_id)
                if claim is None or agent.get_status() not in HELD or now - claim["at"] < idle_seconds:
                    continue
                paths = [f"{agent.get_data_dir()}/{name}" for name in record_files]
                if any(db.key_exists(path) and db.read_dict(path).get(ACTS_KEY) for path in paths):
                    continue
                out.append({"agent_id": agent.db_id, "worker": claim["worker"], "registration": claim["registration"],
                            "held_seconds": now - claim["at"]})
    return sorted(out, key=lambda place: -place["held_seconds"])
