"""The arena study's live state, shared by every participant's world (thread-safe): which pair the next
battle compares (parlai_dialeval.adaptive.pair_sampling), the running head-to-head evidence of every pair
(adaptive.ledger: one outcome per battle, the mean of its counted turn votes, as `dialeval certify` counts
a battle), and whether the ranking the study asks about is certified. A relaunch rebuilds it from what the
task's export reads (``restore``), so nothing is kept that the export does not hold."""
from __future__ import annotations

import threading

import numpy as np

from parlai_dialeval.adaptive import pair_sampling
from parlai_dialeval.adaptive.ledger import Ledger


class ArenaSampler:
    def __init__(self, models: list[str], kind: str = "uniform", target: str = "top", explore: float = 0.2,
                 alpha: float = 0.05, seed: int | None = None):
        if kind not in pair_sampling.KINDS:
            raise ValueError(f"arena.sampler={kind!r}: expected one of {', '.join(pair_sampling.KINDS)}")
        if target not in pair_sampling.TARGETS:
            raise ValueError(f"arena.target={target!r}: expected one of {', '.join(pair_sampling.TARGETS)}")
        if len(models) < 2:
            raise ValueError(f"the arena needs at least two models, got {models}")
        self.kind, self.target, self.explore = kind, target, explore
        self.ledger = Ledger(sorted(models), alpha)
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self.battles_counted = 0
        self._ranking: tuple[int, list[str]] | None = None  # (battles counted, the ranking then): a fit per change

    def probabilities(self) -> dict[tuple[str, str], float]:
        with self._lock:
            return self._probabilities()

    def _probabilities(self):
        if self.kind == "uniform":
            return pair_sampling.uniform(self.ledger.models)
        return pair_sampling.informative(self.ledger, self.target, self.explore, self._current_ranking())

    def _current_ranking(self) -> list[str]:
        from parlai_dialeval.adaptive.allocation import current_ranking

        if self._ranking is None or self._ranking[0] != self.battles_counted:
            self._ranking = (self.battles_counted, current_ranking(self.ledger))
        return self._ranking[1]

    def draw(self, exclude: frozenset = frozenset()) -> tuple[tuple[str, str], float, float]:
        """(the pair, its probability, the battle's weight); ``exclude``: models not to draw (a failing
        endpoint), their pairs' probability spread over the others."""
        with self._lock:
            probability = self._probabilities()
            n_pairs = len(probability)
            usable = {p: q for p, q in probability.items() if not set(p) & exclude} or probability
            pair, p = pair_sampling.draw(usable, self._rng)
            sides = list(pair)
            self._rng.shuffle(sides)  # which model is "Model A": random, independent of the pair's draw
        return (sides[0], sides[1]), p, pair_sampling.inverse_propensity(p, n_pairs)

    def add_battle(self, model_a: str, model_b: str, outcome_a: float, battle: str) -> None:
        """A finished battle's outcome for ``model_a`` (the mean of its counted votes: 1, 1/2, 0)."""
        with self._lock:
            if self.ledger.add(model_a, model_b, outcome_a, battle):
                self.battles_counted += 1

    def certified(self) -> bool:
        with self._lock:
            return self.battles_counted > 0 and pair_sampling.certified(self.ledger, self.target,
                                                                        self._current_ranking())

    def ranking(self) -> list[str]:
        with self._lock:
            return list(self._current_ranking())

    def snapshot(self) -> dict:
        """The evidence as the dashboard's adaptive view reads it (a consistent copy)."""
        with self._lock:
            return {"ledger": self.ledger.to_json(), "ranking": list(self._current_ranking()),
                    "judgments": self.battles_counted}

    def describe(self) -> dict:
        return {"kind": self.kind, "target": self.target, "explore": self.explore if self.kind != "uniform" else None,
                "alpha": self.ledger.alpha, "threshold": self.ledger.threshold,
                "weight": "1 / (pairs x the pair's probability): 1 under uniform sampling"}
