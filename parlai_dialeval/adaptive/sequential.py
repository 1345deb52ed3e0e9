"""Anytime-valid tests of "model i beats model j" that stay valid however often anyone looks.

A betting e-process (Waudby-Smith & Ramdas, JRSS-B 2024) on bounded outcomes Y in [0, 1] (i wins 1, tie
1/2, j wins 0; for per-turn data the mean over one conversation): the wealth of a gambler who bets a
fraction lambda against H0: E[Y] <= p0 is prod(1 + lambda (Y - p0)), a nonnegative supermartingale under
H0, so by Ville's inequality it ever reaches 1/alpha with probability at most alpha. Averaging the wealth
of a grid of fixed bets keeps that property and adapts to the unknown win rate
(../shared/notes/adaptive_evaluation.md, sections 3 and 5). Hand-written: no maintained Python package
provides it for Python 3.11 (confseq has no wheel and needs Boost).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BETS = np.linspace(0.025, 0.5, 20)  # the note's grid; every bet keeps wealth positive for any p0 in [0, 1]
NULL_WIN_RATE = 0.5


def _log_steps(outcomes: np.ndarray, p0: np.ndarray, sign: int) -> np.ndarray:
    """log(1 + sign * bet * (Y - p0)), shape (null value, bet, outcome)."""
    y = np.asarray(outcomes, dtype=float)
    return np.log1p(sign * BETS[None, :, None] * (y[None, None, :] - np.atleast_1d(p0)[:, None, None]))


def wealth_paths(outcomes: np.ndarray, p0: float = NULL_WIN_RATE, sign: int = 1) -> np.ndarray:
    """Grid-averaged wealth after each outcome, betting that the mean is above p0 (sign=1) or below it
    (sign=-1)."""
    return np.exp(np.cumsum(_log_steps(outcomes, p0, sign), axis=2)).mean(axis=1)[0]


def e_value(outcomes: np.ndarray, p0: float = NULL_WIN_RATE) -> float:
    """Largest wealth reached against H0: E[Y] <= p0. Evidence never expires: a claim made at any look
    stays made (the running maximum is what Ville's inequality bounds)."""
    if len(outcomes) == 0:
        return 1.0
    return max(1.0, float(np.max(wealth_paths(outcomes, p0))))  # the wealth starts at 1


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
    """Wealth after the last outcome of the two-sided (hedged) bet against each null value in ``p0``."""
    return 0.5 * sum(np.exp(_log_steps(outcomes, p0, sign).sum(axis=2)).mean(axis=1) for sign in (1, -1))


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
