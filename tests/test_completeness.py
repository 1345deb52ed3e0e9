"""Judgments of unfinished conversations stay in the data but out of the statistics (issue 20 item 1)."""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from parlai_dialeval.analysis.completeness import finished_only
from parlai_dialeval.data import from_records


def records_with_one_unfinished(kind: str):
    """The synthetic SM/PW study with one conversation that has ``kind`` judgments marked incomplete."""
    from test_single_model import synthetic_records

    records = synthetic_records()
    if kind == "rating":
        target = next(r["conversation_id"] for r in records if r["type"] == "rating" and r.get("turn_index") is not None)
    else:
        target = next(r["item_id"] for r in records if r["type"] == "comparison" and r.get("turn_index") is not None)
    for record in records:
        if record["type"] == "conversation" and record["id"] == target:
            record["status"] = "incomplete"
    return records, target


def test_finished_only_counts_what_it_leaves_out():
    conversations = pd.DataFrame({"id": ["a", "b", "c", "d"], "status": [None, "complete", "incomplete", "onboarding"]})
    ratings = pd.DataFrame({"conversation_id": ["a", "b", "c", "c", "d"]})
    comparisons = pd.DataFrame({"item_id": ["x", "c"], "conversation_a": ["a", None], "conversation_b": ["c", None]})
    kept_ratings, kept_comparisons, left_out = finished_only(ratings, comparisons, conversations)
    assert list(kept_ratings["conversation_id"]) == ["a", "b", "d"] and kept_comparisons.empty
    assert left_out == {"ratings of conversations not complete (status)": 2,
                        "comparisons of conversations not complete (status)": 2}


def test_single_model_success_rates_leave_out_unfinished_conversations(tmp_path):
    from parlai_dialeval.scripts.analyze_single_model import analyze

    records, _ = records_with_one_unfinished("rating")
    full = analyze(from_records(_all_complete(records)), tmp_path / "full")
    partial = analyze(from_records(records), tmp_path / "partial")
    rates = lambda r: r["success_rates"].query("turns == 'all'").set_index(["model", "criterion"])["n_conversations"]
    assert (rates(full) - rates(partial)).max() == 1 and (rates(full) - rates(partial)).min() >= 0
    assert "Left out" in (tmp_path / "partial" / "report.html").read_text()


def test_pairwise_leaves_out_turns_of_unfinished_conversations(tmp_path):
    from parlai_dialeval.scripts.analyze_pairwise import AnalyzePairwise, PairwiseConfig

    records, target = records_with_one_unfinished("comparison")
    data = from_records(records)
    turns_of_target = int((data.comparisons["item_id"] == target).sum())
    result = AnalyzePairwise.analyse(SimpleNamespace(evidence=None), data, PairwiseConfig(bootstrap_rounds=10), None, tmp_path)
    assert result["summary"]["left_out"] == {"comparisons of conversations not complete (status)": turns_of_target}
    assert result["conversation_tests"]["conversations"].sum() == data.comparisons.query(
        "turn_index == turn_index")["item_id"].nunique() - 1


def _all_complete(records):
    return [dict(r, status="complete") if r["type"] == "conversation" and r.get("status") == "incomplete" else r
            for r in records]
