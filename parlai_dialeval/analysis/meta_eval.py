"""Meta-evaluation: how well automatic metric scores agree with human scores.

Pearson, Spearman and Kendall correlations with p-values and paired percentile-bootstrap confidence
intervals (scipy.stats), between metric and human scores at item level (Mehri & Eskenazi 2020,
Table 6: each FED item against the mean of its annotations) or system level (Ji et al. 2022,
Tables 5-6: one score per model).

Spearman's p with EXACT_UP_TO keys or fewer is exact (every pairing of the two rankings): scipy's t
approximation, meant for large samples, gave p = 0 for four systems ranked alike, where the exact p is 1/12.
Pearson's p is scipy's t-test and Kendall's scipy's (exact without ties). A bootstrap interval is empty where
it does not exist (too few keys: resamples with one side constant).
"""
from __future__ import annotations

import warnings
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

METHODS = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
EXACT_UP_TO = 8  # 8! = 40,320 pairings take 0.1 s; 9! take 5 s and 10! 2 GB


def correlate(x: Sequence[float], y: Sequence[float], n_resamples: int = 1000, confidence: float = 0.95,
              seed: int = 0) -> dict:
    """Correlations of paired values (pairs with a missing value dropped and counted in ``n``)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    out: dict = {"n": int(len(x))}
    constant = len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0
    for name, method in METHODS.items():
        if constant:
            out |= {name: np.nan, f"{name}_p": np.nan, f"{name}_lo": np.nan, f"{name}_hi": np.nan}
            continue
        result = method(x, y)
        out[name], out[f"{name}_p"] = float(result.statistic), float(result.pvalue)
        if name == "spearman" and len(x) <= EXACT_UP_TO:
            out[f"{name}_p"] = float(stats.pearsonr(stats.rankdata(x), stats.rankdata(y),
                                                    method=stats.PermutationMethod(n_resamples=np.inf)).pvalue)
        lo = hi = np.nan
        if n_resamples > 0:
            with warnings.catch_warnings():  # a degenerate resample makes the interval nan, said as empty
                warnings.simplefilter("ignore", (stats.ConstantInputWarning, stats.DegenerateDataWarning))
                ci = stats.bootstrap((x, y), lambda a, b: method(a, b).statistic, paired=True, vectorized=False,
                                     n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                                     rng=np.random.default_rng(seed)).confidence_interval
            lo, hi = float(ci.low), float(ci.high)
        out[f"{name}_lo"], out[f"{name}_hi"] = lo, hi
    return out


def correlation_table(human: pd.DataFrame, metric: pd.DataFrame, pairs: Iterable[tuple[str, str]],
                      groups: pd.Series | None = None, **kwargs) -> pd.DataFrame:
    """One row per (group,) human criterion and metric column that both have values. ``human`` and
    ``metric`` are indexed by the same keys (items or models); ``groups`` (same index) splits the
    keys, e.g. by FED level. Only keys present in both frames count."""
    joined = human.add_prefix("human:").join(metric.add_prefix("metric:"), how="inner")
    if groups is not None:
        joined = joined.assign(_group=groups.reindex(joined.index))
    parts = joined.groupby("_group", sort=True) if groups is not None else [(None, joined)]
    rows = []
    for key, part in parts:
        for criterion, column in pairs:
            h, m = part.get("human:" + criterion), part.get("metric:" + column)
            if h is None or m is None or h.isna().all() or m.isna().all():
                continue
            row = {"group": key} if groups is not None else {}
            rows.append(row | {"human": criterion, "metric": column} | correlate(h, m, **kwargs))
    return pd.DataFrame(rows)


def item_human_scores(ratings: pd.DataFrame) -> pd.DataFrame:
    """Mean rating per item (conversation_id) and criterion, one column per criterion."""
    if ratings.empty:
        return pd.DataFrame()
    values = ratings.assign(value=pd.to_numeric(ratings["value"], errors="raise"))
    return values.pivot_table(index="conversation_id", columns="criterion", values="value", aggfunc="mean")
