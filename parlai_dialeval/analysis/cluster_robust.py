"""How far judgments of one conversation move together, and what that does to per-turn tests.

Smith et al.'s per-turn binomial test (App. F) treats every turn as an independent vote, but turns of
one conversation share a partner, a topic and a worker. With an intraclass correlation of 0.1-0.3
between them its false-positive rate is 0.10-0.21 instead of 0.05
(../shared/notes/adaptive_evaluation.md, section 4), so the analyses test by conversation beside it and
report the correlation.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from parlai_dialeval.analysis.keys import first_seen_codes
from parlai_dialeval.analysis.raking import kish

# Above this intraclass correlation the per-turn test's independence assumption is called doubtful.
DOUBTFUL_ICC = 0.05


def icc_oneway(values: np.ndarray, clusters: np.ndarray) -> float:
    """ICC(1) from a one-way ANOVA with unequal cluster sizes (n0 of Donner 1986). pingouin's
    intraclass_corr needs every target rated by the same raters, which conversations of different
    lengths are not, hence this formula (``icc_oneways``). NaN with fewer than two clusters or no
    within-cluster spread."""
    return float(icc_oneways(np.zeros(len(values), dtype=np.int64), values, clusters, 1)[0])


def cluster_cells(group: np.ndarray, clusters) -> tuple[np.ndarray, np.ndarray]:
    """(the cluster of each value within its group, numbered 0.. over all groups; the group of each cluster).
    A value without a cluster is a cluster of its own."""
    codes = pd.factorize(np.asarray(clusters, dtype=object))[0]
    missing = codes < 0
    codes[missing] = codes.max(initial=-1) + 1 + np.arange(missing.sum())
    cell = pd.factorize(group * (codes.max(initial=-1) + 1) + codes)[0]
    owner = np.zeros(cell.max(initial=-1) + 1, dtype=np.int64)
    owner[cell] = group
    return cell, owner


def icc_oneways(group, values, clusters, groups: int) -> np.ndarray:
    """``icc_oneway`` of every group at once (``group``: codes 0..groups-1, one per value), from sums per
    cluster: one call per model pair took 23 s of analyze_pairwise on 100,000 votes (issue 43)."""
    group = np.asarray(group, dtype=np.int64)
    y = np.asarray(values, dtype=float)
    cell, owner = cluster_cells(group, clusters)
    sizes = np.bincount(cell).astype(float)
    means = np.bincount(cell, y) / sizes
    k = np.bincount(owner, minlength=groups).astype(float)
    n = np.bincount(group, minlength=groups).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):  # groups of fewer than two clusters: NaN below
        mean = np.bincount(group, y, groups) / n
        msb = np.bincount(owner, sizes * (means - mean[owner]) ** 2, groups) / (k - 1)
        msw = np.bincount(group, (y - means[cell]) ** 2, groups) / (n - k)
        n0 = (n - np.bincount(owner, sizes ** 2, groups) / n) / (k - 1)
        denominator = msb + (n0 - 1) * msw
        icc = (msb - msw) / denominator
    return np.where((k >= 2) & (n > k) & (denominator > 0), icc, np.nan)


def design_effect(icc, cluster_size):
    """How many times the variance of a mean grows because clusters hold correlated judgments (Kish); NaN
    where the ICC is. ``cluster_size``: the size-weighted mean size of the clusters (``weighted_size``), which is
    their plain mean only where they are all alike. Arrays give one per element."""
    effect = np.where(np.isfinite(icc), 1 + (np.asarray(cluster_size, dtype=float) - 1) * icc, np.nan)
    return float(effect) if effect.ndim == 0 else effect


def weighted_size(sizes) -> float:
    """Kish's cluster size for the design effect of unequal clusters, sum m^2 / sum m: the size of the cluster a
    judgment sits in, on average over judgments. With the plain mean, 85% of items judged once and 15% fifteen
    times (mean 3.1, weighted 11.6) gave a "95%" win-rate interval that covered 0.82 of an independent simulation's
    400 studies (tests/test_calibration_clustered.py)."""
    sizes = np.asarray(sizes, dtype=float)
    total = sizes.sum()
    return float((sizes ** 2).sum() / total) if total > 0 else float("nan")


# --- The one rule for what a cluster of pairwise votes is (certify, adaptive collection, the planner and
# the pairwise analyses all call the functions below; docs/adaptive_evaluation.md, "Clusters").
# Votes on the same item for the same question and model pair form one cluster: an A/B prompt (its context
# text, wherever it was asked) or an ACUTE / PW-Dialog conversation pair judged by several workers, or the
# per-turn votes of one PW-Turn conversation (item_id is the conversation there). Clusters, not votes, are
# the units of independence.
UNIT_OF_INDEPENDENCE = {"response": "prompt", "dialog": "conversation pair", "turn": "conversation"}


def cluster_ids(frame: pd.DataFrame) -> pd.Series:
    """The item a vote judged: for A/B responses the prompt (its ``context`` where recorded, so one prompt
    asked in two batches or files is one cluster), otherwise ``item_id`` (an ACUTE / PW-Dialog
    conversation pair, a PW-Turn conversation)."""
    item = "item:" + frame["item_id"].astype(str)
    if "context" not in frame:
        return item
    # Each distinct context converted once (a million of them one by one took 0.5 s).
    try:
        code, distinct = pd.factorize(frame["context"])
    except TypeError:  # contexts recorded as lists of turns (the A/B and PW-Turn tasks' exports) hash as text
        code, distinct = pd.factorize(frame["context"].map(
            lambda c: c if c is None or isinstance(c, (str, float, int)) else str(c)))
    text = np.array([None] + [None if isinstance(c, float) and np.isnan(c) else str(c) for c in distinct], dtype=object)
    context = pd.Series(text[code + 1], index=frame.index, dtype=str, name="context")
    use = frame["unit"].eq("response").to_numpy() & context.notna().to_numpy()
    return ("context:" + context).where(use, item)


def clustering_summary(values: np.ndarray, clusters: np.ndarray) -> dict:
    """How much votes cluster: ``clusters``, mean ``votes_per_cluster``, the ``icc`` of the vote values
    within clusters and the ``design_effect`` over the size-weighted cluster size (``weighted_size``; floored at
    1: a negative ICC estimate is not taken as a gain; 1 where every cluster is one vote)."""
    row = clustering_summaries(np.zeros(len(values), dtype=np.int64), values, clusters, 1).iloc[0]
    return {"clusters": int(row["clusters"]), **{key: float(row[key]) for key in SUMMARY_COLUMNS[1:]}}


SUMMARY_COLUMNS = ["clusters", "votes_per_cluster", "icc", "design_effect"]


def clustering_summaries(group, values, clusters, groups: int) -> pd.DataFrame:
    """``clustering_summary`` of every group at once (``group``: codes 0..groups-1, one per value), one
    row per group (SUMMARY_COLUMNS)."""
    group = np.asarray(group, dtype=np.int64)
    cell, owner = cluster_cells(group, clusters)
    k = np.bincount(owner, minlength=groups)
    votes = np.bincount(group, minlength=groups)
    cell_sizes = np.bincount(cell).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):  # a group without values: NaN
        size = votes / k
        weighted = np.bincount(owner, cell_sizes ** 2, groups) / votes  # weighted_size of each group
    icc = icc_oneways(group, values, clusters, groups)
    deff = design_effect(icc, weighted)
    floored = np.where(np.isfinite(deff), np.maximum(deff, 1.0), np.where(size == 1, 1.0, np.nan))
    return pd.DataFrame({"clusters": k, "votes_per_cluster": size, "icc": icc, "design_effect": floored})


# --- Workers as clusters (analyze_single_model). One worker's ratings share a personal bias: a model's
# mean over conversations rated by a few workers varies more than a t interval over conversations says,
# and where workers rate only one model a worker's bias looks like a model difference (about 0.19-0.34
# false claims at alpha 0.05 in benchmarks/calibrate_clustered.py). Where some worker rated more than one
# of the conversations compared, the worker is the unit of independence.
def workers_repeat(workers) -> bool:
    """Whether some worker rated more than one of these conversations (missing workers count as one each)."""
    named = pd.Series(np.asarray(workers, dtype=object)).dropna()
    return bool(named.duplicated().any())


class WorkerRobustFit(NamedTuple):
    """An OLS fit's coefficients (``params``), their standard errors clustered by worker (``bse``) and ``tvalues``."""
    params: np.ndarray
    bse: np.ndarray

    @property
    def tvalues(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):  # a coefficient without spread: inf or NaN
            return self.params / self.bse


def worker_robust_fit(values, design: np.ndarray, workers) -> WorkerRobustFit:
    """OLS of ``values`` on ``design`` with a covariance clustered by worker, CR2 (Bell & McCaffrey 2002; Pustejovsky &
    Tipton 2018): each worker's residuals e_g times (I - H_gg)^(-1/2), H_gg = X_g (X'X)^-1 X_g' their block of the hat
    matrix. A worker who rated much of the data pulls the fit towards their own ratings, so their residuals understate
    their spread; CR1 (statsmodels', used before) scales every worker's alike by G / (G - 1). With t on Kish's effective
    number of workers less 1 (effective_worker_inference) and 3 of 30 workers doing 69% of the work (4.2 effective),
    CR1 left the true mean outside 0.093 of an independent simulation's style-adjusted 95% intervals and 0.076 of its
    plain means' and found a per-worker covariate without effect in 0.084 of 500 studies; CR2 0.053, 0.056 and 0.038.
    Never above CR1 in any setting simulated, the same within 0.006 with equal loads (docs/live_chat_analysis.md,
    docs/single_model_analysis.md). Missing workers are clusters of their own.

    No n_g x n_g matrix (a worker with 10,000 conversations): with Z orthonormal columns spanning the design, H_gg =
    Z_g Z_g', whose nonzero eigenvalues are those of the small Z_g'Z_g, so Z_g'(I - H_gg)^(-1/2) e_g =
    (I - Z_g'Z_g)^(-1/2) Z_g'e_g. Where one worker alone decides a direction of the fit (leverage 1: the only worker
    who rated a model) their residuals are exactly 0 along it and the factor is taken as 0 (the Moore-Penrose inverse,
    as Pustejovsky & Tipton), not 1 / sqrt(rounding error); as with CR1, nothing there measures that direction's
    variance, so a coefficient that moves along it gets no standard error (NaN), not 0."""
    y = np.asarray(values, float)
    x = np.asarray(design, float)
    codes = _worker_codes(workers)
    basis, singular, right = np.linalg.svd(x, full_matrices=False)
    keep = singular > singular.max(initial=0) * max(x.shape) * np.finfo(float).eps  # a collinear design: its span
    z, to_params = basis[:, keep], right[keep].T / singular[keep]  # params = to_params @ (coefficients on z)
    on_z = z.T @ y
    residual = y - z @ on_z
    alone = np.bincount(codes)[codes] == 1
    # a worker of one row: Z_g'Z_g = z z', its one eigenvalue the row's leverage, the score z e along z
    room_alone = 1 - (z[alone] ** 2).sum(axis=1)
    scores = [z[alone] * (residual[alone] * _inverse_root(room_alone))[:, None]]
    decided = [z[alone][room_alone <= FULL_LEVERAGE]]  # directions one worker alone decides
    cluster = pd.factorize(codes[~alone])[0]
    clusters, rank = cluster.max(initial=-1) + 1, z.shape[1]
    rows, errors = z[~alone], residual[~alone]
    gram = np.empty((clusters, rank, rank))
    for i in range(rank):
        for j in range(i, rank):
            gram[:, i, j] = gram[:, j, i] = np.bincount(cluster, rows[:, i] * rows[:, j], clusters)
    score = np.column_stack([np.bincount(cluster, rows[:, i] * errors, clusters) for i in range(rank)])
    eigenvalues, vectors = np.linalg.eigh(gram)
    rotated = _inverse_root(1 - eigenvalues) * np.einsum("gji,gj->gi", vectors, score)
    scores.append(np.einsum("gij,gj->gi", vectors, rotated))
    decided.append(np.swapaxes(vectors, 1, 2)[1 - eigenvalues <= FULL_LEVERAGE])
    # each worker's adjusted score on the coefficients: the variance is their sum of squares, never below 0
    bse = np.linalg.norm(np.vstack(scores) @ to_params.T, axis=0)
    # a coefficient that moves along a direction one worker decides has no measured spread there (a model only one
    # worker rated: an interval of width 0, not an exact mean): none
    reach = np.abs(np.vstack(decided) @ to_params.T).max(axis=0, initial=0)
    bse[reach > 1e-8 * np.linalg.norm(to_params, axis=1)] = np.nan
    return WorkerRobustFit(to_params @ on_z, bse)


FULL_LEVERAGE = 1e-10  # 1 - leverage at or below this: leverage 1


def _inverse_root(room: np.ndarray) -> np.ndarray:
    """1 / sqrt(1 - leverage), 0 at leverage 1 (worker_robust_fit)."""
    return np.where(room > FULL_LEVERAGE, 1 / np.sqrt(np.maximum(room, FULL_LEVERAGE)), 0.0)


def _worker_codes(workers) -> np.ndarray:
    groups = pd.Series(np.asarray(workers, dtype=object))
    alone = groups.isna()
    groups[alone] = [f"(row {i})" for i in np.flatnonzero(alone)]
    return pd.factorize(groups)[0]


def effective_worker_inference(fit, workers, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p-values, interval lows, interval highs) of ``worker_robust_fit``'s coefficients with t on Kish's effective
    number of workers less 1 degrees of freedom rather than their count (the single-model tests, live-chat style
    control and rankings per category): where a few workers rated most conversations, t on the count told equal
    models apart in 0.08-0.13 of simulated studies at alpha 0.05 (30 workers, Zipf 1.5 loads: 4.2 effective;
    tests/test_calibration_style_categories.py for the other two). With equal loads the two are the same. Bell &
    McCaffrey's Satterthwaite degrees of freedom, CR2's usual companion, were no better: about Kish's number less 1
    with Zipf 1.0 loads, more with Zipf 1.5, where the style-adjusted intervals then missed 0.063 and the per-worker
    covariate test rejected 0.070 (Kish's: 0.055 and 0.033; 400 studies)."""
    from scipy import stats

    df = kish(np.bincount(_worker_codes(workers))) - 1
    t, se = np.asarray(fit.tvalues, float), np.asarray(fit.bse, float)
    half = stats.t.isf(alpha / 2, df) * se
    params = np.asarray(fit.params, float)
    return 2 * stats.t.sf(np.abs(t), df), params - half, params + half


def worker_robust_mean_interval(values, workers, alpha: float = 0.05) -> tuple[float, float]:
    """Interval of a mean over conversations clustered by worker (t on the effective number of workers less 1:
    effective_worker_inference); nan below two workers."""
    values = np.asarray(values, float)
    if pd.Series(np.asarray(workers, dtype=object)).nunique(dropna=False) < 2:
        return np.nan, np.nan
    if np.ptp(values) == 0:
        return float(values[0]), float(values[0])
    _, low, high = effective_worker_inference(worker_robust_fit(values, np.ones((len(values), 1)), workers), workers,
                                              alpha)
    return float(low[0]), float(high[0])


def effective_clusters(group: np.ndarray, keys, groups: int | None = None) -> np.ndarray:
    """Kish's effective number of clusters of every group (``group``: codes 0..G-1, one per vote; ``keys``: each
    vote's cluster, missing ones a cluster each), (sum n)^2 / sum n^2 over the clusters' vote counts n: the
    number of equal clusters that would carry as much information. 30 workers of whom 3 give 57% of the votes
    are about 4."""
    group = np.asarray(group, dtype=np.int64)
    groups = int(group.max(initial=-1)) + 1 if groups is None else groups
    cell, owner = cluster_cells(group, keys)
    size = np.bincount(cell).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):  # a group without votes: NaN
        return np.bincount(owner, size, groups) ** 2 / np.bincount(owner, size ** 2, groups)


def two_way_ps(group: np.ndarray, won, items, workers) -> np.ndarray:
    """``two_way_p`` of every group at once (``group``: codes 0..G-1, one per vote), from cluster sums: the
    two-way sandwich of an intercept-only OLS (item + worker - item x worker, as statsmodels' cov_cluster_2groups),
    each term CR2 rather than statsmodels' CR1, and t with the smaller effective number of items or workers
    (``effective_clusters``) less 1 degrees of freedom rather than their count. With CR1 and the count, equal
    models were told apart in 0.135 of simulated studies at alpha 0.05 when 3 of 30 workers gave 57% of the votes;
    with both changes 0.065 (SE 0.017), and 0.040 with 20 equal workers (tests/test_calibration_clustered.py). One
    statsmodels fit per model pair took minutes for 20,000 pairs (issue 43); the test checks this against a
    cluster-by-cluster computation."""
    from scipy import stats

    group = np.asarray(group, dtype=np.int64)
    won = np.asarray(won, dtype=float)
    size = np.bincount(group).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):  # a code without votes: NaN below
        mean = np.bincount(group, won) / size
    residual = won - mean[group]
    named = pd.Series(np.asarray(workers, dtype=object))
    two_way = np.bincount(group, named.isna().to_numpy(), len(size)) == 0
    items = pd.factorize(np.asarray(items, dtype=object))[0]
    workers = pd.factorize(named)[0]

    def cr2(*keys):
        """(variance of the mean clustered by ``keys`` within each group, number of clusters). CR2 (Bell &
        McCaffrey 2002): for a mean, each cluster's squared residual sum over 1 - its share of the votes (its
        leverage), where CR1 scales them all by clusters / (clusters - 1): a worker who gave half the votes pulls
        the mean towards their own, so their residuals understate their spread, the more the bigger their share."""
        codes = first_seen_codes([*keys, group])
        owner = np.zeros(codes.max(initial=-1) + 1, dtype=np.int64)
        owner[codes] = group
        sums = np.bincount(codes, residual)
        share = np.bincount(codes) / size[owner]
        count = np.bincount(owner, minlength=len(size)).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.bincount(owner, sums ** 2 / np.maximum(1 - share, 1e-12), len(size)) / size ** 2, count

    var_items, n_items = cr2(items)
    var_workers, n_workers = cr2(workers)
    var_both, _ = cr2(items, workers)
    variance = np.where(two_way, var_items + var_workers - var_both, var_items)
    clusters = np.where(two_way, np.minimum(n_items, n_workers), n_items)
    effective = effective_clusters(group, items, len(size))
    effective = np.where(two_way, np.minimum(effective, effective_clusters(group, workers, len(size))), effective)
    by_group = pd.Series(won).groupby(group)
    spread = (by_group.max() > by_group.min()).reindex(range(len(size)), fill_value=False).to_numpy()
    valid = (size >= 2) & spread & (clusters >= 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - 0.5) / np.sqrt(variance)
        p = 2 * stats.t.sf(np.abs(t), np.where(valid, effective - 1, 1))
    return np.where(valid, p, np.nan)


def two_way_p(won, items, workers) -> float:
    """Two-sided p-value of "a decided vote is won half the time" with a covariance clustered two ways,
    by item and by worker (Cameron, Gelbach & Miller 2011, with CR2 terms, computed by ``two_way_ps``; t with
    the smaller effective number of items or workers, less 1, degrees of freedom):
    valid for the population of workers as well as of items, where one worker's taste moves their votes on
    different items together. By item only where no worker is named; NaN below two clusters either way or
    where every vote went one way (no spread to estimate a variance from)."""
    if len(won) == 0:
        return float("nan")
    return float(two_way_ps(np.zeros(len(won), dtype=np.int64), won, items, workers)[0])
