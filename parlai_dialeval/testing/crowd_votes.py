"""A simulated crowd of pairwise voters, honest or not, for checking the voter tests (adaptive/voter_flags.py).

Independent of the code under test on purpose (numpy and pandas only, no project import). Every vote
picks a pair of models at random, one of the pair's ``items_per_pair`` items and a worker; the first
model wins with probability logistic(strength difference + the item's effect (N(0, item_sd), shared by
every vote on the item: the clustering of real data) + the worker's taste for each model (N(0,
worker_sd) per worker and model) + position bias toward side A (``position_bias`` on the logit, plus
N(0, position_sd) per worker)), a tie with probability ``tie_rate``. Honest answers take
lognormal(median ``median_seconds``, sd 0.4) seconds. Dishonest workers, added on top of the honest
votes: ``riggers`` vote only on pairs with model ``target`` and always for it, ``rigging_share`` of all
votes between them (Min et al., ICML 2025); ``side_workers`` always pick A; ``random_workers`` pick A or B
at random, whatever the models; ``fast_workers`` vote honestly in 0.3-1 s. Each response text is ``words`` words long.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def crowd_study(rng: np.random.Generator, strengths=(0.0, 0.3, 0.6, 0.9), votes: int = 3000, workers: int = 40,
                items_per_pair: int = 50, item_sd: float = 1.0, worker_sd: float = 0.3, position_bias: float = 0.4,
                position_sd: float = 0.3, tie_rate: float = 0.1, rigging_share: float = 0.0, target: int = 0,
                rigger_votes: int = 60, side_workers: int = 0, random_workers: int = 0, fast_workers: int = 0,
                dishonest_votes: int = 60, median_seconds: float = 8.0, words: int = 15) -> pd.DataFrame:
    """Canonical comparison records (item_id, worker_id, model_a, model_b, choice, duration, response_a,
    response_b, plus ``honest``: False for the dishonest workers' votes) in a random collection order."""
    strengths = np.asarray(strengths, dtype=float)
    k = len(strengths)
    taste = rng.normal(0, worker_sd, (workers, k))
    side = rng.normal(position_bias, position_sd, workers)
    item_effect = rng.normal(0, item_sd, (k, k, items_per_pair))
    frames = [_honest(rng, votes, strengths, taste, side, item_effect, tie_rate, "w", median_seconds)]
    if fast_workers:
        fast = _honest(rng, fast_workers * dishonest_votes, strengths, taste[:fast_workers], side[:fast_workers],
                       item_effect, tie_rate, "fast", median_seconds)
        fast["duration"] = rng.uniform(0.3, 1.0, len(fast))
        frames.append(fast.assign(honest=False))
    if side_workers:
        always_a = _honest(rng, side_workers * dishonest_votes, strengths, taste[:side_workers],
                           side[:side_workers], item_effect, tie_rate, "side", median_seconds)
        frames.append(always_a.assign(choice="a", honest=False))
    if random_workers:
        clicks = _honest(rng, random_workers * dishonest_votes, strengths, taste[:random_workers],
                         side[:random_workers], item_effect, tie_rate, "random", median_seconds)
        frames.append(clicks.assign(choice=rng.choice(["a", "b"], len(clicks)), honest=False))
    if rigging_share > 0:
        n_rig = int(round(rigging_share * votes / (1 - rigging_share)))
        frames.append(_rigged(rng, n_rig, k, target, max(1, int(np.ceil(n_rig / rigger_votes))), items_per_pair,
                              median_seconds))
    study = pd.concat(frames, ignore_index=True)
    text = " ".join(["word"] * words)
    study["response_a"], study["response_b"] = text, text
    return study.iloc[rng.permutation(len(study))].reset_index(drop=True)


def _pairs(rng, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    return first, second


def _frame(first, second, first_is_a, first_wins, tie, item, worker_label, seconds) -> pd.DataFrame:
    names = np.array([f"m{i}" for i in range(max(first.max(), second.max()) + 1)], dtype=object)
    low, high = np.minimum(first, second), np.maximum(first, second)
    return pd.DataFrame({
        "item_id": names[low] + "-" + names[high] + "/item" + item.astype(str),
        "worker_id": worker_label,
        "model_a": np.where(first_is_a, names[first], names[second]),
        "model_b": np.where(first_is_a, names[second], names[first]),
        "choice": np.where(tie, "tie", np.where(first_wins == first_is_a, "a", "b")),
        "duration": seconds, "honest": True})


def _honest(rng, n, strengths, taste, side, item_effect, tie_rate, prefix, median_seconds) -> pd.DataFrame:
    k, workers, items = len(strengths), len(side), item_effect.shape[2]
    first, second = _pairs(rng, n, k)
    worker = rng.integers(0, workers, n)
    item = rng.integers(0, items, n)
    low, high = np.minimum(first, second), np.maximum(first, second)
    effect = np.where(first == low, 1, -1) * item_effect[low, high, item]  # the item favours one model
    first_is_a = rng.random(n) < 0.5
    logit = (strengths[first] - strengths[second] + effect + taste[worker, first] - taste[worker, second]
             + np.where(first_is_a, 1, -1) * side[worker])
    first_wins = rng.random(n) < 1 / (1 + np.exp(-logit))
    seconds = np.exp(rng.normal(np.log(median_seconds), 0.4, n))
    label = np.char.add(prefix, worker.astype(str)).astype(object)
    return _frame(first, second, first_is_a, first_wins, rng.random(n) < tie_rate, item, label, seconds)


def _rigged(rng, n, k, target, riggers, items, median_seconds) -> pd.DataFrame:
    opponent = (target + rng.integers(1, k, n)) % k
    first = np.full(n, target)
    first_is_a = rng.random(n) < 0.5
    label = np.char.add("rig", rng.integers(0, riggers, n).astype(str)).astype(object)
    seconds = np.exp(rng.normal(np.log(median_seconds), 0.4, n))
    frame = _frame(first, opponent, first_is_a, np.ones(n, bool), np.zeros(n, bool), rng.integers(0, items, n),
                   label, seconds)
    return frame.assign(honest=False)
