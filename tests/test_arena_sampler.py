"""The arena's informative pair sampler on simulated battles (parlai_dialeval/testing/arena_battles.py: a world of
known strengths that imports no estimator code), no page: the Bradley-Terry fit weighted by each battle's inverse
sampling probability is unbiased for what a uniform draw of pairs estimates, in a world Bradley-Terry does not
describe exactly (the leader's pairs are shifted), bias within its standard error over many studies; and the sampler
certifies the top model with fewer battles than uniform draws (benchmarks/bench_arena_sampler.py gives the figures
of more studies, in benchmarks/README.md)."""
from __future__ import annotations

import numpy as np
import pytest

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.testing.arena_battles import Truth, simulate

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# the leader beats the second and third by more than their strengths say (a world BT describes only roughly)
TRUTH = Truth([0.8, 0.3, 0.1, -0.4, -0.8], tie_rate=0.1, shifts={(0, 1): 0.7, (0, 2): 0.4})


def test_uniform_estimand_solves_the_expected_score_equations():
    s = TRUTH.uniform_estimand()
    k = len(s)
    for i in range(k):  # each model's expected wins against all others equal its fitted expected wins
        observed = sum(TRUTH.tie_rate / 2 + (1 - TRUTH.tie_rate) * TRUTH.win_probability(i, j) for j in range(k) if j != i)
        fitted = sum(1 / (1 + np.exp(s[j] - s[i])) for j in range(k) if j != i)
        assert observed == pytest.approx(fitted, abs=1e-6)
    assert s.mean() == pytest.approx(0, abs=1e-9) and s[0] > TRUTH.strengths[0]  # the shifts lift the leader


def test_the_weighted_fit_is_unbiased_for_the_uniform_estimand_under_informative_sampling():
    truth = TRUTH.uniform_estimand()
    estimates = []
    for seed in range(60):
        study = simulate(TRUTH, "informative", battles=1200, seed=500 + seed, in_flight=40, explore=0.2)
        assert study["probability"].min() >= 0.2 / 10 - 1e-12  # every pair keeps its floor
        assert study["weight"].max() > 3 and study["weight"].min() < 0.2  # the draws were uneven
        votes = bt.Votes(list(TRUTH.models), study["a"], study["b"], study["outcome"], weights=study["weight"])
        fitted, _, _ = bt.bootstrap(votes, rounds=0)
        estimates.append(fitted)
    estimates = np.array(estimates)
    bias = estimates.mean(axis=0) - truth
    standard_error = estimates.std(axis=0, ddof=1) / np.sqrt(len(estimates))
    assert np.all(np.abs(bias) <= 3 * standard_error), (bias, standard_error)
    assert np.all(standard_error < 0.02)  # and the check has power: a bias of 0.06 would be caught


def test_the_informative_sampler_certifies_the_top_model_with_fewer_battles_than_uniform():
    ratios = []
    for seed in range(6):
        battles = {kind: simulate(TRUTH, kind, battles=6000, seed=900 + seed, in_flight=20,
                                  stop_when_certified=True)["certified_at"] for kind in ("uniform", "informative")}
        assert None not in battles.values(), battles
        ratios.append(battles["informative"] / battles["uniform"])
    assert np.median(ratios) < 0.8, ratios
