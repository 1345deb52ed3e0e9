"""dialeval compare_protocols: protocols side by side on the same models (issue 16)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.analysis import protocol_comparison as pc


def times_table():
    # Three models judged by two protocols; the second protocol reverses the first one's order. The
    # single-model one carries each model's mean score (mean_a, mean_b), the pairwise one none.
    means = {"a": 2.0, "b": 3.0, "c": 4.0}
    rows = []
    for technique, rates in (("pw_turn", {("a", "b"): 0.7, ("a", "c"): 0.8, ("b", "c"): 0.6}),
                             ("sm_dialog", {("a", "b"): 0.2, ("a", "c"): 0.1, ("b", "c"): 0.4})):
        for (x, y), rate in rates.items():
            single = technique == "sm_dialog"
            rows.append({"technique": technique, "metric": "engaging", "model_a": x, "model_b": y,
                         "win_rate_a": rate, "mean_a": means[x] if single else np.nan,
                         "mean_b": means[y] if single else np.nan,
                         "hours_needed": {"pw_turn": 2.0, "sm_dialog": 5.0}[technique]
                         if (x, y) != ("b", "c") else np.nan, "reached": (x, y) != ("b", "c")})
    return pd.DataFrame(rows)


def test_rankings_are_mean_win_rates_over_each_models_pairs():
    ranked = pc.rankings(times_table()).set_index(["technique", "model"])
    # pw_turn: a = (0.7 + 0.8) / 2, b = (0.3 + 0.6) / 2, c = (0.2 + 0.4) / 2, computed by hand
    assert ranked.loc[("pw_turn", "a"), "score"] == pytest.approx(0.75)
    assert ranked.loc[("pw_turn", "b"), "score"] == pytest.approx(0.45)
    assert ranked.loc[("pw_turn", "c"), "score"] == pytest.approx(0.30)
    assert [ranked.loc[("pw_turn", m), "rank"] for m in "abc"] == [1, 2, 3]
    # sm_dialog: each model's mean score, as given
    assert [ranked.loc[("sm_dialog", m), "score"] for m in "abc"] == [2.0, 3.0, 4.0]
    assert [ranked.loc[("sm_dialog", m), "rank"] for m in "abc"] == [3, 2, 1]


def test_reversed_rankings_have_kendall_tau_minus_one():
    agreement = pc.ranking_agreement(pc.rankings(times_table()))
    assert len(agreement) == 1
    assert agreement.iloc[0]["models"] == 3 and agreement.iloc[0]["kendall_tau"] == pytest.approx(-1.0)


def test_money_and_cheapest_protocol():
    priced = pc.costs(times_table(), hourly_pay=10.0, fee=0.5)
    assert priced.loc[0, "money_needed"] == pytest.approx(2.0 * 10 * 1.5)
    cheapest = pc.cheapest(priced)
    assert set(cheapest["technique"]) == {"pw_turn"} and len(cheapest) == 2  # b vs c never reached


def test_compare_protocols_end_to_end(tmp_path):
    from test_single_model import synthetic_records

    from parlai_dialeval.data import from_records
    from parlai_dialeval.scripts.compare_protocols import CompareConfig, analyze

    result = analyze(from_records(synthetic_records()), tmp_path, CompareConfig(trials=30))
    assert {"pw_turn", "pw_dialog_self", "sm_turn", "sm_dialog"} <= set(result["cost_to_significance"]["technique"])
    # every protocol ranks the synthetic 'good' model first
    assert set(result["rankings"].query("rank == 1")["model"]) == {"good"}
    assert (tmp_path / "report.html").exists() and (tmp_path / "hours_to_significance.png").exists()
    assert (tmp_path / "significance_time" / "report.html").exists()


def test_one_protocol_is_refused(tmp_path, capsys):
    from test_single_model import synthetic_records

    from parlai_dialeval.cli import main
    from parlai_dialeval.data import write_jsonl

    only_pw_turn = [r for r in synthetic_records()
                    if r["type"] == "conversation" or (r["type"] == "comparison" and "turn_index" in r)]
    path = tmp_path / "pw.jsonl"
    write_jsonl(only_pw_turn, path)
    status = main(["compare_protocols", "--data", str(path), "--out", str(tmp_path / "out"), "--trials", "20"])
    err = capsys.readouterr().err
    assert status == 2 and "only one protocol in the data (pw_turn)" in err, err


def test_ab_and_acute_runs_are_two_protocols(tmp_path):
    # both used to be pw_dialog, so the two runs were refused as "only one protocol"
    from test_significance_time import _acute_and_ab_records

    from parlai_dialeval.data import from_records
    from parlai_dialeval.scripts.compare_protocols import CompareConfig, analyze

    result = analyze(from_records(_acute_and_ab_records()), tmp_path, CompareConfig(trials=20))
    assert set(result["cost_to_significance"]["technique"]) == {"pw_dialog", "ab"}
    assert set(result["rankings"]["technique"]) == set(result["worker_agreement"]["technique"]) == {"pw_dialog", "ab"}


def test_equal_models_share_a_rank(tmp_path):
    # m1 and m2 have the same SM-Turn ticks; the resampled effective win rate ranked them 1 and 2 and
    # the two SM protocols then "disagreed" with a tau of -1
    from hostile_corpora import single_model

    from parlai_dialeval.data import from_records
    from parlai_dialeval.scripts.compare_protocols import CompareConfig, analyze

    records = single_model()
    result = analyze(from_records(records), tmp_path, CompareConfig(trials=5))
    ranked = result["rankings"].set_index(["technique", "metric", "model"])
    ratings = pd.DataFrame([r for r in records if r["type"] == "rating"])
    # SM-Turn subset 3-6: the ticks on turn_index 5, 7, 9, 11 (bot turns at 1, 3, ..., 13)
    ticks = ratings[ratings["turn_index"].isin([5, 7, 9, 11])].groupby(["criterion", "model"])["value"].mean()
    likert = ratings[ratings["scale"] == "likert"].groupby(["criterion", "model"])["value"].mean()
    for criterion in ("engaging", "humanlike", "interesting"):
        assert ticks[(criterion, "m1")] == ticks[(criterion, "m2")]
        for model in ("m1", "m2"):
            assert ranked.loc[("sm_turn", criterion, model), "score"] == pytest.approx(ticks[(criterion, model)])
            assert ranked.loc[("sm_turn", criterion, model), "rank"] == 1
        # SM-Dialog tells them apart: m2's Likert mean is higher
        assert likert[(criterion, "m2")] > likert[(criterion, "m1")]
        assert ranked.loc[("sm_dialog", criterion, "m2"), "rank"] == 1
        assert ranked.loc[("sm_dialog", criterion, "m1"), "rank"] == 2
    agreement = result["ranking_agreement"]
    across = agreement[agreement["protocol_1"].str.startswith("sm_dialog")
                       & agreement["protocol_2"].str.startswith("sm_turn")]
    assert len(across) and across["kendall_tau"].isna().all()  # no order to agree or disagree with
