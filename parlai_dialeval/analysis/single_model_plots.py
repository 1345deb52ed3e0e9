"""Figures of the single-model analysis (matplotlib); each function returns a figure, the report saves it."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def success_by_turn(turn: pd.DataFrame):
    """SM-Turn success rate (%) by Bot Speaker turn, one panel per criterion, one line per model."""
    criteria = sorted(turn["criterion"].unique())
    fig, axes = plt.subplots(1, len(criteria), figsize=(4 * len(criteria), 3.2), squeeze=False)
    for ax, criterion in zip(axes[0], criteria):
        part = turn[turn["criterion"] == criterion]
        for model, frame in part.groupby("model"):
            curve = frame.groupby("bot_turn")["value"].mean() * 100
            ax.plot(curve.index, curve.to_numpy(), marker="o", label=model)
        ax.set_title(criterion)
        ax.set_xlabel("Bot Speaker turn")
        ax.set_ylabel("success rate (%)")
    axes[0][0].legend(fontsize="small")
    return fig
