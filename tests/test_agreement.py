"""Agreement statistics of pairwise votes against hand-worked examples."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from needs import needs

from parlai_dialeval.analysis import agreement


def votes(items: dict[str, list[str]], workers: dict[str, list[str]] | None = None) -> pd.DataFrame:
    rows = []
    for item, choices in items.items():
        names = (workers or {}).get(item) or [f"w{k}" for k in range(len(choices))]
        rows += [{"item_id": item, "worker_id": w, "choice": c, "model_a": "A", "model_b": "B",
                  "turn_index": None, "automatic": None} for w, c in zip(names, choices)]
    return pd.DataFrame(rows)


def test_fleiss_kappa_by_hand():
    items = {"i1": ["a", "a", "a"], "i2": ["a", "a", "b"], "i3": ["b", "b", "tie"], "i4": ["tie", "tie", "tie"]}
    # Hand computation (Fleiss 1971): P_i = (sum n_ij^2 - n) / (n (n - 1)) with n = 3.
    p_i = [(9 - 3) / 6, (4 + 1 - 3) / 6, (4 + 1 - 3) / 6, (9 - 3) / 6]
    p_bar = np.mean(p_i)
    shares = np.array([5, 3, 4]) / 12  # a, b, tie over 12 votes
    p_e = (shares ** 2).sum()
    result = agreement.fleiss_kappa(votes(items))
    assert result["fleiss_kappa"] == pytest.approx((p_bar - p_e) / (1 - p_e))
    assert result["items"] == 4 and result["votes_per_item"] == 3 and result["items_left_out"] == 0


def test_fleiss_kappa_leaves_out_items_with_other_vote_counts_and_automatic_ties():
    frame = votes({"i1": ["a", "a", "a"], "i2": ["a", "b", "b"], "i3": ["b", "a"], "i4": ["a", "b", "a"]})
    frame = pd.concat([frame, pd.DataFrame([{"item_id": "i5", "worker_id": "automatic", "choice": "tie",
                                             "model_a": "A", "model_b": "B", "automatic": True}])])
    result = agreement.fleiss_kappa(frame)
    assert result["items"] == 3 and result["items_left_out"] == 1


def test_negatively_correlated_annotator_is_flagged():
    rng = np.random.default_rng(0)
    items, workers = {}, {}
    for i in range(30):
        truth = rng.choice(["a", "b"])
        contrary = "b" if truth == "a" else "a"
        items[f"i{i}"] = [truth, truth, truth, contrary]
        workers[f"i{i}"] = ["good1", "good2", "good3", "contrarian"]
    table = agreement.annotator_correlations(votes(items, workers)).set_index("worker_id")
    assert table.loc["contrarian", "negative"] and table.loc["contrarian", "spearman"] == pytest.approx(-1)
    assert not table.loc["good1", "negative"] and table.loc["good1", "spearman"] > 0


def test_item_total_correlation_finds_an_invalid_prompt():
    # Five comparisons (model pairs) of different true margins over four prompts; prompt p3 is answered
    # against the margin, so its corrected item-total correlation is negative.
    rows = []
    margins = [1.0, 0.5, 0.0, -0.5, -1.0]
    for g, margin in enumerate(margins):
        for p in range(4):
            score = -margin if p == 3 else margin
            choice = "a" if score > 0 else "b" if score < 0 else "tie"
            rows.append({"item_id": f"g{g}/p{p}", "worker_id": "w", "choice": choice, "model_a": f"A{g}",
                         "model_b": f"B{g}", "context": f"p{p}", "automatic": None, "turn_index": None})
    table = agreement.item_total_correlations(pd.DataFrame(rows)).set_index("prompt")
    assert table.loc["p3", "item_total_r"] == pytest.approx(-1)
    assert table.loc["p0", "item_total_r"] == pytest.approx(1)


def test_mixed_turn_and_dialogue_items_are_all_kept():
    # Issue 18 item 5: PW-Turn votes carry turn_index, PW-Dialog votes do not; before the fix the
    # dialogue-level items had a NaN key and vanished from Fleiss' kappa.
    turn = votes({"conv1": ["a", "a", "b"], "conv2": ["b", "b", "b"]}).assign(turn_index=1)
    dialog = votes({"pair1": ["a", "a", "a"], "pair2": ["a", "b", "tie"], "pair3": ["tie", "tie", "b"]})
    result = agreement.fleiss_kappa(pd.concat([turn, dialog], ignore_index=True))
    assert result["items"] == 5 and result["items_left_out"] == 0 and result["vote_counts"] == {3: 5}


def test_two_vote_items_are_counted_apart():
    result = agreement.fleiss_kappa(votes({"i1": ["a", "a", "b"], "i2": ["a", "b", "b"], "i3": ["a", "b"],
                                           "i4": ["b"]}))
    assert result["vote_counts"] == {1: 1, 2: 1, 3: 2} and result["items"] == 2


def test_missing_study_is_a_group_of_its_own():
    # Issue 18 item 9: with pandas 3, NaN survives astype(str) and "|".join raised TypeError.
    frame = votes({f"i{i}": ["a", "b", "a"] for i in range(6)})
    frame["study"] = frame["item_id"].map({"i0": "s1", "i1": "s1", "i2": "s2", "i3": "s2"})
    assert agreement.item_total_correlations(frame)["comparisons"].max() >= 1
    assert agreement.fleiss_kappa(frame)["items"] == 6


def test_lee_weak_agreement_partitions_items():
    # Lee et al. 2020 Table 4, NCME human 1 vs Blender(2.7B): allagree 29, A/Bdis 51, onedis 130,
    # alldis 41 over 200 prompts: allagree + onedis + alldis = 200 and A/Bdis is part of onedis.
    assert 29 + 130 + 41 == 200 and 51 <= 130
    items = {"agree": ["a", "a", "a"], "ab": ["a", "b", "a"], "tie_b": ["b", "tie", "b"], "all": ["a", "b", "tie"],
             "single": ["a"]}
    result = agreement.weak_agreement(votes(items))
    assert result == {"allagree": 1, "A/Bdis": 1, "onedis": 2, "alldis": 1, "items": 4}
    assert result["allagree"] + result["onedis"] + result["alldis"] == result["items"]


def test_lee_table4_rows_use_the_partition_definition(shared_data):
    # Lee et al. 2020 Table 4 (NCME, 200 prompts per comparison), read from the paper's text: with their
    # onedis = "exactly two categories", allagree + onedis + alldis is the 200 prompts in 38 of the 46 rows
    # (the others are a few prompts short); the old reading (onedis = a tie and one of A/B, apart from
    # A/Bdis) would need allagree + A/Bdis + onedis + alldis = 200, which holds in no row.
    import re

    papers = shared_data.parent / "papers"
    paper = next(papers.glob("lee2020_*.txt"), None)
    if paper is None:
        needs(f"Lee et al. 2020 text not found in {papers}")
    text = paper.read_text(encoding="utf-8")
    table = text[text.index("NCME human 1"):text.index("Table 4: The result")]
    rows = [[int(x) if x != "-" else 0 for x in row]
            for row in re.findall(r"\d+ % \d+ % \d+ % (\d+) (\d+) (\d+) (\d+|-) ", table)]
    assert len(rows) == 46
    assert sum(allagree + onedis + alldis == 200 for allagree, _, onedis, alldis in rows) == 38
    assert all(abdis <= onedis for _, abdis, onedis, _ in rows)
    assert not any(sum(row) == 200 for row in rows)
    assert all(sum(row) - row[1] <= 200 for row in rows)


def test_votes_without_a_prompt_text_are_kept_under_their_item():
    frame = votes({"i1": ["a", "b"], "i2": ["a", "a"]})
    frame["context"] = ["hello", "hello", None, None]
    table = agreement.item_total_correlations(frame).set_index("prompt")
    assert set(table.index) == {"hello", "i2"}


def test_agreement_is_about_the_model_chosen_not_the_side_it_was_shown_on():
    # The same item shown with A and B swapped for some workers (an A/B task launched twice with
    # different seeds, ACUTE pairs re-randomised per worker): three workers who all pick the same model
    # agree perfectly, so kappa and alpha are 1 and every item is allagree. Before the fix the
    # categories were the sides: kappa -0.33, no item allagree, and a worker flagged as contrary.
    rows = []
    for i in range(6):
        winner = "x" if i % 2 else "y"
        for w in range(3):
            a, b = ("y", "x") if (i + w) % 2 else ("x", "y")
            rows.append({"item_id": f"i{i}", "worker_id": f"w{w}", "model_a": a, "model_b": b,
                         "choice": "a" if a == winner else "b", "context": f"prompt {i}"})
    frame = pd.DataFrame(rows)
    result = agreement.fleiss_kappa(frame)
    assert result["fleiss_kappa"] == pytest.approx(1) and result["krippendorff_alpha"] == pytest.approx(1)
    assert agreement.weak_agreement(frame) == {"allagree": 6, "A/Bdis": 0, "onedis": 0, "alldis": 0, "items": 6}
    table = agreement.annotator_correlations(frame, min_items=2)
    assert not table["negative"].any() and np.allclose(table["spearman"], 1)


def test_item_total_correlations_equal_the_dense_definition_on_random_votes():
    # Issue 43: the groups x prompts table became long form (it was 3 GB for 200 Arena models); the
    # reference is the definition computed densely with scipy, as the code did before.
    from scipy import stats

    rng = np.random.default_rng(5)
    rows = [{"item_id": f"i{n}", "context": f"p{rng.integers(0, 12)}", "worker_id": f"w{n % 7}",
             "model_a": f"m{pair}", "model_b": "ref", "choice": rng.choice(["a", "b", "tie"])}
            for n, pair in enumerate(rng.integers(0, 9, 400))]
    frame = pd.DataFrame(rows)
    got = agreement.item_total_correlations(frame).set_index("prompt")
    matrix = frame.assign(score=frame["choice"].map({"a": 1, "b": -1, "tie": 0})).pivot_table(
        index="model_a", columns="context", values="score", aggfunc="mean")
    total, count = matrix.sum(axis=1), matrix.notna().sum(axis=1)
    assert list(got.index) == list(matrix.columns)
    for prompt in matrix.columns:
        item = matrix[prompt]
        present = item.notna() & (count > 1)
        rest = (total[present] - item[present]) / (count[present] - 1)
        assert got.loc[prompt, "comparisons"] == present.sum()
        assert got.loc[prompt, "mean_score"] == pytest.approx(item[present].mean())
        assert got.loc[prompt, "item_total_r"] == pytest.approx(stats.pearsonr(item[present], rest).statistic,
                                                                abs=1e-12)
