"""The dashboard's charts, drawn on the server as inline SVG (matplotlib; the page has no scripts, its
Content-Security-Policy allows none): progress over time, each bot's mean with its interval per criterion,
each pair's win rate with its interval. Colour-blind-safe colours (analysis/palette.py), series told apart
by line style too, text kept as text."""
from __future__ import annotations

import io

from parlai_dialeval.analysis.palette import LINES, MARKERS

WIDE, NARROW = 7.0, 4.2  # inches; SVG is 72 px an inch: about 500 and 300 px, side by side on a 1,280 px page


def _render(draw, height: float, width: float = WIDE) -> str:
    """``draw(axes)`` on a new figure, returned as an ``<svg>`` element to put in the page."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context({"svg.fonttype": "none", "font.size": 10, "svg.hashsalt": "dialeval"}):
        figure, axes = plt.subplots(figsize=(width, height))
        try:
            draw(axes)
            axes.spines[["top", "right"]].set_visible(False)
            buffer = io.StringIO()
            figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
        finally:
            plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # inline: without the XML declaration and doctype


def progress_chart(history: list[dict]) -> str | None:
    """Units done and in flight over time since the launch's first reading (platform/progress.py's samples, the
    last one the page's own reading); None while the counts have never changed: a flat line says nothing."""
    if len({(sample["done"], sample["in_flight"]) for sample in history}) < 2:
        return None
    start = history[0]["at"]
    hours = history[-1]["at"] - start > 3 * 3600
    times = [(sample["at"] - start) / (3600 if hours else 60) for sample in history]

    def draw(axes):
        axes.step(times, [sample["done"] for sample in history], where="post", color=LINES[0], label="units done")
        axes.step(times, [sample["in_flight"] for sample in history], where="post", color=LINES[1], linestyle="--",
                  label="in flight")
        axes.set_xlabel(f"{'hours' if hours else 'minutes'} since the launch began")
        axes.set_ylabel("units")
        axes.yaxis.get_major_locator().set_params(integer=True)
        axes.legend(loc="upper left", frameon=False)

    return _render(draw, 2.4)


def interval_chart(rows: list[dict], names: list[str], xlabel: str, reference: float | None = None,
                   limits: tuple[float, float] | None = None) -> str:
    """A dot per row at its ``mean`` (or ``win_rate_a``) with its ``ci_low``-``ci_high`` bar, top to bottom,
    labelled ``names``; a dotted line at ``reference`` (an even win rate)."""
    def draw(axes):
        for k, row in enumerate(rows):
            y = len(rows) - 1 - k
            if row.get("ci_low") is not None:
                axes.plot([row["ci_low"], row["ci_high"]], [y, y], color=LINES[0], linewidth=2.5,
                          solid_capstyle="butt")
            centre = row.get("mean", row.get("win_rate_a"))
            if centre is not None:
                axes.plot([centre], [y], marker=MARKERS[0], color=LINES[1], markersize=6, linestyle="none")
        axes.set_yticks(range(len(rows)), list(reversed(names)))
        axes.set_ylim(-0.6, len(rows) - 0.4)
        if limits is not None:
            axes.set_xlim(*limits)
        if reference is not None:
            axes.axvline(reference, color="#555555", linewidth=1, linestyle=":")
        axes.set_xlabel(xlabel)

    return _render(draw, 0.32 * len(rows) + 0.9, NARROW)
