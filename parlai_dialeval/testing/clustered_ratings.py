"""Simulated single-model studies (SM-Turn ticks, SM-Dialog Likert scores) whose ratings cluster by
conversation and by worker, for calibrating analyze_single_model.

Independent of the code under test on purpose (numpy, scipy and pandas only, no project import). Each
conversation draws its probability that a turn is ticked from a beta distribution with the model's
rate as mean and within-conversation ICC ``icc`` (icc = 1 / (a + b + 1)); its ``turns`` ticks are
Bernoulli draws of it. Each conversation's Likert score is round(mean + worker bias + noise) clipped to
1-5. A worker's bias is N(0, ``worker_sd``): on the logit of the conversation's tick probability and
added to the Likert latent score, so one worker's conversations move together. Workers are drawn at
random per conversation (every worker rates every model), or with ``worker_per_model`` each worker
rates only one model (worker and model confounded: the hard case).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats

CRITERION = "engaging"


def likert_mean(mean: float, sd: float) -> float:
    """The expected score round(mean + N(0, sd)) clipped to 1-5: sum over k of k P(score = k)."""
    edges = np.array([-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf])
    return float(np.sum(np.arange(1, 6) * np.diff(stats.norm.cdf(edges, mean, sd))))


def wta_rate(rate: float, icc: float, turns: int) -> float:
    """The chance that at least half of a conversation's ``turns`` ticks are set (no worker effect)."""
    least = int(np.ceil(turns / 2))
    if icc <= 0:
        return float(stats.binom.sf(least - 1, turns, rate))
    concentration = 1 / icc - 1
    return float(stats.betabinom.sf(least - 1, turns, rate * concentration, (1 - rate) * concentration))


def sm_study(rng: np.random.Generator, rates=(0.6, 0.6), likert_means=(3.5, 3.5), conversations: int = 60,
             turns: int = 4, icc: float = 0.2, likert_sd: float = 1.0, workers: int = 0, worker_sd: float = 0.0,
             worker_per_model: bool = False, worker_loads=None) -> pd.DataFrame:
    """Canonical rating records of one study: model m<i> has ``conversations`` conversations with tick
    rate ``rates[i]`` and Likert mean ``likert_means[i]``; ``turns`` bot turns each (turn_index 1, 3,
    ...). ``workers`` workers (0: one per conversation) with bias SD ``worker_sd``, each conversation's drawn in
    proportion to ``worker_loads`` where given (a few workers rating most conversations)."""
    models = len(rates)
    model = np.repeat(np.arange(models), conversations)
    n = model.size
    if workers <= 0:
        worker = np.arange(n)
    elif worker_per_model:  # each model its own workers
        per = max(1, workers // models)
        worker = model * per + rng.integers(0, per, n)
    else:
        worker = rng.integers(0, workers, n) if worker_loads is None else \
            rng.choice(workers, n, p=np.asarray(worker_loads, float) / np.sum(worker_loads))
    bias = rng.normal(0, worker_sd, worker.max() + 1)[worker] if worker_sd > 0 else np.zeros(n)
    rate = np.asarray(rates, float)[model]
    if icc > 0:
        concentration = 1 / icc - 1
        p = rng.beta(rate * concentration, (1 - rate) * concentration)
    else:
        p = rate
    p = special.expit(special.logit(np.clip(p, 1e-9, 1 - 1e-9)) + bias)
    ticks = rng.random((n, turns)) < p[:, None]
    latent = np.asarray(likert_means, float)[model] + bias + rng.normal(0, likert_sd, n)
    likert = np.clip(np.round(latent), 1, 5)
    conversation = np.char.add("c", np.arange(n).astype(str)).astype(object)
    common = {"conversation_id": conversation, "worker_id": np.char.add("w", worker.astype(str)).astype(object),
              "model": np.char.add("m", model.astype(str)).astype(object), "criterion": CRITERION}
    turn_rows = pd.DataFrame({key: np.repeat(value, turns) if isinstance(value, np.ndarray) else value
                              for key, value in common.items()})
    turn_rows = turn_rows.assign(scale="binary", value=ticks.ravel().astype(float),
                                 turn_index=np.tile(np.arange(turns) * 2 + 1, n).astype(float))
    dialog_rows = pd.DataFrame(common).assign(scale="likert", value=likert, turn_index=np.nan)
    return pd.concat([turn_rows, dialog_rows], ignore_index=True)
