"""Time to significance (Smith et al. 2022, 4.4.3 / App. F) against statsmodels' power calculations."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower, TTestIndPower
from statsmodels.stats.proportion import proportion_effectsize

from crowdsourcing.zygote import dialeval_run
from parlai_dialeval.analysis.significance_time import (
    Units, binomial_p, chunk_win_rates, combo_units, power_curve, time_to_significance)

SECONDS_PER_RATING = 30.0


def _units(values, workers=None, onboarding=0.0):
    workers = np.arange(len(values)) if workers is None else workers
    return Units.build(values, np.full(len(values), SECONDS_PER_RATING), workers, onboarding)


def test_binomial_time_matches_statsmodels_power():
    # Known truth: the first model wins exactly 60% of decided comparisons; 10% ties never count.
    rng = np.random.default_rng(1)
    outcome = rng.permutation(np.r_[np.ones(10800), np.zeros(7200), np.full(2000, np.nan)])
    units = _units(outcome)
    # statsmodels: one-sample (ratio=0) arcsine power for p=0.6 vs 0.5; ties inflate the count by 1/0.9.
    decided_needed = NormalIndPower().solve_power(proportion_effectsize(0.6, 0.5), alpha=0.05, power=0.8, ratio=0)
    expected_time = decided_needed / 0.9 * SECONDS_PER_RATING
    curve = power_curve(units, sizes=np.arange(150, 301, 10), trials=2000, seed=3)
    estimate = time_to_significance(curve, power=0.8)
    assert estimate["reached"] and not estimate["extrapolated"]
    assert estimate["time_s"] == pytest.approx(expected_time, rel=0.15)


def test_ttest_time_matches_statsmodels_power():
    rng = np.random.default_rng(2)
    d = 0.5  # known standardised effect size: both samples standardised exactly
    a = _units(stats.zscore(rng.normal(size=5000)) + d)
    b = _units(stats.zscore(rng.normal(size=5000)))
    per_group = TTestIndPower().solve_power(d, alpha=0.05, power=0.8, ratio=1.0)  # about 64
    curve = power_curve(a, b, sizes=np.arange(40, 101, 4), trials=2000, seed=4)
    estimate = time_to_significance(curve, power=0.8)
    assert estimate["n"] == pytest.approx(per_group, rel=0.15)
    assert estimate["time_s"] == pytest.approx(2 * per_group * SECONDS_PER_RATING, rel=0.15)


def test_onboarding_charged_once_per_distinct_worker():
    # One worker did everything: every resample pays onboarding exactly once.
    units = _units(np.ones(50), workers=["w"] * 50, onboarding=600.0)
    curve = power_curve(units, sizes=[10, 20], trials=20, seed=0)
    assert curve["time_s"].tolist() == [10 * SECONDS_PER_RATING + 600, 20 * SECONDS_PER_RATING + 600]
    # Each unit its own worker with 60 s onboarding: cost is n * (30 + 60) when draws are distinct.
    distinct = _units(np.ones(5), workers=list("abcde"), onboarding=60.0)
    one = power_curve(distinct, sizes=[1], trials=10, seed=0)
    assert one["time_s"].iloc[0] == SECONDS_PER_RATING + 60


def test_ttest_onboarding_charged_once_for_a_worker_who_rated_both_models():
    # SM techniques: the same worker rates conversations of both models and is onboarded once (by hand:
    # 5 + 5 ratings of 30 s plus one 600 s onboarding = 900 s; charging it per model gave 1,500 s).
    a = _units(np.arange(10.0), workers=["w"] * 10, onboarding=600.0)
    b = _units(np.arange(10.0) + 1, workers=["w"] * 10, onboarding=600.0)
    curve = power_curve(a, b, sizes=[5], trials=20, seed=0)
    assert curve["time_s"].iloc[0] == 2 * 5 * SECONDS_PER_RATING + 600
    # Different workers per model still pay one onboarding each.
    other = _units(np.arange(10.0) + 1, workers=["v"] * 10, onboarding=600.0)
    curve = power_curve(a, other, sizes=[5], trials=20, seed=0)
    assert curve["time_s"].iloc[0] == 2 * 5 * SECONDS_PER_RATING + 2 * 600


def test_never_significant_reports_not_reached():
    units = _units(np.array([1.0, 0.0] * 20))
    estimate = time_to_significance(power_curve(units, sizes=[10, 20, 40], trials=50, seed=0))
    assert not estimate["reached"] and np.isnan(estimate["time_s"])


def test_interpolation_between_sizes():
    curve = pd.DataFrame({"n": [10, 20], "power": [0.6, 1.0], "time_s": [100.0, 200.0],
                          "extrapolated": [False, False]})
    # Power 0.8 lies halfway between the two sizes.
    assert time_to_significance(curve, 0.8) == {"n": 15.0, "time_s": 150.0, "reached": True,
                                                "extrapolated": False, "bound": "interpolated"}


def test_chunks_of_45_minutes():
    # 12 units of 15 minutes each = 4 chunks of 45 minutes; win rates computed by hand.
    frame = pd.DataFrame({"order": range(12), "cost": [900.0] * 12,
                          "value": [1, 1, 0, 1, np.nan, 1, 0, 0, 0, 1, 1, 1]})
    chunks = chunk_win_rates(frame)
    assert chunks["n"].tolist() == [3, 3, 3, 3]
    assert chunks["win_rate"].tolist() == pytest.approx([2 / 3, 1.0, 0.0, 1.0])


def test_combo_ratio():
    turn = _units(np.ones(100))
    dialog = _units(np.zeros(100))
    pool = combo_units(turn, dialog, ratio=(1, 5), size=600, seed=0)
    # 1:5 ratio: 100 of 600 units come from PW-Turn (all wins), so the pooled win rate is 1/6.
    assert len(pool) == 600 and np.nanmean(pool.values) == pytest.approx(1 / 6)


def test_vectorised_binomial_p_equals_scipy_binomtest():
    wins, decided = np.meshgrid(np.arange(0, 31), np.arange(0, 31))
    ok = wins <= decided
    expected = [stats.binomtest(int(w), int(n), 0.5).pvalue if n else 1.0 for w, n in zip(wins[ok], decided[ok])]
    assert binomial_p(wins[ok], decided[ok]) == pytest.approx(expected, rel=1e-9)


def _synthetic_data():
    from test_single_model import synthetic_records

    from parlai_dialeval.data import from_records

    return from_records(synthetic_records())


def test_samples_from_canonical_data():
    from parlai_dialeval.analysis.significance_time import pairwise_samples, single_model_samples

    data = _synthetic_data()
    pw = {(s.technique, s.metric): s for s in pairwise_samples(data, turns=(2, 6))}
    assert set(pw) == {("pw_turn", "engaging"), ("pw_dialog_self", "engaging")}
    turn = pw[("pw_turn", "engaging")]
    # 20 conversations x bot turns 2..6 = 100 comparisons of 30 s each; pair sorted: 'bad' first.
    assert (turn.model_a, turn.model_b, len(turn.a)) == ("bad", "good", 100)
    assert set(turn.a.cost) == {30.0} and np.nanmean(turn.a.values) < 0.5
    dialog = pw[("pw_dialog_self", "engaging")]
    assert len(dialog.a) == 60 and set(dialog.a.cost) == {60.0}  # self-chats cost no conversation time
    sm = {(s.technique, s.metric): s for s in single_model_samples(data, turns=(3, 6))}
    sm_turn = sm[("sm_turn", "humanlike")]
    # 600 s conversations shared by the 4 rated turns (3..6) of a criterion: 150 s per rating.
    assert len(sm_turn.a) == 20 * 4 and set(sm_turn.a.cost) == {150.0}
    # onboarding from conversation meta: 300 s per worker
    assert set(sm_turn.a.onboarding) == {300.0}
    assert set(sm[("sm_dialog", "engaging")].a.cost) == {600.0}


def test_significance_time_cli(tmp_path):
    from test_single_model import synthetic_records

    from parlai_dialeval.data import write_jsonl

    data_path = tmp_path / "study.jsonl"
    write_jsonl(synthetic_records(), data_path)
    out = tmp_path / "out"
    result = dialeval_run(["significance_time", "--data", str(data_path), "--out", str(out), "--trials", "60",
                           "--weights", "1:0,1:5,0:1"], timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    table = pd.read_csv(out / "time_to_significance.csv")
    assert {"pw_turn", "pw_dialog_self", "pw_combo 1:5", "sm_turn", "sm_dialog", "sm_combo 1:5"} <= set(
        table["technique"])
    assert table["durations_known"].all()
    # the grid is refined at the crossing: every reached figure is the first size reaching the power target
    assert table.loc[table["reached"], "n_needed_is"].eq("exact").all()
    assert table.loc[~table["reached"], "n_needed_is"].str.startswith("above").all()
    variability = pd.read_csv(out / "chunk_variability.csv")
    assert "pw_turn" in set(variability["technique"])
    assert (out / "report.html").exists() and list(out.glob("time_bad_vs_good.png"))


def _exact_binomial_power(n: int, p: float, alpha: float = 0.05) -> float:
    """Power of the two-sided exact binomial test at n decided comparisons, by summing the binomial pmf
    over the significant win counts (independent of the resampling code)."""
    wins = np.arange(n + 1)
    significant = np.array([stats.binomtest(int(k), n, 0.5).pvalue < alpha for k in wins])
    return float(stats.binom.pmf(wins, n, p)[significant].sum())


@pytest.mark.parametrize("available", [40, 200])
def test_grid_is_refined_where_power_crosses_the_target(available):
    # issue 18 item 7: at win rate 0.75 the default geometric grid answered up to 19% above the exact first n
    # (30: the first size whose exact binomial power reaches 0.8); the docs promise 15%.
    exact = next(n for n in range(1, 200) if _exact_binomial_power(n, 0.75) >= 0.8)
    assert exact == 30
    values = np.r_[np.ones(available * 3 // 4), np.zeros(available // 4)]
    curve = power_curve(_units(values), trials=4000, seed=0, target=0.8)
    estimate = time_to_significance(curve, power=0.8)
    assert estimate["bound"] == "exact" and estimate["n"] == int(estimate["n"])
    assert estimate["n"] == pytest.approx(exact, rel=0.1)
    assert estimate["time_s"] == pytest.approx(estimate["n"] * SECONDS_PER_RATING)


def test_power_reached_at_the_smallest_size_is_refined_or_called_an_upper_bound():
    # Every comparison won: 5 straight wins are not significant (p = 0.0625), 6 are (p = 0.031).
    units = _units(np.ones(100))
    coarse = time_to_significance(power_curve(units, sizes=[40, 80], trials=50, seed=0))
    assert coarse["n"] == 40 and coarse["bound"] == "upper"
    refined = time_to_significance(power_curve(units, sizes=[40, 80], trials=50, seed=0, target=0.8))
    assert refined["n"] == 6 and refined["bound"] == "exact"
    never = time_to_significance(power_curve(_units(np.array([1.0, 0.0] * 20)), sizes=[10, 20], trials=50,
                                             seed=0, target=0.8))
    assert not never["reached"] and never["bound"] == "above 20"


@pytest.mark.parametrize("option, value", [("--trials", "0"), ("--combo-ratio", "0:0")])
def test_bad_option_values_are_one_line_errors(tmp_path, option, value):
    # issue 18 item 12: `significance_time --trials 0` crashed with a traceback
    from test_single_model import synthetic_records

    from parlai_dialeval.data import write_jsonl

    data_path = tmp_path / "study.jsonl"
    write_jsonl(synthetic_records(), data_path)
    result = dialeval_run(["significance_time", "--data", str(data_path), "--out", str(tmp_path / "out"), option,
                           value], timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert option in result.stderr.strip().splitlines()[-1]


def test_metric_named_by_an_unknown_question_is_reported(tmp_path):
    # issue 19 item 1: a wording no protocol asks becomes its own metric, and the report says so
    from test_single_model import synthetic_records

    from parlai_dialeval.data import from_records
    from parlai_dialeval.scripts.significance_time import analyze

    records = [dict(r, question="Which bot is funnier?") if r["type"] == "comparison" and r["item_id"].startswith("d")
               else r for r in synthetic_records()]
    results = analyze(from_records(records), tmp_path, trials=20, weights=[(1, 1)])
    assert "Which bot is funnier?" in set(results["time_to_significance"]["metric"])
    assert "engaging" in set(results["time_to_significance"]["metric"])
    html = (tmp_path / "report.html").read_text()
    assert "Metrics named by their question text" in html and "Which bot is funnier?" in html


def test_pw_dialog_hours_are_the_distinct_conversations_durations():
    # Issue 25: a human-model conversation shown as A in some comparisons and as B in others was charged
    # once per side. Three models, two conversations each (durations 100..600 s), every conversation of
    # one model against every conversation of the others, both orders: each appears on both sides.
    from parlai_dialeval.analysis.significance_time import pairwise_samples
    from parlai_dialeval.data import from_records

    durations = {f"{m}{i}": 100.0 * (2 * k + i + 1) for k, m in enumerate("xyz") for i in range(2)}
    records = [{"type": "conversation", "id": cid, "models": [cid[0]], "worker_id": f"w{cid}", "task": "live_chat",
                "turns": [{"speaker": "human", "text": "hi"}, {"speaker": "bot", "text": "hello"}],
                "duration": seconds} for cid, seconds in durations.items()]
    choices = iter(["a", "b", "tie"] * 100)
    for first in durations:
        for second in durations:
            if first[0] < second[0]:
                for a, b in ((first, second), (second, first)):
                    records.append({"type": "comparison", "item_id": f"{a}|{b}", "worker_id": "judge",
                                    "model_a": a[0], "model_b": b[0], "conversation_a": a, "conversation_b": b,
                                    "question": "Who is more engaging?", "choice": next(choices), "duration": 10.0})
    samples = [s for s in pairwise_samples(from_records(records)) if s.technique == "pw_dialog"]
    judging = 10.0 * (len(records) - len(durations))
    # the judging time plus 2,100 s of conversations, not twice that
    assert sum(float(s.a.cost.sum()) for s in samples) == pytest.approx(judging + sum(durations.values()))


def _acute_and_ab_records():
    """Two models judged by ACUTE (conversation pairs) and by A/B next utterance (responses, no conversation)."""
    records = [{"type": "conversation", "id": f"{m}{i}", "models": [m], "worker_id": f"c{i}", "duration": 100.0,
                "turns": [{"speaker": "human", "text": "hi"}, {"speaker": m, "text": "hello"}]}
               for m in "xy" for i in range(3)]
    for k in range(12):
        records.append({"type": "comparison", "item_id": f"acute{k}", "worker_id": f"a{k % 3}", "model_a": "x",
                        "model_b": "y", "choice": "ab"[k % 3 == 0], "conversation_a": f"x{k % 3}",
                        "conversation_b": f"y{k % 3}", "duration": 40.0})
    for k in range(9):
        records.append({"type": "comparison", "item_id": f"prompt{k}", "worker_id": f"b{k % 3}", "model_a": "x",
                        "model_b": "y", "choice": "ab"[k % 2], "context": f"prompt {k}", "response_a": "r1",
                        "response_b": "r2", "duration": 8.0})
    return records


def test_ab_next_utterance_votes_are_their_own_technique():
    # A/B votes were pooled into pw_dialog with the ACUTE votes, while worker agreement called them ab
    from parlai_dialeval.analysis.protocol_comparison import worker_agreement
    from parlai_dialeval.analysis.significance_time import pairwise_samples
    from parlai_dialeval.data import from_records

    data = from_records(_acute_and_ab_records())
    samples = {s.technique: s for s in pairwise_samples(data)}
    assert set(samples) == {"pw_dialog", "ab"} == set(worker_agreement(data.comparisons)["technique"])
    ab = samples["ab"]
    # the 9 A/B votes, x winning the 5 with k even; each costs its own 8 s (no conversation to pay for)
    assert len(ab.a) == 9 and np.nansum(ab.a.values) == 5 and set(ab.a.cost) == {8.0}
    assert len(samples["pw_dialog"].a) == 12


def test_report_writes_turn_ranges_as_the_options_do(tmp_path):
    from parlai_dialeval.scripts.significance_time import analyze

    analyze(_synthetic_data(), tmp_path, pw_turns=(2, 5), sm_turns=None, trials=5, weights=[(1, 1)])
    html = (tmp_path / "report.html").read_text()
    assert "PW-Turn 2-5, SM-Turn all" in html and "(2, 5)" not in html and "None" not in html


@pytest.mark.parametrize("args", [
    ["significance_time", "--sm-turns", "20-30"],
    ["significance_time", "--pw-turns", "20-30"],
    ["compare_protocols", "--sm-turns", "20-30"],
    ["analyze_single_model", "--sm-turns", "20-30"],
])
def test_turn_range_beyond_every_conversation_is_one_line(tmp_path, capsys, args):
    # it used to drop every SM-Turn (PW-Turn) result and exit 0; synthetic_records has 6 bot turns per conversation
    from test_single_model import synthetic_records

    from parlai_dialeval.cli import main
    from parlai_dialeval.data import write_jsonl

    write_jsonl(synthetic_records(), tmp_path / "study.jsonl")
    status = main([args[0], "--data", str(tmp_path / "study.jsonl"), "--out", str(tmp_path / "out"), *args[1:]])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert f"{args[1]} 20-30: no conversation has Bot Speaker turns 20-30 (at most 6)" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["significance_time", "compare_protocols", "analyze_single_model"])
def test_negative_seed_is_one_line(tmp_path, capsys, command):
    # numpy refused it with a traceback
    from test_single_model import synthetic_records

    from parlai_dialeval.cli import main
    from parlai_dialeval.data import write_jsonl

    write_jsonl(synthetic_records(), tmp_path / "study.jsonl")
    status = main([command, "--data", str(tmp_path / "study.jsonl"), "--out", str(tmp_path / "out"), "--seed", "-1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == ["dialeval: error: --seed -1: expected an integer >= 0"], err
