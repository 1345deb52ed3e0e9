"""Figures of the time-to-significance analysis (Smith et al. 2022, Figures 7-9 and 11-13)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def hours_by_technique(part: pd.DataFrame, title: str):
    """Horizontal bars of worker hours to significance, one group per technique, one bar per metric;
    None when no hour is known."""
    pivot = part.pivot_table(index="technique", columns="metric", values="hours_needed", aggfunc="first")
    if not pivot.notna().any().any():
        return None
    fig, ax = plt.subplots(figsize=(7, 3.5))
    pivot.plot.barh(ax=ax)
    ax.set_xlabel("worker hours to significance")
    ax.set_title(title)
    return fig
