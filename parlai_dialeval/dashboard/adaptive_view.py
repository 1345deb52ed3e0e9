"""The adaptive run's state for the page: the current ranking, each pair's e-values, the last batches'
allocation (read from the state file platform/adaptive/config.py writes after every batch), and the certify plot."""
from __future__ import annotations

import json
from pathlib import Path

LAST_BATCHES = 5


def read_state(data_dir: Path, task_name: str) -> dict | None:
    """The page's view of ``<data dir>/adaptive/<task name>.json`` (the launch's default ``adaptive_state``);
    None when the task has no adaptive state there."""
    from parlai_dialeval.adaptive.allocation import current_ranking
    from parlai_dialeval.adaptive.ledger import Ledger

    path = Path(data_dir) / "adaptive" / f"{task_name}.json"
    if not path.is_file():
        return None
    state = json.loads(path.read_text())
    ledger = Ledger.from_json(state["ledger"])
    pairs = [{"a": p.first, "b": p.second, "outcomes": p.n, "win_rate_a": p.mean if p.n else None,
              "e_a_beats_b": p.best_first, "e_b_beats_a": p.best_second,
              "certified": p.first if ledger.beats(p.first, p.second)
              else p.second if ledger.beats(p.second, p.first) else ""}
             for p in ledger.pairs.values()]
    batches = [{"batch": b["batch"], "hits": b["hits"], "read": b["read"],
                "pairs": _counts(b["pairs"])} for b in state["batches"][-LAST_BATCHES:]]
    return {"status": state["status"], "alpha": state["alpha"], "threshold": ledger.threshold,
            "ranking": state.get("ranking") or current_ranking(ledger),
            "provisional": provisional_of([(p.first, p.second, p.n) for p in ledger.pairs.values()]),
            "hits_emitted": state["hits_emitted"],
            "judgments": state["judgments"], "pairs": sorted(pairs, key=lambda p: (p["a"], p["b"])),
            "batches": batches[::-1], "path": str(path)}


def provisional_of(pairs: list[tuple[str, str, int]]) -> list[dict]:
    """The ranking's provisional models with the reason (analysis.provisional, default threshold), from each
    pair's outcomes so far."""
    from collections import defaultdict

    from parlai_dialeval.analysis.provisional import provisional_models

    votes, opponents = defaultdict(int), defaultdict(set)
    for first, second, n in pairs:
        votes[first] += n
        votes[second] += n
        opponents[first].add(second)
        opponents[second].add(first)
    table = provisional_models(dict(votes), opponents)
    return table.loc[table["provisional"], ["model", "reason"]].to_dict(orient="records")


def _counts(pairs: list[list[str]]) -> str:
    counts: dict[str, int] = {}
    for a, b in pairs:
        key = " vs ".join(sorted((a, b)))
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{key} x{n}" for key, n in sorted(counts.items()))


def certify_plot(records: list[dict], alpha: float) -> bytes | None:
    """PNG of ``dialeval certify``'s interval plot over the comparisons collected so far (None without any)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from parlai_dialeval.adaptive.certification import certify
    from parlai_dialeval.adaptive.certification_plots import interval_plot
    from parlai_dialeval.data import from_records

    comparisons = [dict(r) for r in records if r["type"] in ("study", "comparison") and not r.get("onboarding")]
    data = from_records(comparisons, source="dashboard")
    if data.comparisons.empty:
        return None
    pairs = certify(data.comparisons, alpha)
    if pairs.empty:
        return None
    figure = interval_plot(pairs)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()
