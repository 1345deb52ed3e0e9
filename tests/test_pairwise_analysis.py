"""Pairwise win rates: closed forms on synthetic PW-Turn data, ChatEval 2018 counts against results.txt,
Lee et al. 2020 Figure 5 response statistics, and the analyze_pairwise command."""
from __future__ import annotations

import ast
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from crowdsourcing.zygote import dialeval_run
from parlai_dialeval.analysis import agreement, pairwise
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.importers import load
from parlai_dialeval.scripts.analyze_pairwise import WIN_RATE_COLUMNS, PairwiseConfig, analyze


def test_wilson_interval_matches_the_formula():
    # Wilson (1927): (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n).
    k, n, z = 37, 60, stats.norm.ppf(0.975)
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low, high = pairwise.wilson_ci(k, n)
    assert low == pytest.approx((centre - half) / (1 + z * z / n))
    assert high == pytest.approx((centre + half) / (1 + z * z / n))
    assert np.isnan(pairwise.wilson_ci(0, 0)[0])


def test_binomial_p_value_by_enumeration():
    wins, losses = 14, 5
    n = wins + losses
    pmf = [math.comb(n, k) / 2 ** n for k in range(n + 1)]
    expected = sum(q for q in pmf if q <= pmf[wins] * (1 + 1e-9))
    assert pairwise.binomial_p(wins, losses) == pytest.approx(expected)
    assert np.isnan(pairwise.binomial_p(0, 0))



def test_binomial_p_values_at_once_equal_scipys_binomtest_one_by_one():
    # Issue 43: binomtest per model pair took 4.7 s for 4,950 pairs; the vectorised p-values must be
    # binomtest's exactly: every count up to 24 a side, large counts, ties, no votes, underflowing tails.
    wins, losses = (a.ravel() for a in np.meshgrid(np.arange(25), np.arange(25)))
    rng = np.random.default_rng(0)
    wins = np.concatenate([wins, rng.integers(0, 50_000, 20), [30_000, 3, 0]])
    losses = np.concatenate([losses, rng.integers(0, 50_000, 20), [30_000, 40_000, 100_000]])
    got = pairwise.binomial_ps(wins, losses)
    for w, l, p in zip(wins, losses, got):
        if w + l == 0:
            assert np.isnan(p)
        else:
            assert p == stats.binomtest(int(w), int(w + l)).pvalue, (w, l)


def test_oriented_keeps_each_pair_as_first_seen_per_group():
    # Issue 43: pairs are now keyed on integer codes instead of comparing names as strings; a loop over the
    # votes with a dictionary of first-seen orientations per (question, pair) is the reference.
    rng = np.random.default_rng(6)
    n = 200
    names = np.array(["b", "a", "B", "10", "9"], dtype=object)
    a = rng.integers(0, 5, n)
    frame = pairwise.with_sections(pd.DataFrame({
        "item_id": np.arange(n).astype(str), "model_a": names[a], "model_b": names[(a + rng.integers(1, 5, n)) % 5],
        "choice": rng.choice(["a", "b", "tie"], n), "question": rng.choice(["q1", "q2"], n)}))
    got = pairwise.oriented(frame, pairwise.SECTION)
    seen = {}
    for row, out in zip(frame.itertuples(), got.itertuples()):
        first, second = seen.setdefault((row.question, frozenset((row.model_a, row.model_b))), (row.model_a, row.model_b))
        score = {"a": 1, "b": -1, "tie": 0}[row.choice] * (1 if row.model_a == first else -1)
        assert (out.first, out.second, out.score) == (first, second, score)

def test_response_stats_equal_a_loop_over_each_models_responses():
    # Issue 43: response statistics now count n-grams as integer codes for every model at once; reference:
    # each model's responses, once per prompt (the context where recorded), as sets of n-gram tuples.
    rng = np.random.default_rng(7)
    n = 300
    words = np.array(["Hi", "hi", "there", "#", "-", "ok"], dtype=object)
    text = lambda: " ".join(rng.choice(words, rng.integers(0, 6)))
    frame = pd.DataFrame({"item_id": rng.integers(0, 50, n).astype(str), "model_a": rng.choice(["m2", "M1", "m3"], n),
                          "model_b": rng.choice(["m2", "M1", "m4"], n), "response_a": [text() for _ in range(n)],
                          "response_b": [text() if rng.random() > 0.2 else None for _ in range(n)],
                          "context": np.where(rng.random(n) < 0.5, None, rng.integers(0, 10, n).astype(str))})
    seen = {}  # (model, prompt) -> its first response's tokens, side A's responses first
    for side in ("a", "b"):
        for row in frame.itertuples():
            prompt = row.item_id if pd.isna(row.context) else row.context
            response = getattr(row, f"response_{side}")
            if not pd.isna(response):
                seen.setdefault((getattr(row, f"model_{side}"), prompt), response.lower().split())
    got = pairwise.response_stats(frame).set_index("model")
    assert list(got.index) == sorted({model for model, _ in seen})
    for model, row in got.iterrows():
        mine = [tokens for (m, _), tokens in seen.items() if m == model]
        tokens = sum(map(len, mine))
        assert row["responses"] == len(mine) and row["mean_length"] == pytest.approx(tokens / len(mine))
        for k in (1, 2):
            grams = {tuple(t[i:i + k]) for t in mine for i in range(len(t) - k + 1)}
            assert row[f"distinct_{k}"] == pytest.approx(len(grams) / tokens), (model, k)

def test_cluster_counts_of_every_pair_at_once_equal_a_loop_per_pair():
    # Issue 43: the per-pair pandas aggregation took 23 s on 100,000 votes. Reference: each pair's decided
    # votes grouped by item by hand (A/B votes with a context cluster on it), workers counted as a set.
    rng = np.random.default_rng(1)
    n = 600
    a = rng.integers(0, 6, n)
    frame = pd.DataFrame({"item_id": rng.integers(0, 120, n).astype(str),
                          "worker_id": np.where(rng.random(n) < 0.1, None, rng.integers(0, 9, n).astype(str)),
                          "model_a": a.astype(str), "model_b": ((a + rng.integers(1, 6, n)) % 6).astype(str),
                          "choice": rng.choice(["a", "b", "tie"], n, p=[0.5, 0.35, 0.15]),
                          "context": np.where(rng.random(n) < 0.5, None, rng.integers(0, 40, n).astype(str)),
                          "automatic": rng.random(n) < 0.05})
    frame = pairwise.oriented(pairwise.with_sections(frame))
    frame.loc[(frame["first"] == "0") & (frame["second"] == "1"), "score"] = 0  # a pair with no decided vote
    got = pairwise.cluster_counts(frame, ["first", "second"])
    pairs = list(dict.fromkeys(zip(frame["first"], frame["second"])))
    assert len(got) == len(pairs)
    for (first, second), row in zip(pairs, got.itertuples()):
        mine = frame[(frame["first"] == first) & (frame["second"] == second) & ~frame["auto"] & (frame["score"] != 0)]
        margins = {}
        for item, context, score in zip(mine["item_id"], mine["context"], mine["score"]):
            key = f"item:{item}" if pd.isna(context) else f"context:{context}"
            margins[key] = margins.get(key, 0) + score
        assert (row.clusters, row.clusters_won_a, row.clusters_won_b) == (
            len(margins), sum(m > 0 for m in margins.values()), sum(m < 0 for m in margins.values())), (first, second)
        assert row.workers == len(set(mine["worker_id"].dropna()))
        if len(margins):
            assert row.votes_per_cluster == pytest.approx(len(mine) / len(margins))
        else:
            assert np.isnan(row.votes_per_cluster) and np.isnan(row.p_two_way) and row.workers == 0

def pw_turn(p_of_turn, conversations, turns=6, seed=0, tie_share=0.0):
    """Synthetic PW-Turn votes: model X beats Y at turn t with probability p_of_turn(t) (t 1-based)."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(conversations):
        for t in range(1, turns + 1):
            u = rng.random()
            choice = "tie" if u < tie_share else ("a" if rng.random() < p_of_turn(t) else "b")
            flip = rng.random() < 0.5  # X shown as option A or B at random
            rows.append({"item_id": f"conv{c}", "turn_index": 2 * t - 1, "worker_id": f"w{c % 7}",
                         "model_a": "Y" if flip else "X", "model_b": "X" if flip else "Y",
                         "choice": {"a": "b", "b": "a", "tie": "tie"}[choice] if flip else choice})
    return pd.DataFrame(rows)


def closed_forms(p, n):
    """Expected per-conversation linear, squared and winner-takes-all win rates for n Bernoulli(p) turns."""
    pmf = [math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)]
    squared = sum(q * k * k / (k * k + (n - k) ** 2) for k, q in enumerate(pmf))
    wta = sum(q * (1.0 if 2 * k > n else 0.5 if 2 * k == n else 0.0) for k, q in enumerate(pmf))
    return p, squared, wta


@pytest.mark.parametrize("turns", [None, (2, 6)])
def test_conversation_win_rates_match_closed_forms(turns):
    p, conversations = 0.6, 6000
    frame = pw_turn(lambda t: p, conversations, seed=1)
    result = pairwise.conversation_win_rates(frame, turns=turns).iloc[0]
    n = 6 if turns is None else 5
    linear, squared, wta = closed_forms(p, n)
    sign = 1 if result["model_a"] == "X" else -1  # orientation is first-seen; express for X
    got = {k: result[k] if sign > 0 else 1 - result[k] for k in ("linear", "squared", "wta")}
    se = 0.5 / math.sqrt(conversations)
    assert got["linear"] == pytest.approx(linear, abs=4 * se / math.sqrt(n))
    assert got["squared"] == pytest.approx(squared, abs=4 * se)
    assert got["wta"] == pytest.approx(wta, abs=4 * se)
    assert result["conversations"] == conversations


def test_win_rate_per_turn_follows_the_turn_curve():
    curve = {t: 0.45 + 0.05 * t for t in range(1, 7)}
    frame = pw_turn(curve.get, 3000, seed=2, tie_share=0.1)
    table = pairwise.win_rate_by_turn(frame)
    assert list(table["turn_number"]) == [1, 2, 3, 4, 5, 6]
    for row in table.itertuples():
        rate = row.win_rate_a if row.model_a == "X" else 1 - row.win_rate_a
        assert rate == pytest.approx(curve[row.turn_number], abs=0.04)
    assert table["ties"].sum() == (frame["choice"] == "tie").sum()


def test_onboarding_excluded_and_automatic_ties_apart():
    frame = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4", "i5"], "worker_id": ["w", "w", "w", "auto", "w"],
                          "model_a": "A", "model_b": "B", "choice": ["a", "a", "tie", "tie", "b"],
                          "automatic": [None, None, None, True, None],
                          "onboarding": [None, None, None, None, True]})
    kept, onboarding = pairwise.split_onboarding(frame)
    assert onboarding == 1
    row = pairwise.win_rates(kept).iloc[0]
    assert (row["wins_a"], row["wins_b"], row["ties"], row["automatic_ties"]) == (2, 0, 1, 1)
    assert row["win_rate_a"] == 1.0 and row["distinct_a"] == pytest.approx(2 / 4)


@pytest.fixture(scope="module")
def chateval(shared_data):
    root = shared_data / "chateval" / "amt_ab_2018"
    return root, load([root], log=None)


def count_results(folder):
    """Independent count of a results.txt: wins of A, wins of B, worker ties, identical-response items."""
    wins_a = wins_b = ties = identical = 0
    for line in folder.joinpath("results.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("Winner is....:"):
            value = line.split(":", 1)[1].strip()
            if value.startswith("It's a tie"):
                identical += 1
                continue
            votes = ast.literal_eval(value)
            wins_a, wins_b, ties = wins_a + votes.count(0), wins_b + votes.count(1), ties + votes.count(-1)
    return wins_a, wins_b, ties, identical


def test_chateval_counts_rankings_and_kappa_per_comparison(chateval, tmp_path):
    root, data = chateval
    result = analyze(data.comparisons, tmp_path, PairwiseConfig(bootstrap_rounds=50), log=lambda *_: None)
    by_study = result["win_rates_by_study"].set_index("study")
    assert len(by_study) == 20
    for folder in sorted(p for p in root.iterdir() if p.name.startswith("AMT_")):
        row = by_study.loc[f"chateval-ab-2018/{folder.name}"]
        assert (row["wins_a"], row["wins_b"], row["ties"], row["automatic_ties"]) == count_results(folder)
        assert -1 < row["fleiss_kappa"] < 1
    # Issue 18 item 5: three studies' kappa rests on two-vote items; the outputs and the report say so.
    two_votes = by_study[by_study["kappa_votes_per_item"] == 2]
    assert sorted(two_votes.index) == ["chateval-ab-2018/AMT_NCM_Test_Cakechat_NCM",
                                       "chateval-ab-2018/AMT_NCM_Test_NCM_Human2",
                                       "chateval-ab-2018/AMT_NCM_Test_OSQ_Harvard"]
    assert by_study.loc["chateval-ab-2018/AMT_NCM_Test_NCM_Human2", "votes_per_item"] == (
        "1 vote: 44 items, 2 votes: 87 items, 3 votes: 57 items")
    html = (tmp_path / "report.html").read_text()
    assert "fleiss kappa" in html and "Bradley-Terry score" in html and "Tie policy" in html  # columns in words
    assert "rests on items with only two votes each in 3 studies" in html
    ranks = pd.read_csv(tmp_path / "rankings.csv")
    assert list(ranks.columns) == ["question", "unit", "model", "votes", "component", "rank", "bt_score", "bt_ci_low",
                                   "bt_ci_high", "bt_note", "trueskill_mu", "trueskill_sigma", "win_count"]
    assert len(ranks) == 12
    worker_votes = data.comparisons[~data.comparisons["automatic"].eq(True)]
    assert ranks["votes"].sum() == 2 * len(worker_votes)
    # style control (issue 43): its raw logistic fit is choix's maximum-likelihood Bradley-Terry (rankings.csv)
    assert "Rankings with and without style control" in html
    styled = pd.read_csv(tmp_path / "style_control.csv").set_index("model")
    assert len(styled) == 12 and styled["bt_style"].notna().all()
    assert np.allclose(styled.loc[ranks["model"], "bt_raw"], ranks["bt_score"], atol=0.01)
    assert set(pd.read_csv(tmp_path / "style_coefficients.csv")["covariate"]) == {"length", "questions"}


def test_chateval_response_stats_match_lee_figure5(chateval):
    # Lee et al. 2020 Figure 5 (NCME): Human 1 distinct-1 0.31, distinct-2 0.42, length 2.9;
    # Human 2 0.36, 0.68, 5.4. The paper's tokeniser is unknown, hence the tolerance.
    _, data = chateval
    table = pairwise.response_stats(data.comparisons).set_index("model")
    for model, (d1, d2, length) in {"Human1": (0.31, 0.42, 2.9), "Human2": (0.36, 0.68, 5.4)}.items():
        assert table.loc[model, "distinct_1"] == pytest.approx(d1, abs=0.01)
        assert table.loc[model, "distinct_2"] == pytest.approx(d2, abs=0.01)
        assert table.loc[model, "mean_length"] == pytest.approx(length, abs=0.05)


def test_analyze_pairwise_command(chateval, tmp_path):
    root, _ = chateval
    out = tmp_path / "out"
    folders = [str(root / "AMT_NCM_Test_NCM_Human1"), str(root / "AMT_NCM_Test_Human1_Human2")]
    run = dialeval_run(["analyze_pairwise", "--data", *folders, "--out", str(out), "--bootstrap-rounds", "20"],
                        timeout=300)
    assert run.returncode == 0, run.stderr
    for name in ("win_rates.csv", "rankings.csv", "agreement.json", "annotators.csv", "items.csv",
                 "report.html"):
        assert (out / name).is_file(), name
    rates = pd.read_csv(out / "win_rates.csv")
    assert list(rates.columns[:len(WIN_RATE_COLUMNS)]) == WIN_RATE_COLUMNS
    row = rates[(rates["model_a"] == "NCM") & (rates["model_b"] == "Human1")].iloc[0]
    assert (row["wins_a"], row["wins_b"], row["ties"]) == count_results(root / "AMT_NCM_Test_NCM_Human1")[:3]
    summary = json.loads((out / "agreement.json").read_text())
    assert "excluded" in summary["tie_policy"]["win_rates"] and summary["sections"][0]["weak_items"] > 0


def two_question_votes():
    """PW-Turn votes on two questions with opposite verdicts: X wins 'engaging', loses 'humanlike'."""
    rows = []
    for c in range(6):
        for t in range(4):
            for question, winner in (("Which response is more engaging?", "a"), ("Which sounds more human?", "b")):
                for w in range(3):
                    choice = winner if (c + t + w) % 5 else ("b" if winner == "a" else "a")
                    rows.append({"item_id": f"c{c}", "turn_index": 2 * t + 1, "worker_id": f"w{w}", "model_a": "X",
                                 "model_b": "Y", "choice": choice, "question": question})
    return pd.DataFrame(rows)


def test_every_output_is_per_question(tmp_path):
    # Issue 18 item 1: before, the two questions were pooled into one win rate of about 0.5.
    frame = two_question_votes()
    result = analyze(frame, tmp_path, PairwiseConfig(bootstrap_rounds=20), log=lambda *_: None)
    rates = result["win_rates"].set_index("question")
    for question, winner in (("Which response is more engaging?", "a"), ("Which sounds more human?", "b")):
        part = frame[frame["question"] == question]
        assert rates.loc[question, "wins_a"] == (part["choice"] == "a").sum()
        assert (rates.loc[question, "win_rate_a"] > 0.5) == (winner == "a")
    assert (rates["unit"] == "turn").all()
    for name in ("win_rates", "rankings", "agreement", "annotators", "items", "wmt_scores", "conversation_win_rates",
                 "win_rate_by_turn"):
        table = pd.read_csv(tmp_path / f"{name}.csv")
        assert set(table["question"]) == set(rates.index), name
    ranks = result["rankings"]
    assert ranks[ranks["question"] == "Which sounds more human?"].iloc[0]["model"] == "Y"
    html = (tmp_path / "report.html").read_text()
    assert "Which sounds more human?" in html and "Which response is more engaging?" in html
    assert "Holm" in html and "p_adjusted" in html


def test_disconnected_graph_and_unvarying_bootstrap_are_reported(tmp_path):
    frame = pd.DataFrame({"item_id": ["i1", "i2", "i3"], "worker_id": "w", "model_a": ["x", "p", "p"],
                          "model_b": ["y", "q", "q"], "choice": ["a", "a", "b"]})
    result = analyze(frame, tmp_path, PairwiseConfig(bootstrap_rounds=20), log=lambda *_: None)
    assert result["rankings"]["component"].nunique() == 2
    html = (tmp_path / "report.html").read_text()
    assert "disconnected parts" in html and "cannot vary" in html
    assert "too few decided votes" in html


def test_too_few_items_for_significance_is_warned_however_many_votes(tmp_path):
    # Three prompts, eight workers each, every vote for x: 24 decided votes, but the test counts prompts
    # (clusters): 3 won of 3 gives p = 2 x 0.5^3 = 0.25, and no outcome could go below alpha. The warning
    # counted votes (2 x 0.5^24) and stayed silent while the table could never show significance.
    frame = pd.DataFrame([{"item_id": f"p{i}", "context": f"prompt {i}", "worker_id": f"w{w}", "model_a": "x",
                           "model_b": "y", "choice": "a"} for i in range(3) for w in range(8)])
    result = analyze(frame, tmp_path, PairwiseConfig(bootstrap_rounds=20), log=lambda *_: None)
    row = result["win_rates"].iloc[0]
    assert (row["wins_a"], row["clusters_won_a"], row["p_value"]) == (24, 3, pytest.approx(0.25))
    html = (tmp_path / "report.html").read_text()
    assert "too few decided" in html and "any result to reach p &lt; 0.05" in html


def test_html_in_model_names_is_escaped(tmp_path):
    frame = pd.DataFrame({"item_id": ["i1", "i2"], "worker_id": "w", "model_a": "<script>alert(1)</script>",
                          "model_b": "<b>bold</b>", "choice": ["a", "b"], "question": "<i>which?</i>"})
    analyze(frame, tmp_path, PairwiseConfig(bootstrap_rounds=5), log=lambda *_: None)
    html = (tmp_path / "report.html").read_text()
    assert "<script>" not in html and "<b>bold" not in html and "<i>which" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;i&gt;which?&lt;/i&gt;" in html


def test_missing_study_on_some_rows_is_kept(tmp_path):
    # Issue 18 item 9: two studies plus rows without one raised TypeError under pandas 3.
    frame = two_question_votes()
    frame = frame[frame["question"] == "Which sounds more human?"].copy()
    frame["study"] = frame["item_id"].map({"c0": "s1", "c1": "s1", "c2": "s2", "c3": "s2"})
    result = analyze(frame, tmp_path, PairwiseConfig(bootstrap_rounds=5), log=lambda *_: None)
    by_study = result["win_rates_by_study"]
    assert len(by_study) == 3 and by_study["study"].isna().sum() == 1
    assert (by_study["wins_a"] + by_study["wins_b"] + by_study["ties"]).sum() == len(frame)


def test_chateval_weak_agreement_partitions_every_study(chateval, tmp_path):
    # Lee et al.'s definition: allagree + onedis + alldis = items (their Table 4 rows sum to the 200 prompts).
    _, data = chateval
    for study, part in data.comparisons.groupby("study"):
        weak = agreement.weak_agreement(part)
        assert weak["allagree"] + weak["onedis"] + weak["alldis"] == weak["items"], study
        assert weak["A/Bdis"] <= weak["onedis"] and weak["items"] <= 200


def test_only_onboarding_is_a_clear_error(tmp_path):
    frame = pd.DataFrame({"item_id": ["i1", "i2"], "worker_id": "w", "model_a": "x", "model_b": "y",
                          "choice": "a", "onboarding": True})
    with pytest.raises(DialevalError, match="all 2 comparisons are onboarding items"):
        analyze(frame, tmp_path, PairwiseConfig(bootstrap_rounds=5), log=lambda *_: None)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries({
    "item_id": st.sampled_from(["i1", "i2", "i3"]), "worker_id": st.sampled_from(["w1", "w2", "w3"]),
    "pair": st.sampled_from([("x", "y"), ("y", "x"), ("x", "z"), ("p", "q")]),
    "choice": st.sampled_from(["a", "b", "tie"]), "turn_index": st.sampled_from([None, 1, 3]),
    "question": st.sampled_from([None, "", "q1", "<b>q2</b>"]), "study": st.sampled_from([None, "s1", "s2"]),
    "automatic": st.sampled_from([None, None, None, True]), "context": st.sampled_from([None, "p1", "p2"])}),
    min_size=1, max_size=20))
def test_any_mix_of_votes_is_analysed_and_nothing_is_dropped(tmp_path_factory, rows):
    # Mixed questions, units, studies, missing keys, automatic ties and disconnected pairs (issue 18 items 1,
    # 5, 6, 9): every comparison is counted exactly once in win_rates.csv, whatever the mix.
    frame = pd.DataFrame([{**{k: v for k, v in row.items() if k != "pair"}, "model_a": row["pair"][0],
                           "model_b": row["pair"][1]} for row in rows])
    out = tmp_path_factory.mktemp("mix")
    result = analyze(frame, out, PairwiseConfig(bootstrap_rounds=5), log=lambda *_: None)
    rates = result["win_rates"]
    assert (rates[["wins_a", "wins_b", "ties", "automatic_ties"]].to_numpy().sum()) == len(frame)
    assert (out / "report.html").is_file() and "<b>q2" not in (out / "report.html").read_text()


def test_report_opens_with_the_verdict_on_chateval(chateval, tmp_path):
    """Issue 40 item 4: the pairwise report had no verdict. Winners from an independent count of ChatEval's
    results.txt (count_results); Human2 over Human1 is settled (binomial test on the votes, scipy), NCM over
    Human1 is not at the item level, so the verdict says how many more items would settle it."""
    import re

    from scipy.stats import binomtest

    root, _ = chateval
    folders = ["AMT_NCM_Test_Human1_Human2", "AMT_NCM_Test_NCM_Human1"]
    data = load([root / f for f in folders], log=None)
    analyze(data.comparisons, tmp_path, PairwiseConfig(bootstrap_rounds=20), log=lambda *_: None)
    human1, human2 = count_results(root / folders[0])[:2]
    ncm, human1_b = count_results(root / folders[1])[:2]
    assert human2 > human1 and binomtest(human2, human1 + human2).pvalue < 0.01 and ncm > human1_b
    html = (tmp_path / "report.html").read_text()
    assert html.index('data-testid="verdict"') < html.index("<h2>")  # before every section
    verdict = re.sub(r"<[^>]+>", "", html[html.index('data-testid="verdict"'):html.index("</div>")])
    settled, unsettled = verdict.split("Not settled:")
    assert f"Human2 over Human1: {100 * human2 / (human1 + human2):.0f}% of decided votes" in settled
    assert "NCM over Human1" in unsettled and re.search(r"about [\d,]+ more items would settle it", unsettled)


def test_heatmap_numbers_contrast_at_least_4_5_with_their_cells():
    """Issue 40 item 4: the heatmap's numbers were black on dark blue and dark red. WCAG 2 contrast ratio,
    computed here from its definition (relative luminance of sRGB), for every number against its cell."""
    from matplotlib.colors import to_rgb

    from parlai_dialeval.analysis import pairwise_plots

    def lum(colour):
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in to_rgb(colour)]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    rows = []
    for k in range(12):  # X always beats Y (major 1 and 0: the darkest cells), X beats Z 3 times in 4, Y-Z even
        rows += [{"item_id": f"p{k}", "worker_id": "w", "model_a": "X", "model_b": "Y", "choice": "a",
                  "context": "c", "response_a": f"x{k}", "response_b": f"y{k}"},
                 {"item_id": f"q{k}", "worker_id": "w", "model_a": "X", "model_b": "Z", "choice": "a" if k % 4 else "b",
                  "context": "c", "response_a": f"x{k}", "response_b": f"z{k}"},
                 {"item_id": f"r{k}", "worker_id": "w", "model_a": "Y", "model_b": "Z", "choice": "ab"[k % 2],
                  "context": "c", "response_a": f"y{k}", "response_b": f"z{k}"}]
    votes = pairwise.with_sections(pd.DataFrame(rows))
    wmt = pairwise.wmt_scores(pairwise.win_rates(votes, by=pairwise.SECTION), by=pairwise.SECTION)
    fig = pairwise_plots.heatmap(wmt, ["X", "Y", "Z"])
    ax = fig.axes[0]
    image = ax.images[0]
    texts = ax.texts
    assert len(texts) == 6
    for text in texts:
        j, i = (round(v) for v in text.get_position())
        cell = image.cmap(image.norm(image.get_array()[i, j]))
        high, low = sorted((lum(text.get_color()), lum(cell)), reverse=True)
        assert (high + 0.05) / (low + 0.05) >= 4.5, (text.get_text(), text.get_color(), cell)
