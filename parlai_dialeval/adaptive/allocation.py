"""Which model pairs the next batch of judgments goes to (../shared/notes/adaptive_evaluation.md, sections
2 and 5). Every allocator keeps a floor of uniform exploration and reports each pair's selection
probability, so the design can be reweighted afterwards; certification stays valid whatever the rule,
because it uses each pair's direct head-to-head e-process.
"""
from __future__ import annotations

import itertools

import numpy as np

from parlai_dialeval.adaptive.ledger import Ledger

Pair = tuple[str, str]


def all_pairs(models: list[str]) -> list[Pair]:
    return list(itertools.combinations(models, 2))


def bt_strengths(ledger: Ledger) -> np.ndarray:
    """Bradley-Terry strengths of ``ledger.models`` from the evidence so far (lightly regularised, so
    early separation has a finite fit)."""
    from parlai_dialeval.analysis import bradley_terry

    return bradley_terry.ilsr(ledger.win_matrix(), alpha=0.01)


def current_ranking(ledger: Ledger) -> list[str]:
    """Models best first by a Bradley-Terry fit of the evidence so far."""
    return [ledger.models[i] for i in np.argsort(-bt_strengths(ledger), kind="stable")]


def unresolved_adjacent(ledger: Ledger, ranking: list[str] | None = None) -> list[Pair]:
    """Consecutive pairs of the current ranking that no certified claim settles yet."""
    ranking = ranking or current_ranking(ledger)
    return [(a, b) for a, b in zip(ranking, ranking[1:]) if not ledger.settled(a, b)]


class Uniform:
    """Every pair equally often: the pairs are asked in turn, batch after batch (the fixed design's rule)."""

    name = "uniform"

    def __init__(self):
        self.asked = 0

    def choose(self, ledger: Ledger, batch: int, rng: np.random.Generator) -> tuple[list[Pair], dict[Pair, float]]:
        pairs = all_pairs(ledger.models)
        chosen = [pairs[(self.asked + i) % len(pairs)] for i in range(batch)]
        self.asked += batch
        return chosen, {p: 1 / len(pairs) for p in pairs}


class GreedyAdjacent:
    """Most of each batch to the unresolved adjacent pairs of the current ranking, each judgment to the
    one whose direct z statistic would stay smallest after it (the least resolved contrast), and a share
    ``explore`` to uniformly drawn pairs (the note's best valid rule: 61% fewer judgments than uniform)."""

    name = "greedy_adjacent"

    def __init__(self, explore: float = 0.1):
        self.explore = explore

    def choose(self, ledger: Ledger, batch: int, rng: np.random.Generator) -> tuple[list[Pair], dict[Pair, float]]:
        pairs = all_pairs(ledger.models)
        canonical = {frozenset(p): p for p in pairs}
        targets = [canonical[frozenset(p)] for p in unresolved_adjacent(ledger)]
        explore = batch if not targets else int(round(self.explore * batch))
        chosen = [pairs[i] for i in rng.integers(0, len(pairs), explore)]
        projected = {p: ledger.record(*p)[0] for p in targets}
        counts = {p: projected[p].n for p in targets}
        for _ in range(batch - explore):
            def z(p):
                record = projected[p]
                return abs(record.mean - 0.5) * np.sqrt(counts[p] + 1) / 0.5
            best = min(targets, key=z)
            counts[best] += 1
            chosen.append(best)
        greedy = batch - explore
        share = {p: explore / batch / len(pairs) for p in pairs}
        for p in targets:
            share[p] += (counts[p] - projected[p].n) / batch if greedy else 0.0
        return chosen, share


ALLOCATORS = {"uniform": Uniform, "greedy_adjacent": GreedyAdjacent}
