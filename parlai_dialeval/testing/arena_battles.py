"""Simulated arena battles, no page: models of known strength meet as the arena's pair sampler draws them, for
checking the sampler and the weighted Bradley-Terry estimate it is meant for (tests/test_arena_sampler.py,
benchmarks/bench_arena_sampler.py).

``Truth`` is the world: each pair's chance of each outcome (a Bradley-Terry strength difference, plus an optional
shift per pair for a world that Bradley-Terry does not describe exactly), and the strengths a uniform draw of pairs
would estimate in the long run (``uniform_estimand``: the root of the expected score equations, by scipy). It
imports numpy and scipy only, no code of the project's estimators. ``simulate`` drives the arena's sampler
(crowdsourcing/arena/sampler.py) with it, ``in_flight`` battles drawn at a time as concurrent participants are.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Truth:
    strengths: list[float]  # log-odds
    tie_rate: float = 0.1
    shifts: dict = field(default_factory=dict)  # (i, j) with i < j -> added to i's log-odds against j

    @property
    def models(self) -> list[str]:
        return [f"model{k}" for k in range(len(self.strengths))]

    def win_probability(self, i: int, j: int) -> float:
        """Chance that model i beats model j in a decided battle."""
        shift = self.shifts.get((i, j), 0.0) - self.shifts.get((j, i), 0.0)
        return 1.0 / (1.0 + np.exp(-(self.strengths[i] - self.strengths[j] + shift)))

    def outcome(self, i: int, j: int, rng: np.random.Generator) -> float:
        """1 i wins, 0 j wins, 1/2 a tie."""
        if rng.random() < self.tie_rate:
            return 0.5
        return float(rng.random() < self.win_probability(i, j))

    def uniform_estimand(self) -> np.ndarray:
        """The Bradley-Terry log-strengths (mean 0) a uniform draw of pairs converges to: they solve
        sum over pairs of (expected outcome - expit(s_i - s_j)) x (e_i - e_j) = 0."""
        from scipy.optimize import minimize

        k = len(self.strengths)
        expected = np.array([[self.tie_rate / 2 + (1 - self.tie_rate) * self.win_probability(i, j) if i != j else 0
                              for j in range(k)] for i in range(k)])
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]

        def loss(s):
            return -sum(expected[i, j] * np.log(1 / (1 + np.exp(s[j] - s[i])))
                        + expected[j, i] * np.log(1 / (1 + np.exp(s[i] - s[j]))) for i, j in pairs)

        fitted = minimize(loss, np.zeros(k), method="BFGS", options={"gtol": 1e-10}).x
        return fitted - fitted.mean()


def simulate(truth: Truth, kind: str, battles: int, seed: int, in_flight: int = 10, target: str = "top",
             explore: float = 0.2, alpha: float = 0.05, stop_when_certified: bool = False) -> dict:
    """One study: ``battles`` battles (fewer when ``stop_when_certified`` and the target ranking is certified
    first), drawn ``in_flight`` at a time by the arena's sampler, each with its probability and weight.
    Returns arrays ``a``, ``b`` (model indices), ``outcome`` (for a), ``probability``, ``weight``, and
    ``certified_at`` (battles when the target was first certified, None if never)."""
    from parlai_dialeval.adaptive import pair_sampling
    from parlai_dialeval.crowdsourcing.arena.sampler import ArenaSampler

    rng = np.random.default_rng(seed)
    sampler = ArenaSampler(truth.models, kind=kind, target=target, explore=explore, alpha=alpha, seed=seed)
    index = {name: k for k, name in enumerate(truth.models)}
    rows, certified_at = [], None
    while len(rows) < battles:
        probability = sampler.probabilities()
        drawn = [pair_sampling.draw(probability, rng) for _ in range(min(in_flight, battles - len(rows)))]
        for (first, second), p in drawn:
            i, j = index[first], index[second]
            outcome = truth.outcome(i, j, rng)
            rows.append((i, j, outcome, p, pair_sampling.inverse_propensity(p, len(probability))))
            sampler.add_battle(first, second, outcome, f"battle{len(rows)}")
        if certified_at is None and sampler.certified():
            certified_at = len(rows)
            if stop_when_certified:
                break
    a, b, outcome, p, weight = (np.array(column) for column in zip(*rows))
    return {"a": a.astype(int), "b": b.astype(int), "outcome": outcome, "probability": p, "weight": weight,
            "certified_at": certified_at}
