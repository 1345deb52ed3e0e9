"""Figures of the rating-scale design analysis (matplotlib); each function returns a figure, the report
saves it."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def icc_bars(icc: pd.DataFrame):
    """ICC consistency (C) and agreement (A) per design and criterion, from the ``all workers`` rows."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    icc.set_index(["design", "criterion"])[["icc_c", "icc_a"]].plot.bar(ax=ax)
    ax.set_ylabel("ICC")
    ax.set_title("ICC consistency (C) and agreement (A)")
    return fig
