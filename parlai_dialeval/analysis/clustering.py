"""How far judgments of one conversation move together, and what that does to per-turn tests.

Smith et al.'s per-turn binomial test (App. F) treats every turn as an independent vote, but turns of
one conversation share a partner, a topic and a worker. With an intraclass correlation of 0.1-0.3
between them its false-positive rate is 0.10-0.21 instead of 0.05
(../shared/notes/adaptive_evaluation.md, section 4), so the analyses test by conversation beside it and
report the correlation.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

# Above this intraclass correlation the per-turn test's independence assumption is called doubtful.
DOUBTFUL_ICC = 0.05


def icc_oneway(values: np.ndarray, clusters: np.ndarray) -> float:
    """ICC(1) from a one-way ANOVA with unequal cluster sizes (n0 of Donner 1986). pingouin's
    intraclass_corr needs every target rated by the same raters, which conversations of different
    lengths are not, hence this formula. NaN with fewer than two clusters or no within-cluster spread."""
    frame = pd.DataFrame({"y": np.asarray(values, dtype=float), "c": np.asarray(clusters)})
    groups = frame.groupby("c", sort=False)["y"]
    sizes, means = groups.size().to_numpy(float), groups.mean().to_numpy()
    k, n = len(sizes), sizes.sum()
    if k < 2 or n <= k:
        return float("nan")
    grand = frame["y"].mean()
    msb = float(np.sum(sizes * (means - grand) ** 2) / (k - 1))
    msw = float(((frame["y"] - groups.transform("mean")) ** 2).sum() / (n - k))
    n0 = (n - np.sum(sizes ** 2) / n) / (k - 1)
    denominator = msb + (n0 - 1) * msw
    return float((msb - msw) / denominator) if denominator > 0 else float("nan")


def design_effect(icc: float, mean_cluster_size: float) -> float:
    """How many times the variance of a mean grows because clusters hold correlated judgments (Kish)."""
    return 1 + (mean_cluster_size - 1) * icc if np.isfinite(icc) else float("nan")
