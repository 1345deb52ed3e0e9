"""Simulated pairwise studies whose judges come from groups that may rank the models differently, for the tests and
the benchmark of results by group (analysis/groups.py, analysis/raking.py).

Independent of the code under test on purpose (numpy, pandas and scipy only, no project import). Each group has its
own log-strengths of the models; each worker adds a taste of their own (N(0, ``taste_sd``) per model, the same on
every vote they give) and each item a difficulty per model (N(0, ``item_sd``)), so one worker's votes move together
and so do votes on one item. A vote is a uniformly drawn pair on a uniformly drawn item (each worker's (pair, item) draws distinct), its
sides in random order:
P(first wins) = expit((s_g + taste_w + item_i)[first] - (...)[second]).

``population_truth`` is what a Bradley-Terry fit to a target population's votes estimates: the strengths that best
fit (maximum expected likelihood, pairs drawn uniformly) the win probabilities of the population, a mixture of the
groups at the target shares, each probability averaged over tastes and items by Gauss-Hermite quadrature.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd


def _expit(x):
    return 1 / (1 + np.exp(-x))


def group_study(rng: np.random.Generator, strengths: dict[str, np.ndarray], workers: dict[str, int],
                votes_per_worker: int = 20, items: int = 40, taste_sd: float = 0.5, item_sd: float = 0.5,
                attribute: str = "group", question: str = "Which reply is better?") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(canonical comparison records, a participants table: worker_id and ``attribute``, each worker's group)."""
    first_group = next(iter(strengths.values()))
    n_models = len(first_group)
    names = np.array([f"m{i}" for i in range(n_models)], dtype=object)
    difficulty = rng.normal(0, item_sd, (items, n_models))
    pairs = np.array(list(itertools.combinations(range(n_models), 2)))
    rows, people = [], []
    for group, count in workers.items():
        for k in range(count):
            worker = f"{group}-{k}"
            people.append({"worker_id": worker, attribute: group})
            own = np.asarray(strengths[group], float) + rng.normal(0, taste_sd, n_models)
            # distinct (pair, item) draws: a worker judges a pair on an item once
            drawn = rng.choice(len(pairs) * items, votes_per_worker, replace=False)
            pair, item = pairs[drawn // items], drawn % items
            swap = rng.random(votes_per_worker) < 0.5
            a, b = np.where(swap, pair[:, 1], pair[:, 0]), np.where(swap, pair[:, 0], pair[:, 1])
            p = _expit(own[a] + difficulty[item, a] - own[b] - difficulty[item, b])
            won = rng.random(votes_per_worker) < p
            for i in range(votes_per_worker):
                rows.append({"item_id": f"item{item[i]}", "worker_id": worker, "model_a": names[a[i]],
                             "model_b": names[b[i]], "choice": "a" if won[i] else "b", "question": question})
    order = rng.permutation(len(rows))
    return pd.DataFrame(rows).iloc[order].reset_index(drop=True), pd.DataFrame(people)


def population_truth(strengths: dict[str, np.ndarray], shares: dict[str, float], taste_sd: float = 0.5,
                     item_sd: float = 0.5, nodes: int = 40) -> np.ndarray:
    """The log-strengths (mean 0) a Bradley-Terry fit converges to on votes of the population with these group
    ``shares`` (see the module docstring)."""
    from scipy.optimize import minimize

    x, w = np.polynomial.hermite_e.hermegauss(nodes)  # E f(Z), Z ~ N(0, 1): sum w f(x) / sqrt(2 pi)
    w = w / w.sum()
    spread = np.sqrt(2 * (taste_sd ** 2 + item_sd ** 2))  # the difference's noise: two models' taste and item draws
    n = len(next(iter(strengths.values())))
    pairs = list(itertools.combinations(range(n), 2))
    win = np.zeros(len(pairs))
    for group, share in shares.items():
        s = np.asarray(strengths[group], float)
        win += share * np.array([np.sum(w * _expit(s[i] - s[j] + spread * x)) for i, j in pairs])
    first, second = np.array(pairs).T

    def loss(free):
        s = np.concatenate([[0.0], free])
        d = s[first] - s[second]
        return -np.sum(win * np.log(_expit(d)) + (1 - win) * np.log(_expit(-d)))

    s = np.concatenate([[0.0], minimize(loss, np.zeros(n - 1), method="BFGS", options={"gtol": 1e-10}).x])
    return s - s.mean()
