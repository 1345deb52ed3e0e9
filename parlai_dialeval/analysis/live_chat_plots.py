"""Figures of the live-chat analysis, as matplotlib figures (the caller saves them): the significance
heatmap (Ji et al. Figure 3), rater agreement (Figure 2), system scores, and worker p-values."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap  # noqa: E402

from parlai_dialeval.analysis.palette import OKABE_ITO  # noqa: E402

# darker = smaller p, in one hue (Okabe-Ito blue to a pale blue): read alike by the colour-blind and in
# greyscale print, unlike the paper's green-to-yellow
SIG_CMAP = LinearSegmentedColormap.from_list("sig", [OKABE_ITO[4], "#c6e3f5"])


def _label(models, labels: dict | None) -> list[str]:
    labels = labels or {}
    return [labels.get(m, m) for m in models]


def significance_heatmap(matrix: pd.DataFrame, labels: dict | None = None, threshold: float = 0.1,
                         title: str = ""):
    """Coloured cell: the row's model beat the column's model with p below ``threshold`` (darker green =
    smaller p); blank otherwise. Rows and columns in system-score order, as the paper's Figure 3."""
    values = matrix.to_numpy(dtype=float)
    masked = np.ma.masked_where(~(values < threshold), values)
    size = max(4.0, 0.45 * len(matrix) + 2)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(masked, cmap=SIG_CMAP, vmin=0.0, vmax=threshold)
    ticks = np.arange(len(matrix))
    ax.set_xticks(ticks, _label(matrix.columns, labels), rotation=90 if len(matrix) > 12 else 0)
    ax.set_yticks(ticks, _label(matrix.index, labels))
    ax.xaxis.tick_top()
    ax.set_xticks(ticks - 0.5, minor=True)
    ax.set_yticks(ticks - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, shrink=0.8, ticks=[0, threshold / 2, threshold])
    bar.set_label("p (row beats column)")
    if title:
        ax.set_title(title, pad=30)
    return fig


def agreement_histogram(passed: np.ndarray, failed: np.ndarray, title: str = ""):
    """Figure 2: distribution of Pearson r between pairs of workers who rated the same HIT."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    bins = np.linspace(-1, 1, 21)
    # blue and vermillion (Okabe-Ito), the second hatched: told apart without colour too
    for values, colour, hatch, name in ((passed, OKABE_ITO[4], "", "passed"), (failed, OKABE_ITO[5], "//", "failed")):
        if len(values):
            ax.hist(values, bins=bins, alpha=0.55, color=colour, hatch=hatch, edgecolor=colour,
                    label=f"{name} QC ({len(values):,} pairs)")
    ax.set_xlim(-1, 1)
    ax.set_xticks(np.linspace(-1, 1, 11))
    ax.set_xlabel("Pearson r between two workers' ratings of the same HIT")
    ax.set_ylabel("pairs of workers")
    ax.legend(frameon=False)
    if title:
        ax.set_title(title)
    return fig


def overall_scores(intervals: pd.DataFrame, labels: dict | None = None, title: str = ""):
    """Mean per-conversation overall z per model with its t interval (``steps.overall_intervals``), in the
    table's order, best at the top."""
    fig, ax = plt.subplots(figsize=(6.5, max(2.5, 0.35 * len(intervals) + 1)))
    y = np.arange(len(intervals))[::-1]
    mean = intervals["mean"].to_numpy(dtype=float)
    low, high = intervals["ci_low"].to_numpy(dtype=float), intervals["ci_high"].to_numpy(dtype=float)
    err = np.vstack([mean - low, high - mean])
    ax.errorbar(mean, y, xerr=np.nan_to_num(err), fmt="o", color="tab:blue", capsize=3)
    ax.axvline(0, color="#999", linewidth=0.8)
    ax.set_yticks(y, _label(intervals["model"], labels))
    ax.set_xlabel("overall z (mean of the statements), 95% t interval")
    if title:
        ax.set_title(title)
    return fig


def worker_p_values(p: np.ndarray, alpha: float):
    """Histogram of the workers' quality-control p-values with the pass threshold."""
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    p = p[np.isfinite(p)]
    ax.hist(p, bins=np.linspace(0, 1, 41), color="tab:gray")
    ax.axvline(alpha, color="tab:red", linestyle="--", label=f"alpha = {alpha:g}")
    ax.set_xlabel("quality-control p-value (QC bot rated lower than genuine models)")
    ax.set_ylabel("workers")
    ax.legend(frameon=False)
    return fig
