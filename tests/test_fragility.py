"""Fragility (analysis/fragility.py): the fewest votes and workers whose removal reverses a result, against
brute force over every removal on small data (independent: choix and itertools only)."""
from __future__ import annotations

import itertools

import choix
import numpy as np
import pandas as pd

from parlai_dialeval.analysis.fragility import _Section, bt_fragility, exact_bt_votes, pair_fragility
from parlai_dialeval.analysis.pairwise import with_sections
from parlai_dialeval.testing.crowd_votes import crowd_study


def _votes(rows):
    """(worker, choice) rows of one pair X (model_a) vs Y."""
    return with_sections(pd.DataFrame({"item_id": [f"i{n}" for n in range(len(rows))], "worker_id": [w for w, _ in rows],
                                       "model_a": "X", "model_b": "Y", "choice": [c for _, c in rows]}))


def test_pair_fragility_is_the_brute_force_minimum_over_votes_and_workers():
    rows = ([("w1", "a")] * 4 + [("w2", "a")] * 2 + [("w2", "b")] + [("w3", "a"), ("w3", "b"), ("w3", "tie")]
            + [("w4", "b")] * 2 + [("w5", "a")])
    table = pair_fragility(_votes(rows)).iloc[0]
    decided = [(w, c) for w, c in rows if c != "tie"]

    def reversed_without(kept):
        return sum(c == "b" for _, c in kept) > sum(c == "a" for _, c in kept)

    fewest_votes = min(k for k in range(len(decided) + 1) for drop in itertools.combinations(range(len(decided)), k)
                       if reversed_without([v for i, v in enumerate(decided) if i not in drop]))
    workers = sorted({w for w, _ in decided})
    fewest_workers = min(k for k in range(len(workers) + 1) for drop in itertools.combinations(workers, k)
                         if reversed_without([v for v in decided if v[0] not in drop]))
    assert (table["leader"], table["wins_leader"], table["wins_trailer"]) == ("X", 8, 4)
    assert table["votes_to_reverse"] == fewest_votes == 5
    assert table["workers_to_reverse"] == fewest_workers == 2  # w1 and w2 (net +4 and +1 of a margin of 4)


def test_pair_sentence_in_words():
    rows = [("w1", "a")] * 623 + [("w2", "b")] * 617
    assert pair_fragility(_votes(rows)).iloc[0]["sentence"] == (
        "X over Y reverses if 7 of 1,240 decided votes (0.56%) are dropped, or the votes of 1 of 2 workers (50%)")
    level = pair_fragility(_votes([("w1", "a"), ("w2", "b")])).iloc[0]
    assert level["sentence"].endswith("are level (1 wins each): no order to reverse")
    assert np.isnan(pair_fragility(_votes([("w1", "a")] * 3)).iloc[0]["votes_to_reverse"])


def _small(seed):
    return with_sections(crowd_study(np.random.default_rng(seed), strengths=(0, 0.15, 0.3), votes=60, workers=6,
                                     items_per_pair=5))


def test_influence_estimate_is_within_one_vote_of_the_exact_search():
    checked = 0
    for seed in range(6):
        study = _small(seed)
        section = _Section(study)
        for row in bt_fragility(study).drop_duplicates(["model", "over"]).itertuples(index=False):
            if row.votes_to_reverse > 4:  # keeps the search (every removal of up to 3 votes) fast
                continue
            x, y = section.models.index(row.model), section.models.index(row.over)
            exact = exact_bt_votes(section, x, y, row.votes_to_reverse)
            checked += 1
            assert abs(row.first_order_estimate - exact) <= 1, (seed, row)
            assert row.votes_to_reverse == exact, (seed, row)
    assert checked >= 8


def test_top_model_fragility_against_brute_force_over_single_votes_and_pairs_of_votes():
    study = _small(1)
    top = bt_fragility(study).iloc[0]
    assert top["order"] == "top" and top["votes_to_reverse"] == 2
    models = sorted(set(study["model_a"]) | set(study["model_b"]))
    index = {m: i for i, m in enumerate(models)}
    votes = study[["model_a", "model_b", "choice"]].to_numpy()

    def top_after_dropping(drop):
        matrix = np.zeros((len(models), len(models)))
        for n, (a, b, choice) in enumerate(votes):
            if n not in drop:
                win = {"a": 1.0, "b": 0.0, "tie": 0.5}[choice]
                matrix[index[a], index[b]] += win
                matrix[index[b], index[a]] += 1 - win
        return models[int(np.argmax(choix.ilsr_pairwise_dense(matrix, alpha=1e-3)))]

    assert top_after_dropping(set()) == top["model"]
    assert all(top_after_dropping({n}) == top["model"] for n in range(len(votes)))
    assert any(top_after_dropping(set(pair)) != top["model"] for pair in itertools.combinations(range(len(votes)), 2))
