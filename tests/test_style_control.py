"""Style control: covariates counted from hand-written texts (the fit against statsmodels and FastChat is in
tests/test_bradley_terry.py), and a simulation
with a known truth whose generator shares no code with the estimator (a length bias in the votes that raw
Bradley-Terry mistakes for quality)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from parlai_dialeval.analysis import style_control
from parlai_dialeval.analysis.live_chat import LiveChatConfig, analyze
from parlai_dialeval.importers import load
from parlai_dialeval.scripts.analyze_live_chat import run_analysis
from parlai_dialeval.metrics.style_features import conversation_features, text_features


def test_features_of_hand_written_texts():
    texts = pd.Series([
        "Hello there, how are you?",                                # 5 words, 1 question
        "# Plan\n\n- first **step**\n- second\n1. third\n2) fourth",  # 1 header, 4 list items, 1 bold
        "Great!! 😀 🎉 Do you like it??? And you?",                  # 2 emoji, 2 questions
        "__bold__ and **more bold** but not ** this",               # 2 bold spans
        "#hashtag is no header; - not a list; 3.5 is a number",      # nothing of markdown
        None,
    ])
    got = text_features(texts)
    assert got["length"].tolist() == [5, 11, 9, 8, 12, 0]
    assert got["headers"].tolist() == [0, 1, 0, 0, 0, 0]
    assert got["lists"].tolist() == [0, 4, 0, 0, 0, 0]
    assert got["bold"].tolist() == [0, 1, 0, 2, 0, 0]
    assert got["questions"].tolist() == [1, 0, 2, 0, 0, 0]
    assert got["emoji"].tolist() == [0, 0, 2, 0, 0, 0]


def test_conversation_features_are_the_mean_per_bot_turn():
    turns = pd.DataFrame({"conversation_id": ["c1"] * 4 + ["c2"] * 2,
                          "speaker": ["human", "bot", "human", "bot", "human", "bot"],
                          "text": ["hi there friend", "one two?", "ok", "a b c d?", "x", "**y** 😀"]})
    got = conversation_features(turns)
    assert got.loc["c1", "length"] == 3.0 and got.loc["c1", "questions"] == 1.0  # (2 + 4) / 2 words
    assert got.loc["c2", "bold"] == 1.0 and got.loc["c2", "emoji"] == 1.0 and got.loc["c2", "length"] == 2.0


def _simulated_votes(seed: int, n_votes: int = 3000):
    """Eight models whose true log-strengths fall as their replies grow longer; voters add a length bonus of
    1.2 x log(length ratio) to the log-odds (not the estimator's feature: a different functional form)."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(1.0, -1.0, 8)  # m0 best ... m7 worst
    words = np.linspace(8, 60, 8)  # ... and the worse the model, the longer it talks
    rows = []
    for vote in range(n_votes):
        i, j = rng.choice(8, size=2, replace=False)
        len_i, len_j = (max(1, int(rng.normal(words[m], words[m] / 4))) for m in (i, j))
        logit = strength[i] - strength[j] + 1.2 * np.log(len_i / len_j)
        u = rng.random()
        p_i = 1 / (1 + np.exp(-logit))
        choice = "a" if u < p_i * 0.9 else "b" if u > p_i * 0.9 + 0.1 else "tie"
        rows.append({"item_id": f"prompt-{vote // 3}", "worker_id": f"w{rng.integers(40)}", "model_a": f"m{i}",
                     "model_b": f"m{j}", "choice": choice, "context": f"prompt {vote // 3}",
                     "response_a": " ".join(["word"] * len_i), "response_b": " ".join(["word"] * len_j)})
    return pd.DataFrame(rows), pd.Series(strength - strength.mean(), index=[f"m{k}" for k in range(8)])


def test_style_control_recovers_the_true_strengths_that_raw_bradley_terry_misses():
    votes, truth = _simulated_votes(seed=7)
    result = style_control.pairwise_style_control(votes, features=("length",))
    table = result.rankings.set_index("model").loc[truth.index]
    raw_error = np.sqrt(np.mean((table["bt_raw"] - truth) ** 2))
    style_error = np.sqrt(np.mean((table["bt_style"] - truth) ** 2))
    rank_truth = np.arange(1, 9)
    raw_rank_error = np.abs(table["rank_raw"].to_numpy() - rank_truth).sum()
    style_rank_error = np.abs(table["rank_style"].to_numpy() - rank_truth).sum()
    assert style_error < 0.2 < raw_error, (style_error, raw_error)
    assert style_rank_error <= 4 < raw_rank_error, (style_rank_error, raw_rank_error)
    covered = ((table["style_ci_low"] <= truth) & (truth <= table["style_ci_high"])).mean()
    assert covered >= 0.75
    length = result.coefficients.set_index("covariate").loc["length"]
    assert length["ci_low"] > 0 and length["win_share"] > 0.6
    assert "twice as long" in length["sentence"]


def test_user_covariates_enter_by_item_and_model():
    votes, _ = _simulated_votes(seed=1, n_votes=600)
    user = pd.DataFrame({"item_id": votes["item_id"].tolist() * 2,
                         "model": votes["model_a"].tolist() + votes["model_b"].tolist(),
                         "politeness": np.random.default_rng(0).normal(size=2 * len(votes))})
    user = user.drop_duplicates(["item_id", "model"])
    result = style_control.pairwise_style_control(votes, user_covariates=user, features=("length",))
    assert set(result.coefficients["covariate"]) == {"length", "politeness"}
    assert "with one standard deviation more politeness" in result.coefficients.set_index("covariate").loc[
        "politeness", "contrast"]


@pytest.mark.parametrize("missing", ["response_b"])
def test_votes_without_texts_are_left_out_and_counted(missing):
    votes, _ = _simulated_votes(seed=2, n_votes=300)
    votes.loc[:49, missing] = None
    result = style_control.pairwise_style_control(votes)
    assert sum(result.left_out.values()) == 50
    assert result.rankings["votes"].sum() == 2 * 250


def test_acute_votes_take_the_mean_style_of_each_conversation():
    """PW-Dialog / ACUTE votes compare whole conversations: their covariates are the conversations' means."""
    votes, truth = _simulated_votes(seed=4, n_votes=1500)
    turns = pd.DataFrame({"conversation_id": [f"{side}{i}" for i in range(len(votes)) for side in "ab"],
                          "speaker": "bot",
                          "text": [t for pair in zip(votes["response_a"], votes["response_b"]) for t in pair]})
    acute = votes.drop(columns=["response_a", "response_b", "context"]).assign(
        conversation_a=[f"a{i}" for i in range(len(votes))], conversation_b=[f"b{i}" for i in range(len(votes))])
    result = style_control.pairwise_style_control(acute, conversation_features(turns), features=("length",))
    assert set(result.rankings["unit"]) == {"dialog"}
    table = result.rankings.set_index("model").loc[truth.index]
    assert np.sqrt(np.mean((table["bt_style"] - truth) ** 2)) < np.sqrt(np.mean((table["bt_raw"] - truth) ** 2))


def test_live_chat_scores_adjusted_for_a_style_the_better_model_lacks():
    """Ratings rise with the bot's words per turn; the talkative model is the worse one: adjusted scores
    recover the true order and the true effect (simulated, known truth)."""
    rng = np.random.default_rng(5)
    rows, style = [], []
    for c in range(600):
        model = ["terse", "verbose"][c % 2]
        words = rng.normal(6 if model == "terse" else 14, 2)
        worker = f"w{rng.integers(60)}"
        score = (0.5 if model == "terse" else 0.2) + 0.1 * (words - 10) + rng.normal(0, 0.3)
        rows.append({"conversation_id": f"c{c}", "worker_id": worker, "model": model, "score": score})
        style.append({"conversation_id": f"c{c}", "length": words})
    scores, effects = style_control.live_chat_style_control(pd.DataFrame(rows),
                                                            pd.DataFrame(style).set_index("conversation_id"))
    scores = scores.set_index("model")
    assert scores.loc["verbose", "score_raw"] > scores.loc["terse", "score_raw"]  # raw: fooled by length
    assert scores.loc["terse", "score_style"] > scores.loc["verbose", "score_style"]
    per_word = effects.iloc[0]["coefficient"] / effects.iloc[0]["per_sd"]
    assert abs(per_word - 0.1) < 0.02


def test_a_covariate_off_its_usual_value_in_a_few_conversations_is_left_out():
    """Two conversations of 300 carry a list; they happen to score high. A coefficient resting on two clusters
    would come out 'significant' (FED's list items: 2 of 500 conversations, p = 5e-8 before); it is left out,
    and length, which varies everywhere, stays."""
    rng = np.random.default_rng(3)
    conversations = pd.DataFrame({"conversation_id": [f"c{i}" for i in range(300)],
                                  "worker_id": [f"w{i % 30}" for i in range(300)],
                                  "model": ["a", "b"] * 150, "score": rng.normal(0, 1, 300)})
    lists = np.zeros(300)
    lists[[4, 9]] = 1.0
    conversations.loc[[4, 9], "score"] += 5
    style = pd.DataFrame({"length": rng.normal(10, 3, 300), "lists": lists},
                         index=conversations["conversation_id"])
    _, effects = style_control.live_chat_style_control(conversations, style)
    assert effects["covariate"].tolist() == ["length"]
    style.iloc[:style_control.MIN_UNUSUAL, 1] = 1.0  # as many as the rule asks: kept
    _, effects = style_control.live_chat_style_control(conversations, style)
    assert effects["covariate"].tolist() == ["length", "lists"]


def test_fed_dialogues_are_adjusted_with_each_conversation_its_own_cluster(shared_data, tmp_path):
    """FED (Mehri & Eskenazi 2020): a panel of five annotators rated every conversation, so the conversation,
    not its first rater, is the independent unit (before: 'No style adjustment: 500 conversations of 1 worker').
    The adjusted order keeps Table 4's dialog-level Overall order (Human 4.60 > Meena 4.11 > Mitsuku 3.10), and the
    raw interval is the mean's CR2 interval with one cluster per conversation, computed here by hand."""
    out = tmp_path / "fed"
    summary = run_analysis({"data": [str(shared_data / "fed" / "fed_data.json")], "out": str(out),
                            "qc_test": "none"}, log=lambda *_: None)
    style = summary["style_control"]
    assert style["clustered_by"] == "conversations" and style["conversations"] == 500
    assert "lists" in style["left_out"] and "length" in style["covariates"]  # lists: 2 of 500 conversations
    table = pd.read_csv(out / "style_control.csv").set_index("model")
    assert table.sort_values("score_style", ascending=False).index.tolist() == ["Human", "Meena", "Mitsuku"]
    # the raw fit is model means; CR2 with a cluster per conversation: each squared residual over 1 - its leverage
    # 1/n_m, var = sum(e^2 / (1 - 1/n_m)) / n_m^2
    conv = analyze(load([shared_data / "fed" / "fed_data.json"], log=None), LiveChatConfig(qc_test="none")).conversations
    n = len(conv)
    residual = conv["overall_z"] - conv.groupby("model")["overall_z"].transform("mean")
    human = conv["model"].eq("Human")
    se = np.sqrt((residual[human] ** 2 / (1 - 1 / human.sum())).sum()) / human.sum()
    mean = conv.loc[human, "overall_z"].mean()
    t = stats.t.ppf(0.975, n - 1)
    assert table.loc["Human", ["raw_ci_low", "raw_ci_high"]].tolist() == pytest.approx([mean - t * se, mean + t * se])


def test_complete_separation_is_said_in_words_never_printed_as_an_exact_estimate():
    # Issue 50 item 5: in a small study a style coefficient was printed "questions 10.3 [10.3, 10.3], win share
    # 1", and a model that never lost made the others' strengths -12 with narrow intervals. Here w never loses
    # (no finite strength: said so, left out, the others fitted without its votes), and between x and y the
    # reply with a question always wins (the covariate separates the votes: no coefficient, in words).
    rows = []
    for i in range(12):
        rows.append({"item_id": f"w{i}", "model_a": "w", "model_b": "x" if i % 2 else "y", "choice": "a",
                     "response_a": "fine words here", "response_b": "other words here"})
        asked = i % 2 == 0
        rows.append({"item_id": f"p{i}", "model_a": "x", "model_b": "y", "choice": "a" if asked else "b",
                     "response_a": "so how are you?" if asked else "plain reply here",
                     "response_b": "plain reply here" if asked else "and you, friend?"})
    result = style_control.pairwise_style_control(pd.DataFrame(rows), features=("questions",))
    table = result.rankings.set_index("model")
    assert np.isnan(table.loc["w", "bt_raw"]) and table.loc["w", "note"].startswith("no finite strength")
    assert table.loc["x", "bt_raw"] == pytest.approx(-table.loc["y", "bt_raw"])  # centred over x and y alone
    assert abs(table.loc["x", "bt_raw"]) < 1 and table.loc["x", "raw_ci_low"] < table.loc["x", "raw_ci_high"]
    assert table[["bt_style", "style_ci_low", "style_ci_high"]].isna().all().all()
    assert table.loc["x", "note"].startswith("no finite strengths: the covariates separate the votes")
    questions = result.coefficients.set_index("covariate").loc["questions"]
    assert np.isnan(questions[["coefficient", "ci_low", "ci_high", "win_share", "p_value"]].astype(float)).all()
    assert "cannot be estimated" in questions["sentence"] and not result.sentences
