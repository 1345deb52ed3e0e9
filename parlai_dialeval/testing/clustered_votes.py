"""Simulated pairwise studies whose votes cluster, for calibrating the statistics that must allow for it.

Independent of the code under test on purpose (numpy and pandas only, no project import): each item (an
A/B prompt, a PW-Turn conversation) draws its own probability that model A's answer is preferred from a
beta distribution with mean ``win_rate`` and intraclass correlation ``icc`` (the beta-binomial model:
icc = 1 / (a + b + 1)), then each of its votes is a tie with probability ``tie_rate`` and otherwise a win
for A with the item's probability. Votes of one item therefore correlate with ICC ``icc`` among decided
votes; votes of different items are independent, unless workers have a personal bias (``worker_sd``):
then each of the ``workers`` workers shifts the logit of the first model's chance on every vote they give
by their own N(0, worker_sd) draw (a taste for one model's style), so one worker's votes on different
items move together too.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd


def item_win_probabilities(rng: np.random.Generator, win_rate: np.ndarray, icc: float) -> np.ndarray:
    """One probability per item that the first model wins a decided vote on it (``win_rate`` where icc is 0)."""
    if icc <= 0:
        return np.asarray(win_rate, dtype=float)
    concentration = 1 / icc - 1
    return rng.beta(win_rate * concentration, (1 - win_rate) * concentration)


def clustered_study(rng: np.random.Generator, models: int = 2, items_per_pair: int = 200, votes_per_item=3,
                    icc: float = 0.3, tie_rate: float = 0.2, win_rates: dict | None = None,
                    per_turn: bool = False, workers: int = 50, worker_sd: float = 0.0,
                    worker_loads=None) -> pd.DataFrame:
    """Canonical comparison records of one study: every pair of ``models`` models (m0, m1, ...) judged on
    its own ``items_per_pair`` items, ``votes_per_item`` votes each (or an array: each item's own number), in a
    random collection order (file order; no submit times). ``win_rates`` maps (i, j) to model i's win rate over
    model j (0.5 where not given: equal models). Sides are shown in random order. ``per_turn``: an item is a PW-Turn
    conversation and its votes are turns (``turn_index`` set) by the conversation's one worker, with
    the same sides throughout. Otherwise every vote comes from one of ``workers`` workers drawn at
    random (in proportion to ``worker_loads`` where given: a few workers giving most votes), with bias SD
    ``worker_sd`` (above)."""
    win_rates = win_rates or {}
    pairs = list(itertools.combinations(range(models), 2))
    rate = np.array([win_rates.get((i, j), 1 - win_rates.get((j, i), 0.5)) for i, j in pairs])
    n_items = len(pairs) * items_per_pair
    item = np.arange(n_items)  # pair number * items_per_pair + item number
    p = np.repeat(item_win_probabilities(rng, np.repeat(rate, items_per_pair), icc), votes_per_item)
    vote_item = np.repeat(item, votes_per_item)
    first = np.array([f"m{i}" for i, _ in pairs], dtype=object)[vote_item // items_per_pair]
    second = np.array([f"m{j}" for _, j in pairs], dtype=object)[vote_item // items_per_pair]
    if worker_sd > 0 and not per_turn:
        worker = rng.integers(0, workers, size=p.size) if worker_loads is None else \
            rng.choice(workers, size=p.size, p=np.asarray(worker_loads, float) / np.sum(worker_loads))
        shift = rng.normal(0, worker_sd, workers)[worker]
        p = 1 / (1 + (1 / np.clip(p, 1e-12, 1 - 1e-12) - 1) * np.exp(-shift))  # logit(p) + shift
    tie = rng.random(p.size) < tie_rate
    first_wins = rng.random(p.size) < p
    first_is_a = (rng.random(n_items) < 0.5)[vote_item] if per_turn else rng.random(p.size) < 0.5
    item_label = np.char.add("item", item.astype(str)).astype(object)[vote_item]
    study = pd.DataFrame({"item_id": first + "-" + second + "/" + item_label,
                          "model_a": np.where(first_is_a, first, second),
                          "model_b": np.where(first_is_a, second, first),
                          "choice": np.where(tie, "tie", np.where(first_wins == first_is_a, "a", "b"))})
    if per_turn:
        study["turn_index"] = np.tile(np.arange(votes_per_item) * 2 + 1, n_items)
        study["worker_id"] = "w-" + item_label
    else:
        worker = worker if worker_sd > 0 else rng.integers(0, workers, size=p.size)
        study["worker_id"] = np.char.add("w", worker.astype(str)).astype(object)
    return study.iloc[rng.permutation(len(study))].reset_index(drop=True)
