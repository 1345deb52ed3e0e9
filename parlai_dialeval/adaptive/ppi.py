"""Prediction-powered inference (PPI++ with power tuning) with intervals clustered by item.

An LLM judge labels every item; people label a subset. The estimate combines the judge's labels on the
items people did not judge with a correction measured on the items they did (Angelopoulos et al.,
Science 2023), weighted by a power-tuning factor ``lam`` in [0, 1] chosen to minimise the variance
(PPI++, Angelopoulos, Duchi and Zrnic 2023, arXiv:2311.01453): ``lam = 0`` is the human-only estimate,
so a judge that does not agree with people costs (asymptotically) nothing. Pure functions: arrays in,
results out.

Why hand-written rather than ``ppi_py``: several human votes judge one item (three per ChatEval
prompt; the turns of a conversation), so the variances must be computed from cluster sums of the
estimating-equation scores; ppi_py assumes independent rows. With one row per cluster every formula
here reduces to ppi_py 0.2.3's (``ppi_mean_ci`` with ``ddof=0``, ``ppi_logistic_ci`` with ``ddof=1``,
both with ``t_interval=False``, including its power-tuning rule ``_calc_lam_glm``), which
tests/test_ppi.py checks against ppi_py itself; ppi_py is a test dependency only (it pulls numba and a
dataset downloader into an install).

Conventions: ``labelled`` rows are human votes, each with the judge's label of its item
(``judge_labelled``); ``judge_unlabelled`` are the judge's labels of items no person judged. The
``clusters`` arrays name the unit of independence of each row (the rule of
parlai_dialeval.analysis.cluster_robust); rows of one cluster may be correlated, clusters are independent.
Labelled and unlabelled items must be disjoint samples of the same population of items.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

# Below this power-tuning weight the report says the judge was set aside.
WEIGHT_NEGLIGIBLE = 0.05


@dataclass
class PPIEstimate:
    """PPI++ estimate(s) next to the human-only ones on the same human rows (one entry per coordinate:
    one for a mean, one per parameter for a logistic model)."""

    estimate: np.ndarray
    cov: np.ndarray
    human_estimate: np.ndarray
    human_cov: np.ndarray
    alpha: float
    lam: float  # the power-tuning weight on the judge: 0 = human-only, 1 = plain PPI
    n_labelled: int  # human rows (votes, ratings)
    n_unlabelled: int  # judge-only rows
    clusters_labelled: int
    clusters_unlabelled: int
    # Student t with (labelled clusters - 1) degrees of freedom, the usual small-sample choice for
    # cluster-robust intervals (Cameron and Miller 2015); False: the normal quantile, as ppi_py.
    t_interval: bool = True

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    @property
    def human_se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.human_cov))

    def interval(self, human: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(1 - alpha) interval(s) of the PPI estimate, or of the human-only one."""
        from scipy import stats  # here: commands' --help stays fast

        estimate, se = (self.human_estimate, self.human_se) if human else (self.estimate, self.se)
        if self.t_interval and self.clusters_labelled > 1:
            q = float(stats.t.ppf(1 - self.alpha / 2, self.clusters_labelled - 1))
        else:
            q = float(stats.norm.ppf(1 - self.alpha / 2))
        return estimate - q * se, estimate + q * se

    @property
    def variance_ratio(self) -> float:
        """Human-only variance over PPI variance (summed over coordinates); above 1 the judge helped."""
        ppi = float(np.sum(self.se ** 2))
        return float(np.sum(self.human_se ** 2)) / ppi if ppi > 0 else float("nan")

    @property
    def effective_n(self) -> float:
        """Human rows a human-only study would need for the PPI variance (what the judge was worth,
        together with the people's own rows)."""
        return self.n_labelled * self.variance_ratio


def _as_2d(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    # one column per parameter; a 1-D array is one parameter even when empty (reshape(0, -1) cannot say)
    return values[:, None] if values.ndim == 1 else values.reshape(len(values), -1)


def _clusters(clusters, n: int) -> np.ndarray:
    """Cluster codes 0..G-1 (in order of first appearance); every row its own cluster when None."""
    if clusters is None:
        return np.arange(n)
    clusters = np.asarray(clusters)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster ids for {n} rows")
    return pd.factorize(clusters)[0]


def cluster_sums(scores: np.ndarray, clusters, centre: np.ndarray | None = None) -> np.ndarray:
    """Per cluster, the sum of its rows' scores minus the centre (default the mean over all rows)."""
    scores = _as_2d(scores)
    codes = _clusters(clusters, len(scores))
    centred = scores - (scores.mean(axis=0) if centre is None else centre)
    groups = int(codes.max(initial=-1)) + 1
    return np.column_stack([np.bincount(codes, weights=column, minlength=groups) for column in centred.T]) \
        if groups else np.zeros((0, scores.shape[1]))


def mean_covariance(scores, clusters=None, ddof: int = 1) -> np.ndarray:
    """Covariance of the mean of ``scores`` (rows x d) under cluster sampling: the outer products of
    centred cluster sums over n^2, times G / (G - ddof) for G clusters (the usual small-sample factor;
    ddof = 1 with one row per cluster is np.cov / n, ddof = 0 is the plug-in variance / n)."""
    scores = _as_2d(scores)
    n = len(scores)
    sums = cluster_sums(scores, clusters)
    g = len(sums)
    if g <= ddof:
        return np.full((scores.shape[1],) * 2, np.nan)
    return sums.T @ sums / n ** 2 * g / (g - ddof)


def tuned_weight(grads, grads_judge, grads_judge_unlabelled, inv_hessian, clusters=None,
                 clusters_unlabelled=None) -> float:
    """PPI++'s power-tuning weight, clipped to [0, 1]: the covariance of the means of the human and the
    judge scores on the labelled rows over the variance of the judge part (its mean on the labelled plus
    on the unlabelled rows), both through the inverse Hessian (ppi_py's ``_calc_lam_glm``, overall
    mode), from cluster sums. With one row per cluster in both samples the judge scores' variance is
    pooled over the two samples exactly as ppi_py does; otherwise each sample's own clustered variance is
    used, since pooling assumes rows of one kind (three votes of a prompt against one judge answer)."""
    grads, grads_judge, grads_u = _as_2d(grads), _as_2d(grads_judge), _as_2d(grads_judge_unlabelled)
    n, big_n = len(grads), len(grads_u)
    if n < 2 or big_n < 1:
        return 0.0
    c_l, c_u = _clusters(clusters, n), _clusters(clusters_unlabelled, big_n)
    g_sums, h_sums = cluster_sums(grads, c_l), cluster_sums(grads_judge, c_l)
    cross = (g_sums.T @ h_sums + h_sums.T @ g_sums) / n ** 2
    if c_l.max() + 1 == n and c_u.max() + 1 == big_n:
        var_judge = np.atleast_2d(np.cov(np.vstack([grads_judge, grads_u]).T)) * (1 / n + 1 / big_n)
    else:
        var_judge = mean_covariance(grads_judge, c_l) + mean_covariance(grads_u, c_u)
    a = np.atleast_2d(inv_hessian)
    denominator = 2 * np.trace(a @ var_judge @ a)
    if not denominator > 0:
        return 0.0
    return float(np.clip(np.trace(a @ cross @ a) / denominator, 0.0, 1.0))


def _result(estimate, cov, human_estimate, human_cov, lam, alpha, n, big_n, c_l, c_u, t_interval) -> PPIEstimate:
    return PPIEstimate(np.atleast_1d(estimate).astype(float), np.atleast_2d(cov),
                       np.atleast_1d(human_estimate).astype(float), np.atleast_2d(human_cov), alpha, float(lam), n,
                       big_n, int(c_l.max(initial=-1)) + 1, int(c_u.max(initial=-1)) + 1, t_interval)


def ppi_mean(labels, judge_labelled, judge_unlabelled, clusters=None, clusters_unlabelled=None,
             alpha: float = 0.05, lam: float | None = None, ddof: int = 1,
             t_interval: bool = True) -> PPIEstimate:
    """PPI++ mean of the human labels (a win rate with ties as 1/2, a success rate, a Likert mean):
    ``lam`` * mean(judge on unlabelled) + mean(label - ``lam`` * judge on labelled), with an interval
    from the clustered variances of the two independent parts; ``lam`` None = power-tuned."""
    y, f, f_u = (np.asarray(v, dtype=float) for v in (labels, judge_labelled, judge_unlabelled))
    n, big_n = len(y), len(f_u)
    if len(f) != n:
        raise ValueError(f"{len(f)} judge labels for {n} human labels")
    if n < 2:
        raise ValueError("PPI needs at least two human labels")
    c_l, c_u = _clusters(clusters, n), _clusters(clusters_unlabelled, big_n)
    if lam is None:
        lam = tuned_weight(y, f, f_u, np.eye(1), c_l, c_u)
    if big_n == 0:
        lam = 0.0
    estimate = (lam * f_u.mean() if big_n else 0.0) + (y - lam * f).mean()
    var = mean_covariance(y - lam * f, c_l, ddof)
    if big_n:
        var = var + mean_covariance(lam * f_u, c_u, ddof)
    return _result(estimate, var, y.mean(), mean_covariance(y, c_l, ddof), lam, alpha, n, big_n, c_l, c_u, t_interval)


def _logistic_stats(theta, x, y, f, x_u, f_u, use_unlabelled: bool):
    """Per-row scores of the people, of the judge on labelled and unlabelled rows, and the inverse
    Hessian (on all rows when the judge is used, as ppi_py does)."""
    from scipy.special import expit

    mu, mu_u = expit(x @ theta), expit(x_u @ theta)
    hess = (x.T * (mu * (1 - mu))) @ x
    if use_unlabelled:
        hess = (hess + (x_u.T * (mu_u * (1 - mu_u))) @ x_u) / (len(x) + len(x_u))
    else:
        hess = hess / len(x)
    grads, grads_judge = x * (mu - y)[:, None], x * (mu - f)[:, None]
    return grads, grads_judge, x_u * (mu_u - f_u)[:, None], np.linalg.inv(hess)


def ppi_bradley_terry(models: list[str], pairs, labels, judge_labelled, pairs_unlabelled, judge_unlabelled,
                      clusters=None, clusters_unlabelled=None, alpha: float = 0.05, lam: float | None = None,
                      ddof: int = 1, t_interval: bool = True) -> PPIEstimate:
    """PPI++ Bradley-Terry: a logistic regression on pair indicators without intercept (the estimate: each
    model's log-strength relative to ``models[0]``; ``centred`` makes them mean 0) with the clustered sandwich
    variance A (V_unlabelled + V_labelled) A; ``lam`` None = power-tuned. ``pairs``: (first, second) model
    indices of each human vote, ``labels`` 1 = first won, 0 lost, 1/2 tie; ``pairs_unlabelled`` those of the
    judge-only rows. The fits are analysis.bradley_terry's: the rectified loss, people's loss minus lam times
    the judge's on the labelled rows plus lam times the judge's on the unlabelled ones (each a mean), is a
    logistic loss with weights (1 - lam) / n and lam / N and targets (y - lam f) / n and lam f_u / N."""
    from parlai_dialeval.analysis import bradley_terry

    first, second = (np.asarray(v, dtype=np.int64).reshape(-1) for v in pairs)
    first_u, second_u = (np.asarray(v, dtype=np.int64).reshape(-1) for v in pairs_unlabelled)
    y, f, f_u = (np.asarray(v, dtype=float) for v in (labels, judge_labelled, judge_unlabelled))
    n, big_n = len(y), len(f_u)
    if n < 2:
        raise ValueError("PPI needs at least two human labels")
    x = bradley_terry.design(first, second, len(models))
    x_u = bradley_terry.design(first_u, second_u, len(models))
    votes = bradley_terry.Votes(list(models), np.concatenate([first, first_u]), np.concatenate([second, second_u]),
                                np.concatenate([y, f_u]))

    def fitted(weight: float) -> np.ndarray:
        share = weight / big_n if big_n else 0.0
        weights = np.concatenate([np.full(n, (1 - weight) / n), np.full(big_n, share)])
        targets = np.concatenate([(y - weight * f) / n, share * f_u])
        return bradley_terry.fit(votes, weights=weights, targets=targets, covariance=False, tol=1e-10).params

    c_l, c_u = _clusters(clusters, n), _clusters(clusters_unlabelled, big_n)
    if big_n == 0:
        lam = 0.0
    if lam is None:
        lam = tuned_weight(*_logistic_stats(fitted(1.0), x, y, f, x_u, f_u, True), c_l, c_u)
    theta = fitted(lam)
    grads, grads_judge, grads_u, inv_h = _logistic_stats(theta, x, y, f, x_u, f_u, lam != 0)
    middle = mean_covariance(grads - lam * grads_judge, c_l, ddof)
    if big_n:
        middle = middle + mean_covariance(lam * grads_u, c_u, ddof)
    human = fitted(0.0)
    h_grads, _, _, h_inv = _logistic_stats(human, x, y, f, x_u, f_u, False)
    return _result(theta, inv_h @ middle @ inv_h, human, h_inv @ mean_covariance(h_grads, c_l, ddof) @ h_inv,
                   lam, alpha, n, big_n, c_l, c_u, t_interval)


ESTIMATE_COLUMNS = ["human", "human_ci_low", "human_ci_high", "ppi", "ppi_ci_low", "ppi_ci_high", "judge_weight",
                    "effective_human_judgments", "judge_worth_judgments", "note"]


def note(result: PPIEstimate) -> str:
    """What a reader must know about one estimate: the judge was not used, and why."""
    if result.n_unlabelled == 0:
        return "no item was judged by the judge alone: the estimate is the human-only one"
    if result.lam < WEIGHT_NEGLIGIBLE:
        return (f"judge set aside (weight {result.lam:.2f}): its answers do not track the people's, the interval "
                "is the human-only one")
    return ""


def estimate_row(result: PPIEstimate) -> dict:
    """One scalar estimate as a table row (ESTIMATE_COLUMNS): human-only and PPI++ with intervals."""
    (low, high), (h_low, h_high) = result.interval(), result.interval(human=True)
    return {"human": result.human_estimate[0], "human_ci_low": h_low[0], "human_ci_high": h_high[0],
            "ppi": result.estimate[0], "ppi_ci_low": low[0], "ppi_ci_high": high[0], "judge_weight": result.lam,
            "effective_human_judgments": result.effective_n,
            "judge_worth_judgments": result.effective_n - result.n_labelled, "note": note(result)}


def centred(result: PPIEstimate, n_models: int, reference: int = 0) -> PPIEstimate:
    """Bradley-Terry log-strengths of all ``n_models`` with mean 0 (the reference model's parameter is
    0 in the fit), for the PPI and the human-only fit, covariances carried through the linear map."""
    from parlai_dialeval.analysis.bradley_terry import centring

    m = centring(n_models, reference)
    return PPIEstimate(m @ result.estimate, m @ result.cov @ m.T, m @ result.human_estimate,
                       m @ result.human_cov @ m.T, result.alpha, result.lam, result.n_labelled,
                       result.n_unlabelled, result.clusters_labelled, result.clusters_unlabelled, result.t_interval)
