"""The batch loop of one adaptive study (platform/adaptive/config.py says how a run goes): the generator
Mephisto's launcher runs, what a finished HIT counts as evidence, and the state file."""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import numpy as np

from parlai_dialeval.adaptive.allocation import ALLOCATORS, all_pairs, current_ranking
from parlai_dialeval.adaptive.ledger import Ledger
from parlai_dialeval.analysis.collection_order import record_outcomes
from parlai_dialeval.crowdsourcing.platform.adaptive.config import ChatPairwise, Settings
from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY
from parlai_dialeval.errors import DialevalError

BATCH_KEY = "adaptive_batch"  # in a HIT's server-side data: the batch it belongs to
POLL_SECONDS = 2.0  # how often a waiting batch looks at Mephisto's database


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


# what the voter tests read of a vote, kept in the state file (not the texts: too_fast uses its 1 s floor here)
VOTER_FIELDS = ("worker_id", "model_a", "model_b", "choice", "item_id", "question", "turn_index", "automatic",
                "onboarding", "duration", "assignment_id", "justification", "provenance", "check")


def drop_flagged(records: list[dict], seen: list[dict], alpha: float) -> tuple[list[dict], list[str], int]:
    """(``records`` without the votes of workers the evidence table flags, the flagged workers, votes left out):
    the one rule of `--exclude-flagged` (parlai_dialeval.analysis.evidence: the voter tests at ``alpha``, failed
    attention checks, two other signals together) on every vote read so far, ``seen`` (kept in the state file,
    extended here with these records' comparisons). A worker flagged late keeps the votes already bet on: the
    ledger's bets are never taken back; allocation and later bets ignore them."""
    import pandas as pd

    from parlai_dialeval.adaptive.voter_flags import VoterSettings, flag_voters
    from parlai_dialeval.analysis.evidence import evidence_table

    seen.extend({key: r.get(key) for key in VOTER_FIELDS} for r in records if r.get("type") == "comparison")
    frame = pd.DataFrame(seen, columns=list(VOTER_FIELDS))
    if not len(frame):
        return records, [], 0
    checked = frame["check"].notna()
    votes, answers = frame[~checked], frame[checked]
    voters = flag_voters(votes, VoterSettings(alpha=alpha)) if len(votes) else None
    studies = [r for r in records if r.get("type") == "study"]
    empty = pd.DataFrame(columns=["worker_id"])
    flagged = evidence_table(empty, empty, votes, answers, studies, voters).flagged
    out = set(flagged)
    kept = [r for r in records if not (r.get("type") == "comparison" and r.get("worker_id") in out)]
    return kept, flagged, len(records) - len(kept)


def outcomes(records: list[dict]) -> list[tuple[str, str, str, float, str]]:
    """(worker, first model, second model, outcome for the first, item key) per cluster of votes in
    canonical records (one item's votes, e.g. a PW-Turn conversation's turns: their mean), in collection
    order; automatic ties and onboarding left out. The rule is parlai_dialeval.analysis.cluster_robust's."""
    return record_outcomes(records)


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
        self.judge = self._judge(state) if settings.judge else None
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

    def _judge(self, state: dict):
        """The judge's pools (platform/adaptive/judge.py); the ledger becomes one certified by the PPI
        e-processes, resumed from the state."""
        from parlai_dialeval.crowdsourcing.platform.adaptive.judge import JudgedLedger, JudgePools
        from parlai_dialeval.judge.output import load_judge

        if isinstance(self.pairwise, ChatPairwise):
            raise DialevalError(f"adaptive_judge: {self.spec.name} makes a new conversation per HIT, so there is no "
                                "pool of items for a judge to answer beforehand; adaptive_judge is for static tasks")
        try:
            pools = JudgePools(self.pools, load_judge(self.settings.judge, "comparisons"), self.settings.judge_floor,
                               self.pairwise.compared, self.pairwise.judge_fields)
        except ValueError as error:
            raise DialevalError(f"adaptive_judge={self.settings.judge}: {error}") from None
        if pools.missing:
            self.say(f"adaptive_judge: {pools.missing} design item(s) have no answer of the judge and are not drawn")
        if pools.mismatched:
            self.say(f"adaptive_judge: {pools.mismatched} design item(s) compare other things than the judge's answer "
                     "under the same item id (did the conversations or items file change after `dialeval judge "
                     "--design`?): they are not drawn")
        self.ledger = JudgedLedger.from_json(state["ledger"]).attach(pools, state.get("ppi", {}))
        return pools

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
        from parlai_dialeval.compat.mephisto_threads import require_safe_launcher

        for run in launched.operator.get_running_task_runs().values():
            require_safe_launcher(run.task_launcher)
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
        records = report.records if report else []
        if self.settings.exclude_flagged:
            records, self.state["flagged_workers"], left_out = drop_flagged(
                records, self.state.setdefault("voter_votes", []), self.settings.alpha)
            self.state["flagged_votes_left_out"] = self.state.get("flagged_votes_left_out", 0) + left_out
        kept, over = within_cap(outcomes(records), self.state["worker_judgments"], self.settings.worker_cap)
        # the item key: an item read again in a later batch is not bet twice (ledger.py says why)
        bet = sum(self.ledger.add(first, second, outcome, item) for _, first, second, outcome, item in kept)
        if self.judge is not None:  # each human judgment is one draw of its pair's PPI e-process
            votes = [r for r in records if r.get("type") == "comparison"
                     and not r.get("onboarding") and not r.get("automatic")]
            draws, _ = within_cap([(r["worker_id"], r) for r in votes],
                                  self.state.setdefault("ppi_worker_judgments", {}), self.settings.worker_cap)
            self.state["ppi_draws"] = self.state.get("ppi_draws", 0) + sum(self.ledger.add_draw(r) for _, r in draws)
        self.state["judgments"] += bet
        self.state["repeated_items"] = self.state.get("repeated_items", 0) + len(kept) - bet
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
            "selection_probability": {_key(*p): probability[p] for p in all_pairs(self.ledger.models)},
            **({"items": self._drawn_items(judgments)} if self.judge is not None else {})})
        self.state["hits_emitted"] += len(units)
        self.state["rng"] = self.rng.bit_generator.state
        self._save()
        self.say(f"Adaptive batch {batch}: {len(units)} HIT(s), {len(judgments)} judgments "
                 f"({self.state['hits_emitted']} of at most {self.budget} HITs).")
        return [self._hit(unit, batch) for unit in units]

    def _draw(self, a: str, b: str, probability: dict) -> dict:
        """The pair's next item of the fixed design (in a seeded order; reused once all were shown), or
        with a judge, drawn from its pool with its item probability (recorded in the judgment)."""
        key = _key(a, b)
        pool = self.pools[key]
        pair = (a, b) if (a, b) in probability else (b, a)
        if self.judge is not None and key in self.judge.p:
            index, draw = self.judge.draw(key, self.rng)
            return {**pool[index], "selection_probability": probability[pair], **draw}
        used = self.state["pool_used"].get(key, 0)
        order = np.random.default_rng([self.settings.seed or 0, used // len(pool)]).permutation(len(pool))
        self.state["pool_used"][key] = used + 1
        return {**pool[order[used % len(pool)]], "selection_probability": probability[pair]}

    def _drawn_items(self, judgments: list[dict]) -> list[list]:
        """[pair, item, its draw probability] of each judgment drawn from the judge's pool."""
        from parlai_dialeval.crowdsourcing.platform.adaptive.judge import item_id

        return [[_key(*self.pairwise.models_of(j)), item_id(j), j["draw_probability"]]
                for j in judgments if "draw_probability" in j]

    def _cut(self, judgments: list[dict], hits: int) -> list[list[dict]]:
        """``hits`` HITs; the copies of one item go to different HITs (a page keys answers by item), so a
        judge's draws (with replacement) that repeat an item more often get as many HITs as copies."""
        ids = [json.dumps(j.get("pair_id", j.get("item_id"))) for j in judgments]
        hits = max(hits, max(Counter(ids).values(), default=1))
        units: list[list[dict]] = [[] for _ in range(hits)]
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
        if self.judge is not None:
            self.state["ppi"] = self.ledger.processes_json()
        with atomic_open(self.path) as handle:
            json.dump(self.state, handle)
