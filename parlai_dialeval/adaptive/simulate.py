"""Simulated studies to compare allocation rules and check stopping rules: Bradley-Terry models judged
by workers with ties, looked at after every batch (../shared/notes/adaptive_evaluation.md, section 5)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parlai_dialeval.adaptive.allocation import bt_strengths, current_ranking
from parlai_dialeval.adaptive.ledger import Ledger


def neighbour_strengths(n_models: int, rng: np.random.Generator, low: float = 0.55, high: float = 0.65) -> np.ndarray:
    """Bradley-Terry strengths, best first, whose neighbours' win rates are drawn from U(low, high)."""
    rates = rng.uniform(low, high, n_models - 1)
    return np.concatenate([[0.0], -np.cumsum(np.log(rates / (1 - rates)))])


def normal_mixture_crossed(z_squared: float, precision: float, level: float, rho: float) -> bool:
    """The normal-mixture (mSPRT) boundary z^2 >= (1 + rho/V) log((V + rho) / (rho level^2)), V the
    estimate's precision 1/SE^2 (Johari et al. 2017; the note's ACS)."""
    return z_squared >= (1 + rho / precision) * np.log((precision + rho) / (rho * level ** 2))


def certified_winner(ledger: Ledger, a: str, b: str) -> str | None:
    """The betting e-process's verdict on a and b (``dialeval certify``'s rule): the winner, or None."""
    return a if ledger.beats(a, b) else b if ledger.beats(b, a) else None


def bt_contrast_winner(ledger: Ledger, a: str, b: str, rho: float = 25.0) -> str | None:
    """The note's "uniform + ACS" rule: the Bradley-Terry contrast of a and b (Fisher standard error, all
    pairs' evidence pooled) against the normal-mixture boundary at alpha / (pairs); the stronger model
    once crossed, else None. Valid only when the allocation does not depend on the data (uniform): the
    baseline of the comparison."""
    index = {m: i for i, m in enumerate(ledger.models)}
    strengths = bt_strengths(ledger)
    info = np.zeros((len(index), len(index)))
    for pair in ledger.pairs.values():
        i, j = index[pair.first], index[pair.second]
        p = 1 / (1 + np.exp(strengths[j] - strengths[i]))
        w = pair.n * p * (1 - p)
        info[[i, j], [i, j]] += w
        info[i, j] -= w
        info[j, i] -= w
    contrast = np.zeros(len(index))
    contrast[index[a]], contrast[index[b]] = 1, -1
    variance = contrast @ np.linalg.pinv(info) @ contrast
    if not variance > 0:
        return None
    level = ledger.alpha / (len(index) * (len(index) - 1) / 2)
    diff = strengths[index[a]] - strengths[index[b]]
    if not normal_mixture_crossed(diff ** 2 / variance, 1 / variance, level, rho):
        return None
    return a if diff > 0 else b


@dataclass
class StudyResult:
    judgments: int
    stopped: bool
    wrong_claims: int
    any_claim: bool


def run_study(allocator, strengths: np.ndarray, rng: np.random.Generator, alpha: float = 0.05, batch: int = 28,
              burn_in: int = 2, cap: int = 40000, tie_rate: float = 0.0, decide=certified_winner) -> StudyResult:
    """One study: ``burn_in`` judgments per pair, then batches chosen by ``allocator`` until every
    adjacent pair of the current ranking is certified or ``cap`` judgments are spent. A decisive vote
    goes to a with Bradley-Terry probability; a share ``tie_rate`` of votes are ties. ``decide(ledger, a, b)``
    is the rule's verdict on a pair: its winner, or None while unsettled."""
    models = [f"m{i}" for i in range(len(strengths))]
    strength = dict(zip(models, strengths))
    ledger = Ledger(models, alpha)

    def judge(a, b):
        if rng.random() < tie_rate:
            return 0.5
        return float(rng.random() < 1 / (1 + np.exp(strength[b] - strength[a])))

    for a_index, a in enumerate(models):
        for b in models[a_index + 1:]:
            for _ in range(burn_in):
                ledger.add(a, b, judge(a, b))
    used = burn_in * len(models) * (len(models) - 1) // 2
    stopped = False
    while used < cap:
        ranking = current_ranking(ledger)
        if all(decide(ledger, a, b) is not None for a, b in zip(ranking, ranking[1:])):
            stopped = True
            break
        chosen, _ = allocator.choose(ledger, batch, rng)
        for a, b in chosen:
            ledger.add(a, b, judge(a, b))
        used += len(chosen)
    winners = [(decide(ledger, a, b), a, b) for i, a in enumerate(models) for b in models[i + 1:]]
    claims = [(w, b if w == a else a) for w, a, b in winners if w is not None]
    wrong = sum(strength[winner] < strength[loser] for winner, loser in claims)
    return StudyResult(used, stopped, wrong, bool(claims))
