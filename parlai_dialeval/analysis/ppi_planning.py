"""Planning with an LLM judge: how many items people must judge when a judge of a given agreement
answers a larger pool, for the precision of a human-only study (``dialeval plan --judge-agreement``).

Model (the same as benchmarks/bench_ppi.py's judges): each item has a true share of people preferring
model A, Beta-distributed with mean ``win_rate`` and within-item correlation ``icc``; ``votes_per_item``
people vote on it; the judge gives the majority of those votes with probability ``agreement`` and the
other side otherwise (a coin where the votes tie). With rho the correlation of an item's mean vote and
the judge's answer, PPI++ at its best weight has variance (1 - rho^2 N / (N + G)) times the human-only
one for G human-judged items and N judge-only items (Angelopoulos, Duchi and Zrnic 2023, section 2 with
the items as units), so the items needed solve G = G_human (1 - rho^2 N / (N + G)).
"""
from __future__ import annotations

import numpy as np


def judge_correlation(agreement: float, win_rate: float, votes_per_item: int, icc: float, items: int = 200_000,
                      seed: int = 0) -> float:
    """rho: correlation of an item's mean vote with the judge's answer, by simulation of ``items`` items."""
    rng = np.random.default_rng(seed)
    if icc > 0:
        a, b = win_rate * (1 - icc) / icc, (1 - win_rate) * (1 - icc) / icc
        share = rng.beta(a, b, items)
    else:
        share = np.full(items, win_rate)
    mean_vote = (rng.random((items, votes_per_item)) < share[:, None]).mean(axis=1)
    majority = np.where(mean_vote > 0.5, 1.0, np.where(mean_vote < 0.5, 0.0, (rng.random(items) < 0.5) * 1.0))
    judge = np.where(rng.random(items) < agreement, majority, 1 - majority)
    if mean_vote.std() == 0 or judge.std() == 0:
        return 0.0
    return float(np.corrcoef(mean_vote, judge)[0, 1])


def human_share(rho: float, pool_factor: float, human_items: float) -> float:
    """Items people must judge with the judge, as a share of a human-only study of ``human_items`` items,
    when the judge alone answers ``pool_factor`` times ``human_items`` more items."""
    pool = pool_factor * human_items
    items = float(human_items)
    for _ in range(200):  # the map is a contraction: G -> G_h (1 - rho^2 N / (N + G))
        items = human_items * (1 - rho ** 2 * pool / (pool + items)) if pool > 0 else human_items
    return items / human_items
