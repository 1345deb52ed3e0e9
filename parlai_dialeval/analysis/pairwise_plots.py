"""Figures of the pairwise analysis (matplotlib): ranking intervals, Lee's WMT heatmap, win rate per
turn and histograms. Each function returns a figure; the report saves it."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from parlai_dialeval.analysis import pairwise  # noqa: E402

# ColorBrewer's RdBu: diverging, readable with the common colour-vision deficiencies and in greyscale
HEATMAP_CMAP = "RdBu"
# Arena scale: 200 models drew a 122-inch figure (a 720 MB image) with 40,000 numbers nobody can read.
# Bounded here; above HEATMAP_LABELLED models the cells carry no numbers (wmt_scores.csv holds them).
HEATMAP_MAX_INCHES = 24
HEATMAP_LABELLED = 40


def luminance(colour) -> float:
    """WCAG 2 relative luminance of a matplotlib colour (the formula is a few lines; no kept library has it)."""
    channels = np.array(to_rgb(colour))
    linear = np.where(channels <= 0.03928, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def contrast(one, other) -> float:
    """WCAG 2 contrast ratio, 1 to 21."""
    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def text_colour(background) -> str:
    """Black or white, whichever contrasts more with ``background`` (at least 4.58:1 for any colour)."""
    return "black" if contrast("black", background) >= contrast("white", background) else "white"


def rank_plot(ranks: pd.DataFrame):
    """Bradley-Terry strength per model with its interval (none where the bootstrap could not vary). The
    interval is drawn from its ends: on tiny samples a percentile interval need not contain the estimate."""
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(ranks) + 1))
    y = np.arange(len(ranks))[::-1]
    ax.hlines(y, ranks["bt_ci_low"].astype(float), ranks["bt_ci_high"].astype(float), color="tab:blue")
    ax.plot(ranks["bt_score"].astype(float), y, "o", color="tab:blue")
    labels = [f"{m} (part {c})" if ranks["component"].nunique() > 1 else str(m)
              for m, c in zip(ranks["model"], ranks["component"])]
    ax.set_yticks(y, labels)
    ax.set_xlabel("Bradley-Terry log-strength")
    return fig


def heatmap(wmt: pd.DataFrame, order: list[str]):
    """Rows win against columns: colour = major score, cell text = distinct score (Lee Figure 2), up to
    HEATMAP_LABELLED models."""
    major, distinct = pairwise.heatmap_matrices(wmt, order)
    size = min(0.6 * len(order) + 2, HEATMAP_MAX_INCHES)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(major.to_numpy(dtype=float), cmap=HEATMAP_CMAP, vmin=0, vmax=1)
    labelled = range(len(order)) if len(order) <= HEATMAP_LABELLED else range(0)
    for i in labelled:
        for j in labelled:
            value = distinct.iat[i, j]
            if not np.isnan(value):
                cell = image.cmap(image.norm(major.iat[i, j])) if not np.isnan(major.iat[i, j]) else "white"
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color=text_colour(cell))
    font = min(10.0, max(2.0, 72 * 0.8 * size / max(len(order), 1)))  # one label per cell row, at most 80% of it
    ax.set_xticks(range(len(order)), order, rotation=60, ha="right", fontsize=font)
    ax.set_yticks(range(len(order)), order, fontsize=font)
    ax.set_xlabel("against this model (column)")
    ax.set_ylabel("this model (row) wins")
    fig.colorbar(image, ax=ax, label="share of decided votes the row's model won")
    return fig


def turn_plot(per_turn: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(7, 4))
    for (a, b), part in per_turn.groupby(["model_a", "model_b"], sort=False):
        ax.plot(part["turn_number"], part["win_rate_a"], marker="o", label=f"{a} over {b}")
    ax.axhline(0.5, color="grey", lw=0.8)
    ax.set_xlabel("Bot Speaker turn")
    ax.set_ylabel("share of decided votes won by the first model")
    ax.legend(fontsize=7)
    return fig


def histogram(values: pd.Series, label: str, counted: str):
    """``values`` in [-1, 1] (correlations) as a histogram; ``counted``: what one value is (annotators, prompts)."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(values, bins=20, range=(-1, 1))
    ax.axvline(0, color="red", lw=0.8)
    ax.set_xlabel(label)
    ax.set_ylabel(counted)
    return fig
