"""Provisional results (issue 43): too few fresh votes, or one of several variants tested against the same
opponents; the reason in words, in the pairwise report and in the dashboard's adaptive view."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.analysis import provisional


def votes(pairs):
    """(model_a, model_b, count) -> that many comparisons, each its own item."""
    rows = []
    for a, b, count in pairs:
        rows += [{"item_id": f"{a}-{b}-{n}", "worker_id": f"w{n % 4}", "model_a": a, "model_b": b,
                  "choice": "a" if n % 3 else "b"} for n in range(count)]
    return pd.DataFrame(rows)


def test_a_model_with_few_votes_is_provisional_with_its_count():
    frame = votes([("old", "base", 150), ("new", "base", 20)])
    table = provisional.from_comparisons(frame, min_votes=100).set_index("model")
    assert list(table["votes"]) == [170, 20, 150]  # base, new, old
    assert not table.loc["old", "provisional"] and not table.loc["base", "provisional"]
    assert table.loc["new", "provisional"] and table.loc["new", "reason"] == "20 fresh votes, fewer than 100"


def test_automatic_ties_are_no_votes_and_fresh_since_counts_only_new_votes():
    frame = votes([("x", "y", 120)])
    frame["automatic"] = [n < 30 for n in range(120)]
    frame["submit_time"] = pd.date_range("2026-01-01", periods=120, freq="h", tz="UTC").astype(str)
    plain = provisional.from_comparisons(frame, min_votes=100).set_index("model")
    assert plain.loc["x", "votes"] == 90 and plain.loc["x", "provisional"]
    fresh = provisional.from_comparisons(frame.assign(automatic=False), min_votes=100,
                                         fresh_since="2026-01-02T00:00:00Z").set_index("model")
    assert fresh.loc["x", "votes"] == 120 and fresh.loc["x", "fresh_votes"] == 96
    assert fresh.loc["x", "reason"] == "96 fresh votes, fewer than 100"


def test_variants_against_the_same_opponents_are_provisional_however_many_votes():
    frame = votes([(f"lab-exp-{k}", opponent, 200) for k in (1, 2, 3) for opponent in ("gpt", "claude")]
                  + [("lab-exp-9", "mistral", 200), ("gpt", "claude", 200)])
    table = provisional.from_comparisons(frame, min_votes=100, pattern=r"(.+)-exp-\d+").set_index("model")
    assert table.loc["lab-exp-1", "provisional"] and table.loc["lab-exp-1", "variants"] == 3
    assert table.loc["lab-exp-1", "reason"] == ("one of 3 variants of 'lab' tested against the same opponents "
                                               "(lab-exp-2, lab-exp-3): the best of several tries scores too high")
    # the same family, other opponents: not a variant tested against the same ones
    assert not table.loc["lab-exp-9", "provisional"] and table.loc["lab-exp-9", "family"] == "lab"
    assert not table.loc["gpt", "provisional"]
    mapped = provisional.from_comparisons(frame, variants={"lab-exp-1": "lab", "lab-exp-2": "lab"}).set_index("model")
    assert mapped.loc["lab-exp-2", "variants"] == 2 and not mapped.loc["lab-exp-3", "provisional"]


def test_the_pairwise_report_marks_provisional_models(tmp_path):
    from parlai_dialeval.scripts.analyze_pairwise import PairwiseConfig, analyze

    frame = votes([("old", "base", 60), ("new", "base", 8)])
    result = analyze(frame, tmp_path, PairwiseConfig(bootstrap_rounds=5, provisional_votes=50), log=lambda *_: None)
    table = pd.read_csv(tmp_path / "provisional.csv").set_index("model")
    assert list(table["provisional"]) == [False, True, False]
    assert result["provisional"].set_index("model").loc["new", "reason"] == "8 fresh votes, fewer than 50"
    html = (tmp_path / "report.html").read_text()
    assert "1 model(s) are provisional: new (8 fresh votes, fewer than 50)" in html


def test_the_dashboards_adaptive_view_marks_provisional_models():
    from parlai_dialeval.dashboard.adaptive_view import provisional_of

    pairs = [("a", "b", 120), ("a", "c", 3)]
    marked = provisional_of(pairs)
    assert marked == [{"model": "c", "reason": "3 fresh votes, fewer than 100"}]
