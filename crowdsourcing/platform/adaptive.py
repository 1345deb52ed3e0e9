"""Adaptive collection in the pairwise tasks (``dialeval launch acute adaptive=true``; issue 16).

The launch emits HITs in batches instead of the whole fixed design at once (static tasks: ACUTE, A/B)
or instead of ``num_conversations`` HITs whose models the pool balances (PW-Turn). Mephisto 1.1.1's
TaskLauncher takes a generator for the units' data and calls it from its own thread, creating each
HIT as it is yielded; ``Controller.hits`` is that generator. After yielding a batch it blocks until
every HIT of the batch is finished, reads their answers from Mephisto's database through the task's
own export (canonical comparisons), adds them to each model pair's betting e-process
(parlai_dialeval.adaptive.ledger), saves the state, and either stops (every adjacent pair of the
current ranking certified at ``adaptive_alpha``, or the budget spent) or lets the allocator
(parlai_dialeval.adaptive.allocation) pick the next batch's model pairs. A generator that returns ends
the run once the HITs in flight are done (Mephisto's own end of a generated run).

The judgments of a static task come from the fixed design it built (``static_task_data``): per model
pair, its items (ACUTE conversation pairs, A/B prompts), dealt in a seeded order and reused once
exhausted. A PW-Turn HIT is one conversation with the chosen pair (its world reads them from the unit's
server-side data), its per-turn votes one outcome. Each judgment keeps its pair's selection probability
in the HIT's server-side data.

The state (``adaptive_state``, default ``<mephisto data>/adaptive/<task name>.json``) is written
atomically when a batch is emitted and after it is read. A killed launch, relaunched, resumes through
platform/resume.py, which re-offers the unfinished HITs of the interrupted run: they are yielded first,
then the batch they belong to is awaited and read like any other. Answers are read once per Mephisto
agent (``ingested_agents``), so no batch is counted twice.

Why one module of about 420 lines: everything here is glue to Mephisto 1.1.1's launcher (its options,
the hook that hands it the generator, the loop that generator runs); the statistics it drives live in
parlai_dialeval/adaptive/ as pure functions.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
from mephisto.operations.hydra_config import TaskConfig

from parlai_dialeval.adaptive.allocation import ALLOCATORS, all_pairs, current_ranking
from parlai_dialeval.adaptive.ledger import Ledger
from parlai_dialeval.crowdsourcing.platform.blueprint import GENERATED_HITS, SERVER_KEY
from parlai_dialeval.errors import DialevalError

BATCH_KEY = "adaptive_batch"  # in a HIT's server-side data: the batch it belongs to
POLL_SECONDS = 2.0  # how often a waiting batch looks at Mephisto's database
OUTCOME = {"a": 1.0, "b": 0.0, "tie": 0.5}


@dataclass
class AdaptiveConfig(TaskConfig):
    """The adaptive-collection settings of a pairwise task (top-level keys: ``adaptive=true``)."""

    adaptive: bool = field(default=False, metadata={
        "help": "emit HITs in batches, choosing each batch's model pairs from the answers so far, and stop "
                "once the ranking is certified or adaptive_budget is spent (docs/adaptive_evaluation.md)"})
    adaptive_batch_size: int = field(default=4, metadata={"help": "HITs per batch"})
    adaptive_budget: int = field(default=0, metadata={
        "help": "most HITs in all; 0 = as many as the fixed design has"})
    adaptive_alpha: float = field(default=0.05, metadata={
        "help": "level of the certified ranking (every claim at once, valid at every look)"})
    adaptive_allocator: str = field(default="greedy_adjacent", metadata={
        "help": f"how pairs are chosen: {' | '.join(ALLOCATORS)}"})
    adaptive_explore: float = field(default=0.1, metadata={
        "help": "share of each batch given to uniformly drawn pairs (greedy_adjacent)"})
    adaptive_worker_cap: int = field(default=0, metadata={
        "help": "most judgments of one worker counted as evidence (later ones are exported, not counted); 0 = no cap"})
    adaptive_seed: Optional[int] = field(default=None, metadata={"help": "seed of pair choice and item order"})
    adaptive_state: str = field(default="", metadata={
        "help": "state file (JSON); default <mephisto data>/adaptive/<task name>.json"})


@dataclass(frozen=True)
class StaticPairwise:
    """How a static pairwise task's judgments look: the two models of one and what the page is shown of it."""

    models_of: Callable[[dict], tuple[str, str]]
    public: Callable[[dict], dict]


@dataclass(frozen=True)
class ChatPairwise:
    """A chat task comparing two models per HIT (PW-Turn): each HIT is one conversation with the pair the
    allocator chose (its world reads ``models`` from the unit's server-side data); per-turn votes of one
    conversation count as one outcome, their mean (turns of a conversation are not independent)."""

    models: Callable[[object], list[str]]  # shared state -> the models of the launch


def check_overrides(spec, overrides: list[str]) -> None:
    """``adaptive...=`` given to a task without adaptive collection: one line saying which tasks have it."""
    keys = [o.split("=", 1)[0].lstrip("+~") for o in overrides or []]
    if any(key.startswith("adaptive") for key in keys) and "adaptive" not in spec.extra:
        from parlai_dialeval.crowdsourcing.platform.registry import available_tasks, get_task

        offered = [name for name in available_tasks() if "adaptive" in get_task(name).extra]
        raise DialevalError(f"adaptive=true: task {spec.name} is not a pairwise task; adaptive collection "
                            f"is offered by {', '.join(offered)}")


def check_settings(cfg) -> None:
    """The adaptive settings of a composed config, when ``adaptive=true``: one line for a bad one."""
    if cfg.get("adaptive"):
        Settings.from_config(cfg)


def attach(spec, cfg, shared, db, data_dir: Path, resumed: bool) -> Optional["Controller"]:
    """Replace the task's fixed design by the adaptive generator when ``adaptive=true`` (else None).
    ``resumed``: platform/resume.py has put the interrupted run's unfinished HITs in ``shared``."""
    if not cfg.get("adaptive"):
        return None
    settings = Settings.from_config(cfg)
    path = Path(cfg.adaptive_state or Path(data_dir) / "adaptive" / f"{cfg.mephisto.task.task_name}.json")
    state = json.loads(path.read_text()) if path.is_file() else None
    if state is None and resumed:
        raise DialevalError(f"{path}: no adaptive state for the interrupted run being resumed; give its "
                            "adaptive_state, or launch under another mephisto.task.task_name")
    task_name = cfg.mephisto.task.task_name
    chat = isinstance(spec.extra["adaptive"], ChatPairwise)
    if chat:
        # an interrupted batch's unfinished conversations are not offered again: the allocator chooses anew
        models, design, left = sorted(spec.extra["adaptive"].models(shared)), [], []
        fixed_hits = int(cfg.mephisto.blueprint.get("num_conversations") or 0)
    else:
        design = state["design"] if state else list(shared.static_task_data)
        models, left, fixed_hits = None, list(shared.static_task_data) if resumed else [], len(design)
    controller = Controller(spec, task_name, db, design, settings, path, state, left, models=models,
                            fixed_hits=fixed_hits)
    _launch_units_safely()
    setattr(shared, GENERATED_HITS if chat else "static_task_data", controller.hits())
    return controller


def _launch_units_safely() -> None:
    """Mephisto 1.1.1's unit thread iterates over ``unlaunched_units`` (launching a unit at every step)
    while the generator's thread adds to it: "dictionary changed size during iteration" kills the unit
    thread and no HIT is launched again. Same loop over a copy taken under the launcher's lock."""
    from mephisto.data_model.constants.assignment_state import AssignmentState
    from mephisto.operations import task_launcher

    if getattr(task_launcher.TaskLauncher.generate_units, "dialeval_safe", False):
        return

    def generate_units(self):
        while self.keep_launching_units:
            for db_id, unit in list(self.launched_units.items()):
                if unit.get_status() not in (AssignmentState.LAUNCHED, AssignmentState.ASSIGNED):
                    self.launched_units.pop(db_id)
            with self.unlaunched_units_access_condition:
                waiting = list(self.unlaunched_units.items())
            room = self.max_num_concurrent_units - len(self.launched_units)
            for db_id, unit in waiting if self.max_num_concurrent_units == 0 else waiting[:max(room, 0)]:
                self.launched_units[db_id] = unit
                with self.unlaunched_units_access_condition:
                    self.unlaunched_units.pop(db_id)
                yield unit
            time.sleep(task_launcher.UNIT_GENERATOR_WAIT_SECONDS)
            if not self.unlaunched_units:
                break

    generate_units.dialeval_safe = True
    task_launcher.TaskLauncher.generate_units = generate_units


@dataclass(frozen=True)
class Settings:
    batch_size: int
    budget: int
    alpha: float
    allocator: str
    explore: float
    worker_cap: int
    seed: Optional[int]

    @classmethod
    def from_config(cls, cfg) -> "Settings":
        settings = cls(int(cfg.adaptive_batch_size), int(cfg.adaptive_budget), float(cfg.adaptive_alpha),
                       str(cfg.adaptive_allocator), float(cfg.adaptive_explore), int(cfg.adaptive_worker_cap),
                       cfg.adaptive_seed)
        if settings.batch_size < 1:
            raise DialevalError(f"adaptive_batch_size={settings.batch_size}: expected at least 1 HIT per batch")
        if settings.budget and settings.budget < settings.batch_size:
            raise DialevalError(f"adaptive_budget={settings.budget} is smaller than one batch "
                                f"(adaptive_batch_size={settings.batch_size} HITs): raise the budget or lower "
                                "the batch")
        if not 0 < settings.alpha < 1:
            raise DialevalError(f"adaptive_alpha={settings.alpha}: expected a level between 0 and 1")
        if not 0 <= settings.explore <= 1:
            raise DialevalError(f"adaptive_explore={settings.explore}: expected a share between 0 and 1")
        if settings.allocator not in ALLOCATORS:
            raise DialevalError(f"adaptive_allocator={settings.allocator}: expected one of {', '.join(ALLOCATORS)}")
        return settings


def _key(a: str, b: str) -> str:
    return "|".join(sorted((a, b)))


def within_cap(judgments: list[tuple], counts: dict[str, int], cap: int) -> tuple[list[tuple], int]:
    """The judgments (worker first) counted as evidence: at most ``cap`` per worker over the whole study
    (``counts``, updated: what each worker has had counted so far); 0 = no cap. Also how many were not."""
    kept = []
    for judgment in judgments:
        if not cap or counts.get(judgment[0], 0) < cap:
            counts[judgment[0]] = counts.get(judgment[0], 0) + 1
            kept.append(judgment)
    return kept, len(judgments) - len(kept)


def outcomes(records: list[dict]) -> list[tuple[str, str, str, float]]:
    """(worker, first model, second model, outcome for the first) per judgment of canonical records, in
    order: a comparison of workers (automatic ties and onboarding left out) scores 1, 1/2 or 0; the
    per-turn votes of one conversation (``turn_index`` set) score once, their mean."""
    single, turns = [], {}
    for record in records:
        if record["type"] != "comparison" or record.get("automatic") or record.get("onboarding"):
            continue
        first, second = sorted((record["model_a"], record["model_b"]))
        score = OUTCOME[record["choice"]] if record["model_a"] == first else 1 - OUTCOME[record["choice"]]
        if record.get("turn_index") is None:
            single.append((record["worker_id"], first, second, score))
        else:
            turns.setdefault((record["worker_id"], first, second, record["item_id"]), []).append(score)
    return single + [(*key[:3], float(np.mean(scores))) for key, scores in turns.items()]


class Controller:
    """The batch loop of one adaptive study (see the module docstring); ``say`` prints its progress."""

    def __init__(self, spec, task_name: str, db, design: list[dict], settings: Settings, path: Path,
                 state: dict | None, left: list[dict], models: list[str] | None = None, fixed_hits: int = 0,
                 say: Callable[[str], None] = print):
        self.pairwise = spec.extra["adaptive"]
        self.spec, self.task_name, self.db, self.settings, self.path = spec, task_name, db, settings, path
        self.left, self.say = left, say
        self.stop = threading.Event()  # set when Mephisto stops launching (Ctrl-C, shutdown)
        self.launcher = None
        self._batch_of_unit: dict[str, int | None] = {}
        self.pools = self._pools(design)
        models = models or sorted({m for key in self.pools for m in key.split("|")})
        if len(models) < 2:
            raise DialevalError(f"adaptive=true needs at least two models to compare; the design of {task_name} "
                                f"has {', '.join(models) or 'none'}")
        budget = settings.budget or fixed_hits
        if budget < settings.batch_size:
            raise DialevalError(f"adaptive budget: the fixed design has {budget} HIT(s), smaller than one batch "
                                f"(adaptive_batch_size={settings.batch_size}); set adaptive_budget or lower the batch")
        self.budget = budget
        if state is None:
            state = {"task": spec.name, "task_name": task_name, "models": models, "alpha": settings.alpha,
                     "status": "collecting", "hits_emitted": 0, "judgments": 0, "over_cap": 0, "batches": [],
                     "ingested_agents": [], "worker_judgments": {}, "pool_used": {}, "design": design,
                     "rng": np.random.default_rng(settings.seed).bit_generator.state,
                     "ledger": Ledger(models, settings.alpha).to_json()}
        self._check(state, models)
        self.state = state
        self.ledger = Ledger.from_json(state["ledger"])
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state["rng"]
        self.allocator = ALLOCATORS[settings.allocator](**(
            {"explore": settings.explore} if settings.allocator == "greedy_adjacent" else {}))
        if hasattr(self.allocator, "asked"):  # Uniform cycles through the pairs across batches
            self.allocator.asked = state.get("judgments_chosen", 0)

    def _check(self, state: dict, models: list[str]) -> None:
        if state["status"] != "collecting":
            raise DialevalError(f"{self.path}: this adaptive study has ended ({state['status']} after "
                                f"{state['hits_emitted']} HITs); give another adaptive_state or task name")
        if state["models"] != models or state["alpha"] != self.settings.alpha:
            raise DialevalError(f"{self.path}: written for models {state['models']} at alpha {state['alpha']}, "
                                f"not {models} at {self.settings.alpha}; give another adaptive_state")

    def _pools(self, design: list[dict]) -> dict[str, list[dict]]:
        """Model pair -> its judgments in the fixed design; a unit template is kept for building HITs."""
        pools: dict[str, list[dict]] = {}
        for hit in design:
            for judgment in hit[SERVER_KEY]["pairs"]:
                pools.setdefault(_key(*self.pairwise.models_of(judgment)), []).append(judgment)
        self.template = design[0] if design else {}
        self.per_hit = max((len(hit[SERVER_KEY]["pairs"]) for hit in design), default=1)
        return pools

    def bind(self, launched) -> None:
        """The launched run: its TaskLauncher says when Mephisto stops taking HITs."""
        for run in launched.operator.get_running_task_runs().values():
            self.launcher = run.task_launcher

    # ------------------------------------------------------------------ the generator Mephisto runs
    def hits(self):
        yield from self.left  # the interrupted run's unfinished HITs (platform/resume.py)
        while True:
            if not self._await_batch():
                return
            self._ingest()
            if self._finished():
                return
            yield from self._emit()

    def _stopping(self) -> bool:
        return self.stop.is_set() or (self.launcher is not None and self.launcher.finished_generators)

    def _await_batch(self) -> bool:
        """Wait until no HIT of the last batch is still open; False if the run is being stopped."""
        if not self.state["batches"]:
            return True
        batch = self.state["batches"][-1]["batch"]
        while any(status in ("created", "launched", "assigned") for status in self._unit_statuses(batch)):
            if self._stopping():
                return False
            time.sleep(POLL_SECONDS)
        return not self._stopping()

    def _unit_batch(self, unit) -> int | None:
        if unit.db_id not in self._batch_of_unit:
            try:
                data = unit.get_assignment_data().unit_data[unit.unit_index]
                self._batch_of_unit[unit.db_id] = (data.get(SERVER_KEY) or {}).get(BATCH_KEY)
            except (OSError, ValueError, KeyError, IndexError):
                return None
        return self._batch_of_unit[unit.db_id]

    def _unit_statuses(self, batch: int) -> list[str]:
        tasks = self.db.find_tasks(task_name=self.task_name)
        units = self.db.find_units(task_id=tasks[0].db_id) if tasks else []
        return [unit.get_status() for unit in units if self._unit_batch(unit) == batch]

    def _ingest(self) -> None:
        """Add every finished HIT's comparisons not read before to the ledger (any batch: late ones too)."""
        from parlai_dialeval.crowdsourcing.platform.export import read_units
        from parlai_dialeval.crowdsourcing.platform.resume import submitted

        done = set(self.state["ingested_agents"])
        finished = {agent.db_id for agent in self.db.find_agents(task_id=self.db.find_tasks(
            task_name=self.task_name)[0].db_id) if agent.db_id not in done and submitted(agent)}
        units = [u for u in read_units(self.db, self.task_name, tuple(self.spec.extra.get("export_files", ())))
                 if u.agent_id in finished and u.server.get(BATCH_KEY) is not None]
        report = self.spec.export(units, self.task_name) if units else None
        kept, over = within_cap(outcomes(report.records if report else []), self.state["worker_judgments"],
                                self.settings.worker_cap)
        for _, first, second, outcome in kept:
            self.ledger.add(first, second, outcome)
        self.state["judgments"] += len(kept)
        self.state["over_cap"] += over
        # malformed submissions: read and counted, no judgment (notes in `dialeval export`)
        self.state["malformed"] = self.state.get("malformed", 0) + len(report.malformed if report else [])
        self.state["ingested_agents"] += sorted(u.agent_id for u in units)
        if self.state["batches"]:
            self.state["batches"][-1]["read"] = True
        self._save()

    def _finished(self) -> bool:
        ranking = current_ranking(self.ledger)
        self.state["ranking"] = ranking
        certified = all(self.ledger.beats(a, b) for a, b in zip(ranking, ranking[1:]))
        if certified or self.state["hits_emitted"] >= self.budget:
            self.state["status"] = "certified" if certified else "budget_spent"
            self._save()
            order = " > ".join(ranking)
            self.say(f"Adaptive study {self.task_name}: " + (
                f"ranking certified at alpha {self.settings.alpha}: {order}" if certified else
                f"budget of {self.budget} HITs spent before the ranking was certified (current order {order}; "
                f"run `dialeval certify` on the export for what is settled)")
                + f", after {self.state['hits_emitted']} HITs and {self.state['judgments']} judgments. "
                  f"The run ends once the HITs in flight are done. State: {self.path}")
            return True
        return False

    def _emit(self) -> list[dict]:
        """The next batch's HITs, recorded in the state before Mephisto sees them."""
        hits = min(self.settings.batch_size, self.budget - self.state["hits_emitted"])
        chat = isinstance(self.pairwise, ChatPairwise)
        chosen, probability = self.allocator.choose(self.ledger, hits * (1 if chat else self.per_hit), self.rng)
        self.state["judgments_chosen"] = self.state.get("judgments_chosen", 0) + len(chosen)
        if chat:  # one conversation per HIT
            judgments = [{"models": list(p), "selection_probability": probability[p]} for p in chosen]
            units = [[judgment] for judgment in judgments]
        else:
            judgments = [self._draw(a, b, probability) for a, b in chosen]
            units = self._cut(judgments, hits)
        batch = len(self.state["batches"]) + 1
        self.state["batches"].append({
            "batch": batch, "hits": len(units), "pairs": [list(p) for p in chosen], "read": False,
            "selection_probability": {_key(*p): probability[p] for p in all_pairs(self.ledger.models)}})
        self.state["hits_emitted"] += len(units)
        self.state["rng"] = self.rng.bit_generator.state
        self._save()
        self.say(f"Adaptive batch {batch}: {len(units)} HIT(s), {len(judgments)} judgments "
                 f"({self.state['hits_emitted']} of at most {self.budget} HITs).")
        return [self._hit(unit, batch) for unit in units]

    def _draw(self, a: str, b: str, probability: dict) -> dict:
        """The pair's next item of the fixed design (in a seeded order; reused once all were shown)."""
        key = _key(a, b)
        pool = self.pools[key]
        used = self.state["pool_used"].get(key, 0)
        order = np.random.default_rng([self.settings.seed or 0, used // len(pool)]).permutation(len(pool))
        self.state["pool_used"][key] = used + 1
        pair = (a, b) if (a, b) in probability else (b, a)
        return {**pool[order[used % len(pool)]], "selection_probability": probability[pair]}

    def _cut(self, judgments: list[dict], hits: int) -> list[list[dict]]:
        """``hits`` HITs; the copies of one item go to different HITs (a page keys answers by item)."""
        units: list[list[dict]] = [[] for _ in range(hits)]
        ids = [json.dumps(j.get("pair_id", j.get("item_id"))) for j in judgments]
        for k, index in enumerate(sorted(range(len(judgments)), key=ids.__getitem__)):
            units[k % hits].append(judgments[index])
        for unit in units:
            self.rng.shuffle(unit)
        return [unit for unit in units if unit]

    def _hit(self, judgments: list[dict], batch: int) -> dict:
        if isinstance(self.pairwise, ChatPairwise):
            return {SERVER_KEY: {**judgments[0], BATCH_KEY: batch}}
        public = {k: v for k, v in self.template.items() if k != SERVER_KEY}
        server = {k: v for k, v in self.template[SERVER_KEY].items() if k != "pairs"}
        return {**public, "shown": [self.pairwise.public(j) for j in judgments],
                SERVER_KEY: {**server, "pairs": judgments, BATCH_KEY: batch}}

    def _save(self) -> None:
        from parlai_dialeval.atomic import atomic_open

        self.state["ledger"] = self.ledger.to_json()
        with atomic_open(self.path) as handle:
            json.dump(self.state, handle)
