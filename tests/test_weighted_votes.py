"""Votes with a ``weight`` (the arena's inverse sampling propensity, docs/data_model.md): the Bradley-Terry fits of
analyze_pairwise (analysis/bradley_terry.py: the rankings' regularised bootstrap, choix's I-LSR, and style control's
Newton fit, both reading the weights of the one encoding) weigh each vote's likelihood by it. An integer weight k
must give the fit of the same vote written k times (an independent statement of what a weight means), and a file's
weights, probabilities and tie kinds are checked on load."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.analysis import pairwise, rankings, style_control
from parlai_dialeval.data import from_records
from parlai_dialeval.data.schema import VOIDED
from parlai_dialeval.errors import DataError


def votes(seed: int = 0, n: int = 300, models: int = 4):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    strength = np.linspace(1, -1, models)
    won = rng.random(n) < 1 / (1 + np.exp(strength[b] - strength[a]))
    tie = rng.random(n) < 0.15
    outcome = np.where(tie, 0.5, won.astype(float))
    weights = rng.integers(1, 4, n).astype(float)
    return a, b, outcome, weights


def replicated(weights, *arrays):
    index = np.repeat(np.arange(len(weights)), weights.astype(int))
    return [array[index] for array in arrays]


MODELS = ["m0", "m1", "m2", "m3"]


def test_an_integer_weight_is_the_vote_written_that_many_times_in_the_bootstrapped_fit():
    a, b, outcome, weights = votes()
    weighted, low, high = bt.bootstrap(bt.Votes(MODELS, a, b, outcome, weights=weights), rounds=200, seed=1)
    copies, _, _ = bt.bootstrap(bt.Votes(MODELS, *replicated(weights, a, b, outcome)), rounds=0)
    assert np.allclose(weighted, copies, atol=1e-6)
    plain, _, _ = bt.bootstrap(bt.Votes(MODELS, a, b, outcome), rounds=0)
    assert not np.allclose(weighted, plain, atol=1e-3)  # the weights do change the fit
    assert np.all(low < weighted) and np.all(weighted < high)


def test_an_integer_weight_is_the_vote_written_that_many_times_in_the_style_control_fit():
    a, b, outcome, weights = votes(seed=2)
    x = np.random.default_rng(3).normal(size=(len(a), 1))
    fit = bt.fit(bt.Votes(MODELS, a, b, outcome, weights=weights), x)
    ra, rb, ro, rx = replicated(weights, a, b, outcome, x)
    copies = bt.fit(bt.Votes(MODELS, ra, rb, ro), rx)
    assert np.allclose(fit.strengths, copies.strengths, atol=1e-7)
    assert np.allclose(fit.coefficients, copies.coefficients, atol=1e-7)


def comparison_frame(weights=None) -> pd.DataFrame:
    # "b" wins 3 of 4 votes against "a", but the one vote for "a" weighs 9
    frame = pd.DataFrame({"item_id": [f"i{k}" for k in range(4)], "worker_id": "w", "model_a": "a", "model_b": "b",
                          "choice": ["a", "b", "b", "b"], "question": "q", "unit": "response"})
    if weights is not None:
        frame["weight"] = weights
    return frame


def test_the_rankings_and_style_control_read_the_weight_column():
    plain = rankings.rankings(comparison_frame(), rounds=20)
    weighted = rankings.rankings(comparison_frame([9.0, 1.0, 1.0, 1.0]), rounds=20)
    assert plain["model"].iloc[0] == "b" and weighted["model"].iloc[0] == "a"
    frame = comparison_frame([9.0, 1.0, 1.0, 1.0]).assign(response_a=["x y z", "x", "x y", "x"], response_b="x y")
    styled = style_control.pairwise_style_control(frame).rankings
    assert styled.sort_values("bt_raw", ascending=False)["model"].iloc[0] == "a"
    assert bt.encode(comparison_frame([1.0, np.nan, 1.0, 1.0])).weights is None  # all 1 (missing = 1)
    assert list(bt.encode(comparison_frame([9.0, np.nan, 1.0, 1.0])).weights) == [9.0, 1.0, 1.0, 1.0]


RECORD = {"type": "comparison", "item_id": "i", "worker_id": "w", "model_a": "a", "model_b": "b", "choice": "tie"}


@pytest.mark.parametrize("extra, field", [({"weight": 0}, "weight"), ({"weight": -1.5}, "weight"),
                                          ({"sampling_probability": 1.5}, "sampling_probability"),
                                          ({"sampling_probability": 0}, "sampling_probability"),
                                          ({"tie_kind": "meh"}, "tie_kind"),
                                          ({"choice": "a", "tie_kind": "both_bad"}, "tie_kind")])
def test_weights_probabilities_and_tie_kinds_are_checked(extra, field):
    with pytest.raises(DataError, match=f"field '{field}'"):
        from_records([{**RECORD, **extra}], source="test")
    from_records([{**RECORD, "weight": 2.5, "sampling_probability": 0.2, "tie_kind": "both_bad"}], source="test")


def test_voided_votes_are_left_out_and_counted_by_reason():
    frame = pd.DataFrame({"choice": ["a", "b", "a", "tie"], "anonymity_leak": [True, None, True, None],
                          "duplicate_prompt": [True, None, None, True]})
    kept, counts = pairwise.split_voided(frame)
    assert list(kept.index) == [1]
    assert counts == {VOIDED["anonymity_leak"]: 2, VOIDED["duplicate_prompt"]: 1}
    untouched, none = pairwise.split_voided(frame[["choice"]])
    assert none == {} and len(untouched) == 4
