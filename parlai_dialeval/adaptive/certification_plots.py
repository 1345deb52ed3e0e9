"""The figure of `dialeval certify` and the dashboard: each pair's win rate with its interval valid at
every look (adaptive/certification.py), settled pairs in blue."""
from __future__ import annotations


def interval_plot(pairs):
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.35 * len(pairs)))
    labels = [f"{a} vs {b}" for a, b in zip(pairs["model_a"], pairs["model_b"])]
    settled = pairs["certified_winner"].notna().to_numpy()
    y = np.arange(len(pairs))
    rate, low, high = (pairs[c].to_numpy(float) for c in ("win_rate_a", "cs_low", "cs_high"))
    for chosen, colour in ((settled, "tab:blue"), (~settled, "tab:gray")):
        ax.errorbar(rate[chosen], y[chosen], xerr=[rate[chosen] - low[chosen], high[chosen] - rate[chosen]],
                    fmt="o", color=colour, capsize=3)
    ax.axvline(0.5, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(list(y), labels, fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_xlabel("win rate of the first model")
    ax.invert_yaxis()
    return fig
