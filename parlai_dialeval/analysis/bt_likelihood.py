"""The Bradley-Terry likelihood that ``bradley_terry.fit`` maximises, and the linear algebra it needs: the terms a
model changes (``Likelihood``; analysis/ties.py subclasses it for Davidson's ties), the per-model Gram matrix
that never forms a rows x models design (``gram``), and a solve that survives a model which never lost
(``solve``)."""
from __future__ import annotations

import numpy as np
import pandas as pd


class Likelihood:
    """The Bradley-Terry log-likelihood of weighted votes, sum_i t_i eta_i - w_i log(1 + e^eta_i) (a tie is half
    a win: t_i = w_i / 2), and Newton's method on it (with ``ridge``, a penalty per parameter). A subclass
    changes the model's terms: ``linear``, ``probability``, ``loglik``, ``residual`` (the score of the strength
    difference), ``scores`` and ``hessian`` (analysis/ties.py)."""

    def __init__(self, first, second, t, w, features, n_models: int):
        self.first, self.second, self.t, self.w, self.features, self.m = first, second, t, w, features, n_models
        self.ridge = np.zeros(self.n_params)

    @property
    def n_params(self) -> int:
        return self.m - 1 + self.features.shape[1]

    def linear(self, beta: np.ndarray) -> np.ndarray:
        strengths = np.concatenate([[0.0], beta[:self.m - 1]])
        return strengths[self.first] - strengths[self.second] + self.features @ beta[self.m - 1:]

    @staticmethod
    def probability(eta: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        return expit(eta)

    def loglik(self, eta: np.ndarray) -> float:
        return float(np.sum(self.t * eta - self.w * np.logaddexp(0, eta)))

    def residual(self, prob: np.ndarray) -> np.ndarray:
        return self.t - self.w * prob

    def curvature(self, prob: np.ndarray) -> np.ndarray:
        return self.w * (prob * (1 - prob))

    def scores(self, prob: np.ndarray) -> np.ndarray:
        """Each vote's score for the parameters after the strengths (votes x parameters)."""
        return self.residual(prob)[:, None] * self.features

    def gradient(self, prob: np.ndarray) -> np.ndarray:
        m, residual = self.m, self.residual(prob)
        return np.concatenate([(np.bincount(self.first, residual, m) - np.bincount(self.second, residual, m))[1:],
                               self.scores(prob).sum(axis=0)])

    def hessian(self, prob: np.ndarray) -> np.ndarray:
        c = self.curvature(prob)
        return gram(self.first, self.second, c, c[:, None] * self.features, np.sqrt(c)[:, None] * self.features,
                     self.m)

    def maximise(self, start, inverse, max_iter: int, tol: float) -> tuple[np.ndarray, bool]:
        m, ridge, beta = self.m, self.ridge, np.zeros(self.n_params)
        if start is not None:
            beta[:m - 1] = (start - start[0])[1:]
        eta = self.linear(beta)
        current = self.loglik(eta) - ridge @ beta ** 2 / 2
        for iteration in range(max_iter):
            prob = self.probability(eta)
            gradient = self.gradient(prob) - ridge * beta
            quick = inverse is not None and iteration < max_iter // 2
            step = inverse @ gradient if quick else solve(self.hessian(prob) + np.diag(ridge), gradient)
            scale = 1.0
            while True:  # halve the step until the likelihood does not fall
                trial = self.linear(beta + scale * step)
                value = self.loglik(trial) - ridge @ (beta + scale * step) ** 2 / 2
                if value >= current - 1e-12 or scale < 1e-4:
                    break
                scale /= 2
            beta, eta, current = beta + scale * step, trial, value
            if np.max(np.abs(scale * step), initial=0.0) < tol:
                return beta, True
        return beta, False

    def sandwich(self, prob: np.ndarray, bread: np.ndarray, clusters, data: int) -> tuple[np.ndarray, int]:
        """(the CR1 covariance of the parameters, the clusters) over the first ``data`` rows (the votes, not
        the pseudo-votes). Clusters nest in model pairs, so a cluster's score is R_g (e_low - e_high) over the
        models: the meat is a gram over clusters, like the Hessian over votes."""
        m, first, second, n = self.m, self.first[:data], self.second[:data], data
        low, high = np.minimum(first, second), np.maximum(first, second)
        given = np.zeros(n, np.int64) if clusters is None else pd.factorize(np.asarray(clusters))[0]
        codes = np.arange(n) if clusters is None else pd.factorize(
            (low * m + high) * (int(given.max(initial=0)) + 1) + given)[0]
        groups = int(codes.max(initial=-1)) + 1
        residual = self.residual(prob)[:data]
        signed = np.bincount(codes, np.where(first == low, residual, -residual), groups)
        scores = self.scores(prob)[:data]
        sums = np.column_stack([np.bincount(codes, f, groups) for f in scores.T]) if scores.shape[1] else \
            np.zeros((groups, 0))
        head = np.zeros(groups, np.int64)
        head[codes] = np.arange(n)  # a vote of each cluster, for its pair
        meat = gram(low[head], high[head], signed ** 2, signed[:, None] * sums, sums, m)
        correction = groups / max(groups - 1, 1) * (n - 1) / max(n - len(bread), 1)  # CR1, statsmodels' correction
        return correction * bread @ meat @ bread, groups


def gram(low: np.ndarray, high: np.ndarray, pair_weights: np.ndarray, cross: np.ndarray, features: np.ndarray,
          n_models: int) -> np.ndarray:
    """sum_i t_i t_i' over rows t_i = [w_i (e_low - e_high), f_i] without model 0's column, from per-row pair
    weights w_i^2 (``pair_weights``), cross terms w_i f_i (``cross``) and features f_i: sums per model
    (np.bincount), never a rows x models matrix."""
    m = n_models
    pair = np.bincount(low * m + high, pair_weights, m * m).reshape(m, m)
    laplacian = np.diag(pair.sum(axis=0) + pair.sum(axis=1)) - pair - pair.T
    by_model = np.column_stack([(np.bincount(low, c, m) - np.bincount(high, c, m))[1:] for c in cross.T]) \
        if cross.shape[1] else np.zeros((m - 1, 0))
    return np.block([[laplacian[1:, 1:], by_model], [by_model.T, features.T @ features]])


def solve(matrix: np.ndarray, target: np.ndarray) -> np.ndarray:
    """matrix^-1 target by Cholesky (the Hessian is positive definite where every model won and lost); least
    squares where it is singular (a model that never lost: its strength runs off, and is reported as such)."""
    from scipy import linalg

    try:
        return linalg.cho_solve(linalg.cho_factor(matrix), target)
    except linalg.LinAlgError:
        return np.linalg.lstsq(matrix, target, rcond=None)[0]


_BLAS = None


def one_blas_thread():
    """A context that runs BLAS on one thread. threadpoolctl finds the loaded BLAS libraries once (scipy's and
    numpy's, both loaded here first): a fresh ``threadpool_limits`` scans every shared object of the process each
    time, 5 ms, which was a fifth of fragility's thousands of small fits."""
    global _BLAS
    if _BLAS is None:
        from scipy import linalg  # noqa: F401 (scipy's OpenBLAS loaded before the scan)
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController().select(user_api="blas")
    return _BLAS.limit(limits=1)
