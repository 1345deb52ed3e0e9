"""Which two models the arena's next battle compares, with the probability of every pair.

``uniform``: every pair alike (FastChat's arena with equal sampling weights). ``informative``: a share
``explore`` spread over all pairs, the rest to the one pair whose order matters to the ranking asked about
and is least certain: among the pairs the target still needs (``top``: the current leader of the live
Bradley-Terry fit against each model it is not yet certified to beat; ``full``: the adjacent pairs of the
current ranking not yet settled), the one whose direct head-to-head z statistic would stay smallest after one
more battle (allocation.GreedyAdjacent's rule). Every pair keeps a probability of at least explore / pairs, so
the arena can weigh each battle by the inverse of its pair's probability (``weight``) and its weighted
Bradley-Terry fit estimates what a uniform draw of pairs would (the weighted log-likelihood's expectation is
the uniform design's). Certification stays valid whatever the draw: it bets on each pair's own battles.
"""
from __future__ import annotations

import numpy as np

from parlai_dialeval.adaptive.allocation import all_pairs, current_ranking, unresolved_adjacent
from parlai_dialeval.adaptive.ledger import Ledger

Pair = tuple[str, str]
KINDS = ("uniform", "informative")
TARGETS = ("top", "full")


def uniform(models: list[str]) -> dict[Pair, float]:
    pairs = all_pairs(models)
    return {pair: 1 / len(pairs) for pair in pairs}


def target_pairs(ledger: Ledger, target: str, ranking: list[str] | None = None) -> list[Pair]:
    """The pairs the asked ranking still needs settled (none: it is certified); ``ranking``: the current one
    (``allocation.current_ranking``), when the caller has it."""
    ranking = ranking or current_ranking(ledger)
    if target == "full":
        return unresolved_adjacent(ledger, ranking)
    leader = ranking[0]
    return [(leader, m) for m in ledger.models if m != leader and not ledger.beats(leader, m)]


def certified(ledger: Ledger, target: str, ranking: list[str] | None = None) -> bool:
    """Whether the asked ranking is certified: ``top``, the leader beats every other model head to head at the
    ledger's threshold; ``full``, every adjacent pair of the current ranking is settled that way."""
    ranking = ranking or current_ranking(ledger)
    if target == "full":
        return all(ledger.beats(a, b) for a, b in zip(ranking, ranking[1:]))
    return not target_pairs(ledger, "top", ranking)


def _z_after_one_more(ledger: Ledger, pair: Pair) -> float:
    record = ledger.record(*pair)[0]
    return abs(record.mean - 0.5) * np.sqrt(record.n + 1) / 0.5


def informative(ledger: Ledger, target: str = "top", explore: float = 0.2,
                ranking: list[str] | None = None) -> dict[Pair, float]:
    """Each pair's probability (see the module docstring); uniform once nothing is left to settle."""
    if not 0 < explore <= 1:
        raise ValueError(f"explore={explore}: expected a share in (0, 1] (every pair needs a chance)")
    pairs = all_pairs(ledger.models)
    canonical = {frozenset(p): p for p in pairs}
    targets = [canonical[frozenset(p)] for p in target_pairs(ledger, target, ranking)]
    if not targets:
        return uniform(ledger.models)
    probability = {pair: explore / len(pairs) for pair in pairs}
    probability[min(targets, key=lambda p: _z_after_one_more(ledger, p))] += 1 - explore
    return probability


def inverse_propensity(probability: float, n_pairs: int) -> float:
    """A battle's weight: 1 under uniform sampling, 1 / (pairs x probability) in general."""
    return 1.0 / (n_pairs * probability)


def draw(probability: dict[Pair, float], rng: np.random.Generator) -> tuple[Pair, float]:
    """One pair drawn with its probability."""
    pairs = list(probability)
    p = np.array([probability[pair] for pair in pairs])
    index = int(rng.choice(len(pairs), p=p / p.sum()))
    return pairs[index], float(p[index] / p.sum())
