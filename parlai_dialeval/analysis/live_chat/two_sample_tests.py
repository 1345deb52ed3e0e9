"""Batched one-sided two-sample tests: one scipy call per group of equal sample sizes.

The Mann-Whitney tests reproduce ``scipy.stats.mannwhitneyu(method="auto")`` called once per group
(exact p without ties when either sample has at most 8 values, else the normal approximation with
continuity and tie corrections), but run batched: groups are split by sample sizes and by whether
their samples hold ties, and each part is one vectorised call (scipy has no ragged batch API).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats


def _rows_have_ties(matrix: np.ndarray) -> np.ndarray:
    ordered = np.sort(matrix, axis=1)
    return (np.diff(ordered, axis=1) == 0).any(axis=1)


def grouped_test(values: np.ndarray, groups: np.ndarray, first: np.ndarray, n_groups: int,
                 test: str = "mannwhitney", alternative: str = "less") -> np.ndarray:
    """One-sided test per group that the ``first`` values are lower ('less') than the others.

    ``groups`` are integer codes 0..n_groups-1. Returns p per group (NaN when a side is empty).
    Groups with equal sample sizes run as one vectorised scipy call; for Mann-Whitney the exact or
    asymptotic method is chosen per group exactly as ``method="auto"`` would for that group alone.
    """
    p = np.full(n_groups, np.nan)
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups, dtype=np.int64)
    first = np.asarray(first, dtype=bool)
    order = np.lexsort((~first, groups))  # by group, "first" rows before the others
    g, f, v = groups[order], first[order], values[order]
    n1 = np.bincount(g[f], minlength=n_groups)
    n2 = np.bincount(g[~f], minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(n1 + n2)[:-1]])
    sizes = pd.DataFrame({"n1": n1, "n2": n2})
    sizes = sizes[(sizes["n1"] > 0) & (sizes["n2"] > 0)]
    for (a, b), members in sizes.groupby(["n1", "n2"]).groups.items():
        members = np.asarray(members)
        index = starts[members][:, None] + np.arange(a + b)[None, :]
        matrix = v[index]
        x, y = matrix[:, :a], matrix[:, a:]
        if test == "ttest":
            with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # constant samples: p is nan, said below
                result = stats.ttest_ind(x, y, axis=1, equal_var=False, alternative=alternative)
            p[members] = result.pvalue
            continue
        if a > 8 and b > 8:
            methods = {"asymptotic": np.ones(len(members), bool)}
        else:
            ties = _rows_have_ties(matrix)
            methods = {"asymptotic": ties, "exact": ~ties}
        for method, rows in methods.items():
            if rows.any():
                with np.errstate(invalid="ignore", divide="ignore"):
                    result = stats.mannwhitneyu(x[rows], y[rows], alternative=alternative, axis=1,
                                                method=method)
                p[members[rows]] = result.pvalue
    return p


def two_sample_p(a: np.ndarray, b: np.ndarray, test: str = "mannwhitney", alternative: str = "greater") -> float:
    if len(a) == 0 or len(b) == 0:
        return math.nan
    if test == "ttest":
        return float(stats.ttest_ind(a, b, equal_var=False, alternative=alternative).pvalue)
    return float(stats.mannwhitneyu(a, b, alternative=alternative, method="auto").pvalue)
