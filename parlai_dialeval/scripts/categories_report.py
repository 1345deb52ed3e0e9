"""The rankings-per-category sections of the pairwise and live-chat reports (results/sections/categories.py and
live_chat_categories.py compute them)."""
from __future__ import annotations


def view(report, part) -> None:
    if part is None:
        return
    k = len(part.members)
    report.heading("Rankings per category")
    report.text(f"{k} categories from {part.source} ("
                + ", ".join(f"{name}: {n}" for name, n in part.members.items())
                + f"); one may hold another's items. Each interval is at {100 * part.level:.4g}% "
                f"(Bonferroni: {100 * (1 - part.alpha):g}% over all {k} categories together).")
    empty = [name for name, n in part.members.items() if n == 0]
    if empty:
        report.warn(f"{len(empty)} categor{'y' if len(empty) == 1 else 'ies'} matched nothing: {', '.join(empty)}.")
    report.table(part.rankings, floatfmt="{:.3g}")


def pairwise_view(report, part, result=None, section=None) -> None:
    view(report, part)
