"""The taste an honest worker may have for a model, estimated from the crowd, and the crowd tests that allow it
(issue 50 item 7: a fixed margin of odds x e flagged 43 of 300 honest workers whose tastes had SD 1 logit).

Honest workers (the null): a worker's vote on a pair goes to a model with probability expit(mu + d), mu the
log-odds at which honest tastes around it average to c, the other workers' share of votes for that model on the
question, unit and pair (``center``), and d the worker's taste there: d = t + b, t shared by the worker's votes
of one test group (their votes on one model's pairs, for ``rigging``), b per pair, each N(0, v / 2), so a pair's
taste has variance v. Tastes differ between people, and the crowd says by how much: ``taste_variance`` estimates
v from every worker's votes on each pair (d integrated out), with the workers far from everyone (riggers, random
clickers) a component of their own, and takes the upper end of its 99% interval over workers resampled (a
random MAX_WORKERS of them where more have several votes on a pair).

The e-value (``taste_e_values``), per group of a worker's votes in collection order: the likelihood of the votes
under alternatives that vote far beyond any taste (the crowd's odds times e^2 ... e^8; a share of 0.95 or 0.99
whatever the crowd; any constant share, Laplace's rule), averaged, over their marginal likelihood under the null
(t and b integrated out by Gauss-Hermite quadrature, b's factor per pair updated as its votes come). Both are
likelihoods of the whole sequence, so their ratio is a martingale under the null as votes come in, and its
running maximum reaches 1/a with probability at most a (Ville): the guarantee is over honest workers as the
crowd's spread of tastes describes them. Riggers voting for a model whatever the opponent are found where the
crowd's tastes are narrow enough to tell them from a strong honest liking (benchmarks/README.md, "Voter tests
and fragility").
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit, log_expit, logit

from parlai_dialeval.adaptive.sequential import LOG_CAP
from parlai_dialeval.cores import usable_cores

NODES, WEIGHTS = hermegauss(24)  # N(0, 1): nodes x_q, weights w_q (summing to sqrt(2 pi))
SHARED, _SHARED_WEIGHTS = hermegauss(10)  # the two tastes of the null's nested integral, 10 x 10 nodes
SHARED_LOG = np.log(_SHARED_WEIGHTS / _SHARED_WEIGHTS.sum())
NORMAL = WEIGHTS / WEIGHTS.sum()  # the quadrature's probabilities
LOG_WEIGHTS = np.log(NORMAL)
MAX_VARIANCE = 25.0  # of tastes (logit scale): sought up to this (SD 5)
MIN_WORKERS = 3  # with several votes on some pair: fewer, and how tastes differ is not estimated
MAX_WORKERS = 2000  # drawn at random where more have several votes on some pair: the estimate's cost stays flat
VARIANCES = np.concatenate([[0.0], np.geomspace(0.01, MAX_VARIANCE, 40)])  # the grid v is sought on
BOOTSTRAP = 200  # resamples of the workers for v's upper bound
STARTS = (0.05, 0.25, 1.0, 4.0)  # variances EM starts from
SEPARATION = 4.0  # the variance of the workers far from everyone is at least this many times the honest one
LEVEL = 0.99  # the upper end of v's one-sided interval is what the tests allow
SHIFTS = np.array([2.0, 3.0, 4.0, 6.0, 8.0])  # alternatives: log-odds above the crowd's
CONSTANTS = np.array([0.95, 0.99])  # alternatives: P(vote for m) whatever the crowd
CHUNK = 2 ** 13  # votes whose (votes x 100 nodes) arrays are built at once: about 7 MB each


def _on_cores(function, jobs: list) -> list:
    """``function(*job)`` for each job, on up to four of the machine's cores at once: the jobs are array
    operations, which let go of the interpreter's lock, and each result is what it would be one after another."""
    cores = usable_cores()
    if cores < 2 or len(jobs) < 2:
        return [function(*job) for job in jobs]
    with ThreadPoolExecutor(min(cores, 4), thread_name_prefix="dialeval-taste") as pool:
        return list(pool.map(lambda job: function(*job), jobs))


def smoothed_share(share: np.ndarray, workers: np.ndarray) -> np.ndarray:
    """The other workers' share for a model, half a worker added each way (a share of 1 from five workers is not
    a certainty)."""
    return (share * workers + 0.5) / (workers + 1.0)


def logsumexp(values: np.ndarray, axis: int) -> np.ndarray:
    """log(sum(exp(values))) along ``axis``, shifted by the maximum (scipy's, without its checks: most of the
    time of a few calls on small arrays)."""
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(values - top), axis=axis))


def center(share: np.ndarray, v: float) -> np.ndarray:
    """The log-odds mu whose tastes around it, mu + d with d ~ N(0, v), give the crowd's ``share`` on average:
    the crowd's share is the mean of its workers' chances, so the null is centred where that mean is right (the
    plain logit of the share would give a crowd-favoured model less than its honest voters give it)."""
    share = np.asarray(share, dtype=float)
    if v <= 0:
        return logit(share)
    distinct, inverse = np.unique(share, return_inverse=True)
    mu = logit(distinct) * np.sqrt(1 + np.pi * v / 8)  # the probit approximation, then Newton's steps
    for _ in range(20):
        p = expit(mu[:, None] + np.sqrt(v) * NODES[None, :])
        step = (p @ NORMAL - distinct) / np.maximum((p * (1 - p)) @ NORMAL, 1e-300)
        mu = mu - np.clip(step, -2.0, 2.0)
        if np.abs(step).max() < 1e-10:
            break
    return mu[inverse]


def taste_variance(y: np.ndarray, share: np.ndarray, block: np.ndarray, worker: np.ndarray,
                   seed: int = 0) -> tuple[float, float]:
    """(the estimate of v, its LEVEL upper bound; nan and MAX_VARIANCE from fewer than MIN_WORKERS) from votes
    ``y`` (1: for the model the crowd gives ``share``, the same for every vote of a block) grouped in ``block`` (a
    worker's votes on one pair; ``worker``: whose). Each worker is honest, every pair's taste d ~ N(0, v) around
    the crowd, or not (riggers, random clickers: d ~ N(0, w), w at least SEPARATION x v): v, w and the share of
    workers who are not honest maximise the likelihood of the blocks (d integrated out; EM over the two kinds of
    worker), so that a few workers far from everyone do not widen what counts as an honest taste. The upper bound is the LEVEL
    quantile of the estimate over workers resampled (BOOTSTRAP times)."""
    block = np.unique(block, return_inverse=True)[1]
    first = np.unique(block, return_index=True)[1]
    n = np.bincount(block).astype(float)
    yes = np.bincount(block, y)
    share, worker = share[first], worker[first]
    several = n >= 2  # a single vote's chance is the crowd's share whatever v: it says nothing of a taste
    if len(np.unique(worker[several])) < MIN_WORKERS:
        return np.nan, MAX_VARIANCE
    n, yes, share, worker = n[several], yes[several], share[several], np.unique(worker[several], return_inverse=True)[1]
    workers = int(worker.max()) + 1
    rng = np.random.default_rng(seed)
    if workers > MAX_WORKERS:  # a random set of workers estimates v (and its bound, resampling them) as well
        chosen = np.isin(worker, rng.choice(workers, MAX_WORKERS, replace=False))
        n, yes, share, worker = n[chosen], yes[chosen], share[chosen], np.unique(worker[chosen], return_inverse=True)[1]
        workers = MAX_WORKERS
    # log-likelihood of every worker's blocks at each variance of the grid; blocks of the same counts and share
    # (a pair's workers of one mind: a fifth as many) have the same, computed once
    distinct, same = np.unique(np.column_stack([yes, n - yes, share]), axis=0, return_inverse=True)
    logliks = _on_cores(_block_loglik, [(*distinct.T, v) for v in VARIANCES])
    table = np.stack([np.bincount(worker, loglik[same], workers) for loglik in logliks], axis=1)
    # EM from several starting variances (a few far-off workers can hold one start at a wide v), the best kept
    g, weight = max((_em(table, int(np.searchsorted(VARIANCES, start))) for start in STARTS),
                    key=lambda fit: fit[2])[:2]
    draws = rng.multinomial(workers, np.full(workers, 1 / workers), BOOTSTRAP)
    resampled = np.argmax((draws * weight[None, :]) @ table, axis=1)
    return float(VARIANCES[g]), float(VARIANCES[max(g, int(np.quantile(resampled, LEVEL, method="higher")))])


def _em(table: np.ndarray, g: int) -> tuple[int, np.ndarray, float]:
    """(the grid index of v, each worker's chance of being honest, the mixture's log-likelihood) by EM from grid
    index ``g``: who is honest given v and the others' variance (at least SEPARATION x v), then both variances
    and the share of the others given who is."""
    other, h = 0.1, _wider(g, table, np.ones(len(table)))
    for _ in range(100):
        odds = np.clip(np.log(other / (1 - other)) + table[:, h] - table[:, g], -700, 700)
        weight = 1 - expit(odds)  # P(honest)
        new = int(np.argmax(weight @ table))
        other = float(np.clip(1 - weight.mean(), 1e-3, 0.5))
        h_new = _wider(new, table, 1 - weight)
        if (new, h_new) == (g, h):
            break
        g, h = new, h_new
    mixture = np.logaddexp(np.log1p(-other) + table[:, g], np.log(other) + table[:, h]).sum()
    return g, weight, float(mixture)


def _wider(g: int, table: np.ndarray, weight: np.ndarray) -> int:
    """The others' variance: the grid's most likely for the workers weighted, at least SEPARATION x the honest."""
    allowed = np.flatnonzero(VARIANCES >= max(SEPARATION * VARIANCES[g], VARIANCES[1]))
    if not len(allowed):
        return len(VARIANCES) - 1
    return int(allowed[np.argmax(weight @ table[:, allowed])])


def _block_loglik(yes: np.ndarray, no: np.ndarray, share: np.ndarray, v: float) -> np.ndarray:
    """Each block's log marginal likelihood at taste variance ``v`` around the crowd's ``share``."""
    z = center(share, v)[:, None] + np.sqrt(v) * NODES[None, :]
    return logsumexp(yes[:, None] * log_expit(z) + no[:, None] * log_expit(-z) + LOG_WEIGHTS[None, :], axis=1)


def taste_e_values(y: np.ndarray, share: np.ndarray, group: np.ndarray, block: np.ndarray, v: float,
                   threshold: float = 1.0) -> np.ndarray:
    """Each group's (a worker's votes on one model's pairs; all their votes against the crowd) e-value: the
    running maximum, at least 1, of the alternatives' mean likelihood over the null's marginal likelihood of its
    votes ``y`` in order (``share``: the crowd's share at each vote, the null centred on it: ``center``;
    ``block``: the vote's pair; the module's docstring). nan for a group that could not reach ``threshold``
    whatever its votes: the null's likelihood of any sequence is at least exp(-sum over its votes of
    ``surprise_bound``) and no alternative's exceeds 1."""
    offset = center(share, v)
    groups = int(group.max(initial=-1)) + 1
    reachable = np.bincount(group, surprise_bound(offset, v), groups) >= np.log(threshold)
    e = np.where(reachable, 1.0, np.nan)
    keep = reachable[group]
    y, offset, group, block = y[keep], offset[keep], np.unique(group[keep], return_inverse=True)[1], block[keep]
    targets = np.flatnonzero(reachable)
    groups = len(targets)
    order = np.argsort(group, kind="stable")
    sizes = np.bincount(group, minlength=groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # whole groups at a time, about CHUNK votes each
    bounds = np.searchsorted(np.cumsum(sizes), np.arange(CHUNK, sizes.sum() + CHUNK, CHUNK), side="right")
    spans, first = [], 0
    for last in np.unique(np.minimum(bounds, groups)):
        if last > first:
            spans.append((first, last))
            first = last

    def chunk(first: int, last: int) -> np.ndarray:
        rows = order[starts[first]:starts[last - 1] + sizes[last - 1]]
        local = np.repeat(np.arange(last - first), sizes[first:last])
        return _chunk_e_values(y[rows], offset[rows], local, block[rows], last - first, v)

    for (first, last), values in zip(spans, _on_cores(chunk, spans)):
        e[targets[first:last]] = values
    return e


def surprise_bound(offset: np.ndarray, v: float, points: int = 2001) -> np.ndarray:
    """Per vote centred at ``offset``, at least the larger of -E log P(for) and -E log P(against) under the null's
    quadrature (t + b on SHARED's 10 x 10 nodes, as ``_null_loglik`` integrates them): by Jensen the null's
    likelihood of the votes is at least exp(-their sum). Both are convex in the offset (softplus of an affine
    function, averaged with positive weights), so the straight line between two points of a grid spanning the
    offsets lies above them: the grid's linear interpolation is an upper bound, within h^2 / 32 of the quantity
    (h the grid's step; softplus'' <= 1/4), at the cost of ``points`` x 100 evaluations instead of 100 a vote."""
    offset = np.asarray(offset, dtype=float)
    if not len(offset):
        return offset
    grid = np.unique(np.linspace(offset.min(), offset.max(), points))
    taste = (np.sqrt(v / 2) * (SHARED[:, None] + SHARED[None, :])).ravel()
    weight = np.exp(SHARED_LOG[:, None] + SHARED_LOG[None, :]).ravel()
    z = grid[:, None] + taste[None, :]
    worst = np.maximum(-log_expit(z) @ weight, -log_expit(-z) @ weight)
    return np.interp(offset, grid, worst)


def _chunk_e_values(y: np.ndarray, offset: np.ndarray, local: np.ndarray, block: np.ndarray, groups: int,
                    v: float) -> np.ndarray:
    yes = y > 0
    log_null = _null_loglik(yes, offset, local, block, groups, v)
    alternative = np.concatenate([offset[:, None] + SHIFTS[None, :],
                                  np.broadcast_to(np.log(CONSTANTS / (1 - CONSTANTS)), (len(y), len(CONSTANTS)))],
                                 axis=1)
    sign = np.where(yes, 1.0, -1.0)  # log P(the vote) = log_expit(sign x log-odds): one call, not two
    log_alternative = _group_cumsum(log_expit(sign[:, None] * alternative), local, groups)
    log_alternative = np.column_stack([log_alternative, _laplace(yes, local, groups)])
    ratio = logsumexp(log_alternative, axis=1) - np.log(log_alternative.shape[1]) - log_null
    sizes = np.bincount(local, minlength=groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    best = np.maximum.reduceat(ratio, starts[sizes > 0])
    out = np.ones(groups)
    out[sizes > 0] = np.exp(np.minimum(np.maximum(best, 0.0), LOG_CAP))
    return out


def _laplace(yes: np.ndarray, local: np.ndarray, groups: int) -> np.ndarray:
    """log P(the group's votes up to each one) when each goes to the model with a chance drawn once, uniformly
    (Laplace's rule: (votes for it so far + 1) / (votes so far + 2) at each): any constant share, such as a random
    clicker's half for the weakest model, is this alternative's."""
    sizes = np.bincount(local, minlength=groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    seen = np.arange(len(yes)) - np.repeat(starts, sizes)  # votes of the group before this one
    hits_before = _group_cumsum(yes[:, None].astype(float), local, groups)[:, 0] - yes
    chance = (hits_before + 1) / (seen + 2)
    return _group_cumsum(np.log(np.where(yes, chance, 1 - chance))[:, None], local, groups)[:, 0]


def _null_loglik(yes: np.ndarray, offset: np.ndarray, local: np.ndarray, block: np.ndarray, groups: int,
                 v: float) -> np.ndarray:
    """log P(the group's votes up to each one) under the null, rows in group then collection order: the taste of a
    vote's pair is t + b, t shared by the group and b by its pair, each N(0, v / 2); b integrated out per pair
    (its factor updated as the pair's votes come), then t (Gauss-Hermite on both). A pair with one vote of the
    group (most pairs of an arena worker's) has the factor E_b expit(+-(x + b)), x = offset + t, read from a
    table over x instead of summed over b's nodes at every vote."""
    sign = np.where(yes, 1.0, -1.0)
    sub = pd.factorize(local.astype(np.int64) * (int(block.max(initial=0)) + 1) + block)[0]
    alone = (np.bincount(sub) == 1)[sub]
    increments = np.empty((len(yes), len(SHARED)))
    x = sign[alone, None] * (offset[alone, None] + np.sqrt(v / 2) * SHARED[None, :])
    if x.size:
        increments[alone] = np.interp(x, *_one_vote_table(v, x.min(), x.max()))
    rows = np.flatnonzero(~alone)
    if len(rows):
        z = offset[rows, None, None] + np.sqrt(v / 2) * (SHARED[None, :, None] + SHARED[None, None, :])
        per_vote = log_expit(sign[rows, None, None] * z)  # votes x t x b
        part = sub[rows]
        by_sub = np.argsort(part, kind="stable")  # each pair's votes together, in collection order
        running = _group_cumsum(per_vote[by_sub].reshape(len(rows), -1), pd.factorize(part[by_sub])[0],
                                len(np.unique(part)))
        factor = logsumexp(running.reshape(len(rows), len(SHARED), len(SHARED)) + SHARED_LOG[None, None, :], axis=2)
        first = np.r_[True, part[by_sub][1:] != part[by_sub][:-1]]
        increments[rows[by_sub]] = factor - np.where(first[:, None], 0.0, np.roll(factor, 1, axis=0))
    return logsumexp(_group_cumsum(increments, local, groups) + SHARED_LOG[None, :], axis=1)


def _one_vote_table(v: float, low: float, high: float, step: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """(x, log E_b expit(x + b)) every ``step`` from ``low`` to ``high``, b ~ N(0, v / 2) (SHARED's nodes): the
    factor of a pair with one vote, read by linear interpolation (within step^2 / 32 of it: its second
    derivative is at most 1/4). E_b expit(-(x + b)) is the table's at -x: b's nodes are symmetric."""
    x = np.linspace(low, high, max(2, int(np.ceil((high - low) / step)) + 1))
    return x, logsumexp(log_expit(x[:, None] + np.sqrt(v / 2) * SHARED[None, :]) + SHARED_LOG[None, :], axis=1)


def _group_cumsum(values: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Running sums down the rows within each group (rows sorted by group)."""
    total = np.concatenate([np.zeros((1, values.shape[1])), np.cumsum(values, axis=0)])
    sizes = np.bincount(group, minlength=groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return total[1:] - np.repeat(total[starts], sizes, axis=0)  # minus each group's sum before its start
