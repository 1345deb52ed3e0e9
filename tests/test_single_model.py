"""SM-Turn / SM-Dialog analysis (Smith et al. 2022) on small data whose answers are worked out by hand."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from crowdsourcing.zygote import dialeval_run
from parlai_dialeval.analysis.single_model import (
    combined_scores, effective_win_rate, likert_summary, model_pairs, per_conversation_success, per_turn_table,
    select_turns, sm_dialog_ratings, sm_turn_ratings, success_rates, ttests)

# Two conversations of model X and one of Y; bot messages at odd turn indices 1, 3, 5, 7.
# Engaging ticks per bot turn (1-based bot turns 1..4):
TICKS = {("c1", "X"): [0, 1, 1, 0], ("c2", "X"): [0, 0, 1, 0], ("c3", "Y"): [1, 1, 1, 1]}
LIKERT = {("c1", "X"): 4, ("c2", "X"): 2, ("c3", "Y"): 5}


def _ratings():
    rows = []
    for (conv, model), ticks in TICKS.items():
        for k, tick in enumerate(ticks):
            rows.append({"conversation_id": conv, "worker_id": "w" + conv, "model": model, "criterion": "engaging",
                         "scale": "binary", "value": tick, "turn_index": 2 * k + 1})
            # the other criteria: all zero ("none" ticked)
            for criterion in ("humanlike", "interesting"):
                rows.append({"conversation_id": conv, "worker_id": "w" + conv, "model": model,
                             "criterion": criterion, "scale": "binary", "value": 0, "turn_index": 2 * k + 1})
        rows.append({"conversation_id": conv, "worker_id": "w" + conv, "model": model, "criterion": "engaging",
                     "scale": "likert", "value": LIKERT[(conv, model)], "turn_index": None})
    rows.append({"conversation_id": "c1", "worker_id": "wc1", "model": "X", "criterion": "overall",
                 "scale": "likert", "value": 3, "turn_index": None})  # not an SM criterion: ignored
    return pd.DataFrame(rows)


def _engaging(frame):
    return frame[frame["criterion"] == "engaging"]


def test_bot_turns_are_ranks_of_rated_messages():
    turns = sm_turn_ratings(_ratings())
    assert sorted(turns.loc[turns["conversation_id"] == "c1", "bot_turn"].unique()) == [1, 2, 3, 4]
    assert len(select_turns(turns, (3, 4))) == 3 * 3 * 2


def test_linear_and_winner_takes_all_rates():
    rates = success_rates(_engaging(sm_turn_ratings(_ratings()))).set_index("model")
    # Linear: X has 3 successes out of 8 responses; Y 4 of 4.
    assert rates.loc["X", "lin"] == pytest.approx(3 / 8) and rates.loc["Y", "lin"] == 1.0
    # WTA: c1 has 2/4 >= half -> win; c2 has 1/4 -> loss; so X wins 1 of 2 conversations.
    assert rates.loc["X", "wta"] == 0.5 and rates.loc["X", "n_conversations"] == 2
    # Turns 3-4 only: c1 1/2 (win), c2 1/2 (win) -> WTA 1.0; linear 2/4.
    subset = success_rates(_engaging(select_turns(sm_turn_ratings(_ratings()), (3, 4)))).set_index("model")
    assert subset.loc["X", "wta"] == 1.0 and subset.loc["X", "lin"] == 0.5


def test_per_turn_table():
    table = per_turn_table(_engaging(sm_turn_ratings(_ratings()))).set_index("model")
    # X's turn 2: c1 ticked, c2 not -> 50%; turn 3: both -> 100%.
    assert table.loc["X", ["turn_1", "turn_2", "turn_3", "turn_4"]].tolist() == [0.0, 50.0, 100.0, 0.0]


def test_likert_summary_and_ttest():
    dialog = sm_dialog_ratings(_ratings())
    assert set(dialog["criterion"]) == {"engaging"}
    summary = likert_summary(dialog).set_index("model")
    assert summary.loc["X", "mean"] == 3.0 and summary.loc["X", "sd"] == pytest.approx(np.std([4, 2], ddof=1))
    per_conv = per_conversation_success(_engaging(sm_turn_ratings(_ratings())))
    # X's per-conversation success 0.5 (c1) and 0.25 (c2) against Y's 1.0 (c3) plus two more Y conversations.
    extra = pd.DataFrame({"model": "Y", "conversation_id": ["c8", "c9"], "criterion": "engaging",
                          "success": [0.5, 0.75]})
    tests = ttests(pd.concat([per_conv, extra]), [("X", "Y")], value="success")
    expected = stats.ttest_ind([0.5, 0.25], [1.0, 0.5, 0.75])
    assert tests["p"].iloc[0] == pytest.approx(expected.pvalue)


def test_effective_win_rate_extremes_and_symmetry():
    assert effective_win_rate([1, 1, 1], [0, 0], n_boot=200, rng=0) == 1.0
    assert effective_win_rate([1, 0], [1, 0], n_boot=2000, rng=0) == pytest.approx(0.5, abs=0.03)
    # Against a constant 0.5, win probability = P(bootstrap mean of [0, 1] x 4 > 0.5) computed from the binomial.
    x = [0, 1, 0, 1]
    exact = stats.binom.sf(2, 4, 0.5) + 0.5 * stats.binom.pmf(2, 4, 0.5)
    assert effective_win_rate(x, [0.5], n_boot=20000, rng=1) == pytest.approx(exact, abs=0.01)


def test_weighted_combination_appendix_g():
    turns = _engaging(sm_turn_ratings(_ratings()))
    dialog = sm_dialog_ratings(_ratings())
    combined = combined_scores(turns, dialog, w_turn=1, w_dialog=5).set_index("conversation_id")["value"]
    # c1: WTA 1, Likert 4 -> 0.75: (1*1 + 5*0.75)/6; c2: WTA 0, Likert 2 -> 0.25: (0 + 5*0.25)/6.
    assert combined["c1"] == pytest.approx((1 + 5 * 0.75) / 6)
    assert combined["c2"] == pytest.approx(5 * 0.25 / 6)


def test_weighted_combination_reads_the_likert_range_the_ratings_record():
    # SM-Dialog asked on 1-7: (Likert - 1) / 6 puts it on [0, 1]; the fixed 1-5 reading made c3's 7 a 1.5
    dialog = sm_dialog_ratings(_ratings()).assign(scale_min=1, scale_max=7)
    dialog["value"] = dialog["conversation_id"].map({"c1": 4, "c2": 1, "c3": 7})
    turns = _engaging(sm_turn_ratings(_ratings()))
    combined = combined_scores(turns, dialog, w_turn=1, w_dialog=1).set_index("conversation_id")["value"]
    # WTA (at least half the turns ticked): c1 1, c2 0, c3 1
    assert combined.to_dict() == pytest.approx({"c1": (1 + 3 / 6) / 2, "c2": 0.0, "c3": (1 + 1) / 2})


def test_model_pairs():
    assert model_pairs(["b", "a", "c"]) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert model_pairs(["b", "a", "c"], reference="b") == [("b", "a"), ("b", "c")]


def synthetic_records(seed: int = 0, conversations: int = 20, p_good: float = 0.7, p_bad: float = 0.4):
    """A small canonical study with known truth: model 'good' succeeds on each SM-Turn tick with p_good,
    'bad' with p_bad; SM-Dialog Likert 4 vs 3 on average; PW-Turn and self-chat PW-Dialog comparisons
    that 'good' wins with probability 0.7. Durations everywhere; onboarding 300 s per worker in meta."""
    rng = np.random.default_rng(seed)
    records = []
    for model, p in (("good", p_good), ("bad", p_bad)):
        for c in range(conversations):
            conv_id, worker = f"sm-{model}-{c}", f"w{c % 5}"
            turns = [{"speaker": "human" if i % 2 == 0 else model, "text": f"t{i}"} for i in range(12)]
            records.append({"type": "conversation", "id": conv_id, "models": [model], "worker_id": worker,
                            "turns": turns, "duration": 600.0, "task": "sm_eval",
                            "meta": {"onboarding_duration": 300.0}})
            for i in range(1, 12, 2):
                for criterion in ("engaging", "humanlike", "interesting"):
                    records.append({"type": "rating", "conversation_id": conv_id, "worker_id": worker, "model": model,
                                    "criterion": criterion, "scale": "binary", "scale_min": 0, "scale_max": 1,
                                    "value": int(rng.random() < p), "turn_index": i})
            for criterion in ("engaging", "humanlike", "interesting"):
                likert = int(np.clip(round(rng.normal(4 if model == "good" else 3, 0.8)), 1, 5))
                records.append({"type": "rating", "conversation_id": conv_id, "worker_id": worker, "model": model,
                                "criterion": criterion, "scale": "likert", "scale_min": 1, "scale_max": 5,
                                "value": likert})
    question = "Which next response from your partner would you prefer in a long conversation?"
    for c in range(conversations):
        records.append({"type": "conversation", "id": f"pw-{c}", "models": ["good", "bad"], "worker_id": f"p{c % 4}",
                        "turns": [{"speaker": "human", "text": "x"}] * 12, "duration": 360.0})
        for i in range(1, 12, 2):
            records.append({"type": "comparison", "item_id": f"pw-{c}", "worker_id": f"p{c % 4}", "model_a": "good",
                            "model_b": "bad", "choice": "a" if rng.random() < 0.7 else "b", "turn_index": i,
                            "question": question, "duration": 30.0})
    for m in ("good", "bad"):
        records.append({"type": "conversation", "id": f"self-{m}", "models": [m], "task": "self_chat",
                        "turns": [{"speaker": m, "text": "x"}]})
    for k in range(60):
        records.append({"type": "comparison", "item_id": f"d{k}", "worker_id": f"q{k % 6}", "model_a": "bad",
                        "model_b": "good", "choice": "b" if rng.random() < 0.7 else "a", "duration": 60.0,
                        "conversation_a": "self-bad", "conversation_b": "self-good",
                        "question": "Who would you prefer to talk to for a long conversation?"})
    return records


def test_analyze_single_model_end_to_end(tmp_path):
    from parlai_dialeval.data import write_jsonl

    data_path = tmp_path / "study.jsonl"
    write_jsonl(synthetic_records(), data_path)
    out = tmp_path / "out"
    result = dialeval_run(["analyze_single_model", "--data", str(data_path), "--out", str(out), "--n-boot", "200"],
                           timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    rates = pd.read_csv(out / "success_rates.csv")
    # 20 conversations x 6 turns per model; 'all' pools every turn, '3-6' the last four.
    assert set(rates["n_ratings"]) == {120, 80} and set(rates["turns"]) == {"all", "3-6"}
    good = rates[(rates["model"] == "good") & (rates["turns"] == "all")]
    assert good["lin"].between(0.55, 0.85).all()
    wins = pd.read_csv(out / "effective_win_rates.csv")
    assert (wins["model_a"] == "bad").all() and (wins["win_rate_a"] < 0.5).all()  # pairs sorted: bad vs good
    combination = pd.read_csv(out / "combination.csv")
    assert set(combination["weights"]) == {"1:0", "10:1", "5:1", "2:1", "1:1", "1:2", "1:5", "1:10", "0:1"}
    assert (out / "report.html").exists() and (out / "success_by_turn.png").exists()
    bad = dialeval_run(["analyze_single_model", "--data", str(data_path), "--out", str(out), "--sm-turns", "6-3"],
                        timeout=300)
    assert bad.returncode == 2 and "--sm-turns '6-3'" in bad.stderr


def test_zero_variance_is_not_a_test():
    # Issue 18 item 8: constant scores in both models printed t=-inf, p=0.000; now no test, with the reason.
    scores = pd.DataFrame({"model": ["X"] * 3 + ["Y"] * 3, "criterion": "engaging", "value": [0, 0, 0, 1, 1, 1]})
    row = ttests(scores, [("X", "Y")]).iloc[0]
    assert np.isnan(row["t"]) and np.isnan(row["p"]) and "zero variance" in row["note"]
    assert row["diff"] == -1 and row["n_a"] == 3


def test_ttest_interval_of_the_difference_matches_scipy():
    x, y = [0.5, 0.25, 0.75, 0.6], [1.0, 0.5, 0.75]
    scores = pd.DataFrame({"model": ["X"] * 4 + ["Y"] * 3, "criterion": "engaging", "value": x + y})
    row = ttests(scores, [("X", "Y")], alpha=0.1).iloc[0]
    expected = stats.ttest_ind(x, y).confidence_interval(0.9)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((expected.low, expected.high))
    assert row["p"] == pytest.approx(stats.ttest_ind(x, y).pvalue) and row["note"] == ""


def test_success_rates_have_intervals_by_conversation():
    rates = success_rates(_engaging(sm_turn_ratings(_ratings()))).set_index("model")
    # X's conversations succeed on 2/4 and 1/4 turns: t interval with 1 degree of freedom over [0.5, 0.25].
    low, high = stats.t.interval(0.95, 1, loc=0.375, scale=stats.sem([0.5, 0.25]))
    assert (rates.loc["X", "lin_ci_low"], rates.loc["X", "lin_ci_high"]) == pytest.approx((low, high))
    assert np.isnan(rates.loc["Y", "lin_ci_low"])  # one conversation: no interval


def test_report_warns_when_nothing_can_be_tested(tmp_path):
    from parlai_dialeval.data import from_records
    from parlai_dialeval.scripts.analyze_single_model import SingleModelConfig, analyze

    records = []
    for model, tick in (("steady", 1), ("flat", 0)):
        for c in range(3):
            conv = f"{model}{c}"
            records.append({"type": "conversation", "id": conv, "models": [model], "worker_id": f"w{model}",
                            "turns": [{"speaker": "human", "text": "Hi!"}, {"speaker": model, "text": "hello"}]})
            records += [{"type": "rating", "conversation_id": conv, "worker_id": f"w{model}", "model": model,
                         "criterion": "engaging", "scale": "binary", "scale_min": 0, "scale_max": 1, "value": tick,
                         "turn_index": 2 * t + 1} for t in range(4)]
    result = analyze(from_records(records), tmp_path, SingleModelConfig(n_boot=10))
    assert result["ttests"]["p"].isna().all()
    html = (tmp_path / "report.html").read_text()
    assert "2 comparison(s) without a test (every score is the same within each model" in html
    assert "Nothing could be tested" in html and "t=-inf" not in html and "-inf" not in html


def test_ttest_clusters_by_worker_where_a_worker_rated_several_conversations():
    # w1 rated three of X's conversations, w2 two of Y's and one of X's, w3 two of Y's
    scores = pd.DataFrame({"model": ["X", "X", "X", "X", "Y", "Y", "Y", "Y"], "criterion": "engaging",
                           "value": [4.0, 5, 4, 2, 3, 2, 1, 3],
                           "worker_id": ["w1", "w1", "w1", "w2", "w2", "w2", "w3", "w3"]})
    row = ttests(scores, [("X", "Y")]).iloc[0]
    # CR2 sandwich written out: OLS of value on [1, is X], clusters = workers, each worker's residuals times
    # (I - H_gg)^(-1/2) from the eigendecomposition of their own n_g x n_g block of the hat matrix
    design = np.column_stack([np.ones(8), (scores["model"] == "X").to_numpy(float)])
    y = scores["value"].to_numpy()
    bread = np.linalg.inv(design.T @ design)
    beta = bread @ design.T @ y
    residual = y - design @ beta
    meat = np.zeros((2, 2))
    for g in [scores["worker_id"].eq(w).to_numpy() for w in ("w1", "w2", "w3")]:
        room, vectors = np.linalg.eigh(np.eye(g.sum()) - design[g] @ bread @ design[g].T)
        score = design[g].T @ (vectors @ np.diag(room ** -0.5) @ vectors.T @ residual[g])
        meat += np.outer(score, score)
    se = np.sqrt((bread @ meat @ bread)[1, 1])
    assert row["unit_of_independence"] == "worker" and row["workers"] == 3
    assert row["diff"] == pytest.approx(beta[1]) and row["t"] == pytest.approx(beta[1] / se)
    # t on Kish's effective number of workers less 1: loads 3, 3, 2 -> 64 / 22 = 2.91 workers, 1.91 degrees of freedom
    df = 8 ** 2 / (3 ** 2 + 3 ** 2 + 2 ** 2) - 1
    assert row["p"] == pytest.approx(2 * stats.t.sf(abs(beta[1] / se), df))
    assert row["ci_high"] - row["ci_low"] == pytest.approx(2 * stats.t.isf(0.025, df) * se)
    # one conversation per worker: the Student t-test over conversations, as before
    alone = ttests(scores.assign(worker_id=[f"w{i}" for i in range(8)]), [("X", "Y")]).iloc[0]
    assert alone["unit_of_independence"] == "conversation"
    assert alone["p"] == pytest.approx(stats.ttest_ind(y[:4], y[4:]).pvalue)


def test_report_opens_with_the_verdict(tmp_path):
    """Issue 40 item 4: the single-model report opens with its verdict. The synthetic study's truth (by
    construction): 'good' has Likert 4 against 3 and succeeds on 70% of turns against 40%; with 60
    conversations each the Likert difference is settled on every criterion (an independent Welch test on the
    per-conversation Likert means agrees, scipy)."""
    import re

    from scipy.stats import ttest_ind

    from parlai_dialeval.data import from_records
    from parlai_dialeval.scripts.analyze_single_model import analyze

    records = synthetic_records(conversations=60)
    analyze(from_records(records), tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert html.index('data-testid="verdict"') < html.index("<h2>")
    verdict = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html[html.index('data-testid="verdict"'):
                                                                 html.index("</div>")]))
    dialog, turn = verdict.split("SM-Turn")
    for criterion in ("engaging", "humanlike", "interesting"):
        values = {m: [r["value"] for r in records if r["type"] == "rating" and r["scale"] == "likert"
                      and r["model"] == m and r["criterion"] == criterion] for m in ("good", "bad")}
        assert ttest_ind(values["good"], values["bad"], equal_var=False).pvalue < 0.001
        assert re.search(rf"Best {criterion}: good \([34]\.\d\d, 95% interval [\d.]+ to [\d.]+\), ahead of bad "
                         r"\([23]\.\d\d\) by [\d.]+; significantly higher than every other model", dialog), dialog
        assert re.search(rf"Best {criterion}: good \(0\.\d\d, 95% interval", turn), turn
