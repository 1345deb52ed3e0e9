"""Position effects per model (analysis/position.py): on votes drawn here with a shared and a model-specific
advantage of being shown first, the per-model effects are recovered and the strengths net of position are
unbiased where the plain fit is not; the ridge is the penalised likelihood an independent scipy fit maximises; a
design that always shows a model on one side is named. benchmarks/bench_position.py gives the figures at scale."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import log_expit

from parlai_dialeval.analysis import bradley_terry as bt, position

STRENGTHS = np.array([0.6, 0.3, 0.0, -0.3, -0.6])
OWN = np.array([0.9, -0.5, 0.0, 0.5, -0.9])  # each model's extra gain from being shown first
SHARED = 0.3


def shown_votes(n: int, seed: int, own: np.ndarray = OWN) -> bt.Votes:
    """Votes whose first-shown side is random: P(first wins) = 1 / (1 + exp(-(s_f - s_s + shared + own_f)))."""
    rng = np.random.default_rng(seed)
    shown = np.argsort(rng.random((n, len(STRENGTHS))), axis=1)[:, :2]  # two distinct models in random order
    first, second = shown[:, 0], shown[:, 1]
    logit = STRENGTHS[first] - STRENGTHS[second] + SHARED + own[first]
    won = rng.random(n) < 1 / (1 + np.exp(-logit))
    return bt.Votes([f"m{k}" for k in range(len(STRENGTHS))], first, second, won.astype(float), np.arange(n))


def test_per_model_effects_are_recovered_and_the_strengths_unbiased():
    result = position.position_fit(shown_votes(40000, seed=11))
    truth = STRENGTHS - STRENGTHS.mean()
    assert np.max(np.abs(result.strengths - truth)) < 0.08  # standard errors about 0.023
    assert np.all((result.strength_low <= truth) & (truth <= result.strength_high))
    # the plain fit credits part of each model's own gain (about half, less where expit flattens) to its strength
    bias = result.plain - truth
    assert np.max(np.abs(bias)) > 0.3 and np.all(np.sign(bias[OWN != 0]) == np.sign(OWN[OWN != 0]))
    np.testing.assert_allclose(result.effects, SHARED + OWN, atol=0.12)
    assert np.mean((result.effect_low <= SHARED + OWN) & (SHARED + OWN <= result.effect_high)) >= 0.8
    assert result.confounded == []


def test_the_ridge_is_the_penalised_likelihood():
    votes = shown_votes(300, seed=2)
    result = position.position_fit(votes, penalty=2.0)
    first, second, won, m = votes.first, votes.second, votes.outcome, len(STRENGTHS)

    def negative(params):  # strengths (model 0 at 0), shared, own per model; a normal log-prior on the own
        s, shared, own = np.r_[0.0, params[:m - 1]], params[m - 1], params[m:]
        eta = s[first] - s[second] + shared + own[first]
        return -np.sum(won * log_expit(eta) + (1 - won) * log_expit(-eta)) + own @ own

    best = minimize(negative, np.zeros(2 * m), method="BFGS", options={"gtol": 1e-9}).x
    s = np.r_[0.0, best[:m - 1]]
    np.testing.assert_allclose(result.strengths, s - s.mean(), atol=1e-4)
    np.testing.assert_allclose(result.effects, best[m - 1] + best[m:], atol=1e-4)


def test_a_model_always_shown_first_is_named_as_confounded():
    votes = shown_votes(3000, seed=5)
    keep = votes.second != 0  # m0 never shown second
    table, figures = position.section_fit(pd.DataFrame({
        "model_a": np.array(votes.models)[votes.first[keep]], "model_b": np.array(votes.models)[votes.second[keep]],
        "choice": np.where(votes.outcome[keep] == 1, "a", "b"), "item_id": np.arange(keep.sum()).astype(str),
        "worker_id": "w", "question": "q", "unit": "response"}))
    assert figures["confounded"] == "m0"
    said = position.sentences("q", "response", figures, table)
    assert any("m0 always appeared on one side" in line for line in said)


@pytest.mark.parametrize("models", [2, 3])
def test_two_models_estimate_the_shared_effect_only(models):
    rng = np.random.default_rng(0)
    first = rng.integers(0, models, 400)
    second = (first + rng.integers(1, models, 400)) % models
    won = (rng.random(400) < 0.65).astype(float)  # side A wins 65%: shared effect log(0.65 / 0.35)
    result = position.position_fit(bt.Votes([f"m{k}" for k in range(models)], first, second, won))
    assert result.shared[1] < np.log(0.65 / 0.35) < result.shared[2]
    assert position.per_model(400, models) == (models == 3)


def test_the_first_screen_says_it_only_where_the_order_changes():
    from parlai_dialeval.results.sections import position as section

    def frame(votes):
        names = np.array(votes.models)
        return pd.DataFrame({"model_a": names[votes.first], "model_b": names[votes.second],
                             "choice": np.where(votes.outcome == 1, "a", "b"), "worker_id": "w", "question": "q",
                             "unit": "response", "item_id": np.arange(len(votes)).astype(str)})

    config = type("Config", (), {"position_effects": "auto", "alpha": 0.05})
    # m1 loses 1.2 from being first and m2 gains 1.2: the plain fit puts m2 above m1, net of position it is below
    swapped = shown_votes(20000, seed=3, own=np.array([0.0, -1.2, 1.2, 0.0, 0.0]))
    biased = section.compute(type("Inputs", (), {"comparisons": frame(swapped)}), config, {})
    assert len(biased.verdicts) == 1 and "changes the order" in biased.verdicts[0]
    same = shown_votes(20000, seed=3, own=np.zeros(5))  # only the shared effect: the order stands
    assert section.compute(type("Inputs", (), {"comparisons": frame(same)}), config, {}).verdicts == []
