"""Anytime-valid tests of "model i beats model j" that stay valid however often anyone looks.

A betting e-process (Waudby-Smith & Ramdas, JRSS-B 2024) on bounded outcomes Y in [0, 1] (i wins 1, tie
1/2, j wins 0; for per-turn data the mean over one conversation): the wealth of a gambler who bets a
fraction lambda_t, chosen before Y_t, against H0: E[Y] <= 1/2 is prod(1 + lambda_t (Y_t - 1/2)), a
nonnegative supermartingale under H0, so by Ville's inequality it ever reaches 1/alpha with probability at
most alpha. Two bettors, each with half the starting wealth: the average of a grid of fixed bets
(../shared/notes/adaptive_evaluation.md, sections 3 and 5), strong for small edges, and the
variance-adaptive aGRAPA bet, strong for large edges and spread-out outcomes; an average of test
supermartingales is one too (benchmarks/bench_certify_bets.py chose it; docs/adaptive_evaluation.md).
Hand-written: no maintained Python package provides it for Python 3.11 (confseq has no wheel and needs Boost).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parlai_dialeval.adaptive.ppi_sequential import agrapa_bet_pair, agrapa_bets

BETS = np.linspace(0.025, 0.5, 20)  # the note's grid; every bet keeps wealth positive for any p0 in [0, 1]
NULL_WIN_RATE = 0.5
AGRAPA_SHARE = 0.5  # share of the starting wealth given to the aGRAPA bettor; the rest to the grid
LOG_CAP = 700.0  # wealth capped at e^700, below float overflow and far beyond any threshold


def grid_paths(outcomes: np.ndarray, sign: int = 1, p0=NULL_WIN_RATE) -> np.ndarray:
    """Grid-averaged wealth against ``p0`` after each outcome (outcomes along the last axis; an array of
    null values adds leading axes), betting that the mean is above p0 (sign=1) or below it (sign=-1)."""
    return np.exp(np.minimum(np.cumsum(_grid_log_steps(outcomes, sign, p0), axis=-1), LOG_CAP)).mean(axis=0)


def _grid_log_steps(outcomes, sign: int, p0) -> np.ndarray:
    """Each fixed bet's log-wealth step on each outcome: axes (bet, null values..., outcome)."""
    diff = np.asarray(outcomes, dtype=float) - np.asarray(p0, dtype=float)[..., None]
    return np.log1p(sign * BETS.reshape((-1,) + (1,) * diff.ndim) * diff)


def grid_final(outcomes: np.ndarray, sign: int = 1, p0=NULL_WIN_RATE) -> np.ndarray:
    """grid_paths' last value (axes as grid_paths, less the outcomes' axis): a fixed bet's final log-wealth is
    a sum over outcomes, so it needs only how often each distinct outcome occurred (two or three values for
    votes): the confidence set's 501 nulls x 20 bets cost as many steps as distinct outcomes, not outcomes."""
    values, counts = np.unique(np.asarray(outcomes, dtype=float), return_counts=True)
    return np.exp(np.minimum(_grid_log_steps(values, sign, p0) @ counts.astype(float), LOG_CAP)).mean(axis=0)


def agrapa_paths(outcomes: np.ndarray, sign: int = 1, p0=NULL_WIN_RATE) -> np.ndarray:
    """Wealth against ``p0`` after each outcome (axes as grid_paths) of the variance-adaptive aGRAPA bet,
    chosen before each outcome from the mean and variance of the earlier ones
    (parlai_dialeval.adaptive.ppi_sequential.agrapa_bets, the judge's e-process without a judge)."""
    y = np.asarray(outcomes, dtype=float)
    null = np.asarray(p0, dtype=float)[..., None]
    n = np.arange(y.shape[-1], dtype=float)
    past = np.maximum(n, 1)
    mean = (np.cumsum(y, axis=-1) - y) / past
    var = np.maximum((np.cumsum(y * y, axis=-1) - y * y) / past - mean ** 2, 0.0)
    above, below = agrapa_bets(n, mean, var, null=null)
    bet = above if sign == 1 else -below
    return np.exp(np.minimum(np.cumsum(np.log1p(bet * (y - null)), axis=-1), LOG_CAP))


def wealth_paths(outcomes: np.ndarray, sign: int = 1, p0=NULL_WIN_RATE) -> np.ndarray:
    """certify's wealth against ``p0`` (1/2 unless given) after each outcome (axes as grid_paths): the
    grid's and aGRAPA's, weighted by their shares of the starting wealth; sign=1 bets on "mean above p0",
    -1 below."""
    return ((1 - AGRAPA_SHARE) * grid_paths(outcomes, sign, p0)
            + AGRAPA_SHARE * agrapa_paths(outcomes, sign, p0))


def e_value(outcomes: np.ndarray) -> float:
    """Largest wealth reached against H0: E[Y] <= 1/2. Evidence never expires: a claim made at any look
    stays made (the running maximum is what Ville's inequality bounds)."""
    if len(outcomes) == 0:
        return 1.0
    return max(1.0, float(np.max(wealth_paths(outcomes))))  # the wealth starts at 1


def agrapa_log_steps(n: int, total: float, squares: float, outcome: float) -> tuple[float, float]:
    """One outcome's log-wealth steps of aGRAPA's bets on "above 1/2" and "below", after ``n`` outcomes with
    sum ``total`` and sum of squares ``squares``: agrapa_paths one outcome at a time (adaptive collection)."""
    mean = total / n if n else 0.0
    var = max(squares / n - mean ** 2, 0.0) if n else 0.0
    above, below = agrapa_bet_pair(n, mean, var)
    return math.log1p(above * (outcome - NULL_WIN_RATE)), math.log1p(-below * (outcome - NULL_WIN_RATE))


def combined_wealth(log_grid: np.ndarray, log_agrapa: float) -> float:
    """wealth_paths' value from the grid's log-wealths (one per bet) and aGRAPA's log-wealth."""
    grid = np.exp(np.minimum(log_grid, LOG_CAP))
    return float((1 - AGRAPA_SHARE) * (grid.sum() / grid.size)  # = grid.mean(), bit for bit, without its overhead
                 + AGRAPA_SHARE * math.exp(min(log_agrapa, LOG_CAP)))


def confidence_sequence(outcomes: np.ndarray, alpha: float, resolution: float = 0.002) -> tuple[float, float]:
    """The two-sided betting confidence set for the mean win rate after the last outcome, at level
    alpha: one member of a sequence that covers the mean at every sample size at once, so it may be
    read at any look. Returns (low, high), to ``resolution``; (0, 1) before any outcome."""
    if len(outcomes) == 0:
        return 0.0, 1.0
    grid = np.arange(0.0, 1.0 + resolution / 2, resolution)
    inside = np.concatenate([_hedged_final(outcomes, chunk) < 1 / alpha for chunk in np.array_split(grid, 20)])
    if not inside.any():  # the set is narrower than the grid's resolution
        mean = float(np.mean(outcomes))
        return mean, mean
    return float(grid[inside].min()), float(grid[inside].max())


def _hedged_final(outcomes: np.ndarray, p0: np.ndarray) -> np.ndarray:
    """Wealth after the last outcome of the two-sided (hedged) bet against each null value in ``p0``:
    half the wealth on each direction, each with certify's two bettors (wealth_paths' last value)."""
    return 0.5 * sum((1 - AGRAPA_SHARE) * grid_final(outcomes, sign, p0)
                     + AGRAPA_SHARE * agrapa_paths(outcomes, sign, p0)[..., -1] for sign in (1, -1))


def certification_threshold(n_models: int, alpha: float) -> float:
    """Wealth a claim "i beats j" must reach: 1/alpha per ordered pair, Bonferroni over all K(K-1) of
    them, because ties make both directions true nulls and the pairs looked at are chosen from the data."""
    return n_models * (n_models - 1) / alpha


@dataclass(frozen=True)
class PairEvidence:
    """Head-to-head evidence of ``model`` against ``other`` (outcomes in [0, 1], 1 = ``model`` wins)."""

    model: str
    other: str
    units: int
    mean: float
    e_value: float
    cs_low: float
    cs_high: float
    certified: bool
