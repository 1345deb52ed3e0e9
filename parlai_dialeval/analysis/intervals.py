"""Confidence intervals valid for the n at hand, shared by the analyses (scipy's t distribution, imported
where used so that commands' --help does not wait for scipy.stats)."""
from __future__ import annotations

import numpy as np
import pandas as pd

# Fewer rounds (resamples) than this make a percentile bootstrap interval noise: its ends are single draws
# from the tails, which need not even bracket the estimate (with 2 rounds they often do not).
MIN_BOOTSTRAP_ROUNDS = 100


def few_rounds(rounds: int) -> str:
    """Why percentile bootstrap intervals from ``rounds`` rounds are not to be read as intervals; "" from
    MIN_BOOTSTRAP_ROUNDS up, and for 0 (no bootstrap)."""
    if 0 < rounds < MIN_BOOTSTRAP_ROUNDS:
        return (f"only {rounds} bootstrap rounds: a percentile interval needs {MIN_BOOTSTRAP_ROUNDS} or more, and "
                "from fewer its ends are noise that need not bracket the estimate")
    return ""


def t_interval(values, alpha: float = 0.05) -> tuple[float, float]:
    """Student t interval of the mean (valid for small n, unlike mean +- 1.96 SE) of the values present
    (NaN left out, as the means beside it do); nan below two values and a zero-width interval when every
    value is equal."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) < 2:
        return np.nan, np.nan
    mean, se = values.mean(), stats.sem(values)
    if se == 0:
        return mean, mean
    return tuple(float(v) for v in stats.t.interval(1 - alpha, len(values) - 1, loc=mean, scale=se))


def mean_intervals(frame: pd.DataFrame, by: str, value: str, alpha: float = 0.05) -> pd.DataFrame:
    """Per group of ``by``: n (values present), mean, sd (ddof=1), ci_low, ci_high (t interval of ``value``)."""
    grouped = frame.groupby(by, sort=False)[value]
    out = grouped.agg(n="count", mean="mean", sd="std")
    bounds = grouped.apply(lambda v: t_interval(v, alpha))
    out["ci_low"], out["ci_high"] = [b[0] for b in bounds], [b[1] for b in bounds]
    return out.reset_index()
