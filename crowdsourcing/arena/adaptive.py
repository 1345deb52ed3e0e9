"""``dialeval launch arena adaptive=true``: participants are let in while the ranking the study asks about
(``arena.target``) is not certified, at most ``adaptive_batch_size`` places open at once and ``adaptive_budget``
(default ``num_conversations``) in all. The evidence is the sampler's ledger (sampler.py), fed as battles end
and certified at ``adaptive_alpha`` by the same betting e-processes as `dialeval certify`, valid however the
pairs were drawn; once certified no one new is let in, and those in flight may finish at once. The state file
(``adaptive_state``, default ``<mephisto data>/adaptive/<task name>.json``) is the one the dashboard reads."""
from __future__ import annotations

import json
import time
from pathlib import Path

from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY

POLL_SECONDS = 2.0
OPEN = ("created", "launched", "assigned")


class ArenaStudy:
    def __init__(self, sampler, db, task_name: str, settings, fixed_hits: int, say=print, path: Path | None = None):
        from mephisto.utils.dirs import get_root_data_dir

        self.sampler, self.db, self.task_name, self.settings, self.say = sampler, db, task_name, settings, say
        self.budget = settings.budget or fixed_hits
        self.path = Path(path or Path(get_root_data_dir()) / "adaptive" / f"{task_name}.json")
        self.launcher = None
        self.emitted = 0
        self.status = "collecting"

    def bind(self, launched) -> None:
        from parlai_dialeval.compat.mephisto_threads import require_safe_launcher

        for run in launched.operator.get_running_task_runs().values():
            require_safe_launcher(run.task_launcher)
            self.launcher = run.task_launcher

    def _stopping(self) -> bool:
        return self.launcher is not None and self.launcher.finished_generators

    def open_places(self) -> int:
        tasks = self.db.find_tasks(task_name=self.task_name)
        if not tasks:
            return 0
        return sum(unit.get_status() in OPEN for unit in self.db.find_units(task_id=tasks[0].db_id))

    def hits(self):
        while self.emitted < self.budget:
            if self.sampler.certified():
                self._end("certified")
                return
            if self.open_places() < self.settings.batch_size:
                self.emitted += 1
                self._save()
                yield {SERVER_KEY: {"adaptive_place": self.emitted}}
            elif self._stopping():
                return
            else:
                time.sleep(POLL_SECONDS)
        self._end("budget_spent")

    def _end(self, status: str) -> None:
        self.status = status
        self._save()
        order = " > ".join(self.sampler.ranking())
        self.say(f"Adaptive arena {self.task_name}: " + (
            f"the {self.sampler.target} ranking is certified at alpha {self.sampler.ledger.alpha}" if status == "certified"
            else f"budget of {self.budget} participants spent before the {self.sampler.target} ranking was certified")
            + f" (current order {order}) after {self.sampler.battles_counted} counted battles. The run ends once the "
              f"participants in flight are done. State: {self.path}")

    def _save(self) -> None:
        """The state the dashboard's adaptive view reads (dashboard/adaptive_view.py)."""
        from parlai_dialeval.atomic import atomic_open

        self.path.parent.mkdir(parents=True, exist_ok=True)
        state = {"task": "arena", "task_name": self.task_name, "status": self.status,
                 "alpha": self.sampler.ledger.alpha, "models": self.sampler.ledger.models, "hits_emitted": self.emitted,
                 "batches": [], "target": self.sampler.target, "sampler": self.sampler.kind, **self.sampler.snapshot()}
        with atomic_open(self.path) as handle:
            json.dump(state, handle)
