"""Ties as information (analysis/ties.py): the Bradley-Terry-Davidson fit recovers a known tie parameter and
strengths from votes drawn by a generator written here (no code shared with the estimator), equals an independent
likelihood maximised by scipy.optimize to 1e-4, and the report section says per question how well it separates
the models, with 'both bad' kept apart."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from parlai_dialeval.analysis import bradley_terry as bt, ties
from parlai_dialeval.results import pairwise_result


def draw_votes(pi: np.ndarray, nu: float, n: int, seed: int) -> pd.DataFrame:
    """Davidson's probabilities in his own form: P(i) = pi_i / D, P(tie) = nu sqrt(pi_i pi_j) / D, D the sum,
    one vote per item."""
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(pi), n)
    j = (i + rng.integers(1, len(pi), n)) % len(pi)
    weights = np.column_stack([pi[i], pi[j], nu * np.sqrt(pi[i] * pi[j])])
    cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
    outcome = np.array(["a", "b", "tie"])[(rng.random(n)[:, None] > cumulative).sum(axis=1)]
    vote = np.arange(n)
    return pd.DataFrame({"item_id": [f"item{k}" for k in vote],
                         "worker_id": [f"w{k % 50}" for k in vote], "model_a": [f"bot{k}" for k in i],
                         "model_b": [f"bot{k}" for k in j], "choice": outcome})


def test_recovers_a_known_tie_parameter_and_strengths():
    pi = np.array([3.0, 1.8, 1.0, 0.6, 0.35])
    frame = pairwise_result.prepare(draw_votes(pi, nu=0.7, n=6000, seed=4)).comparisons
    fit = ties.davidson(bt.encode(frame))
    truth = np.log(pi) - np.log(pi).mean()
    assert np.max(np.abs(fit.strengths - truth)) < 0.1
    assert np.all((fit.strength_low <= truth) & (truth <= fit.strength_high))
    assert abs(fit.nu[0] - 0.7) < 0.06 and fit.nu_low[0] <= 0.7 <= fit.nu_high[0]


def independent_fit(first, second, outcome, questions, n_models, n_questions):
    """Davidson's log-likelihood in its own form, maximised by BFGS: strengths with model 0 at 0, then log nu."""
    def negative(params):
        log_pi = np.r_[0.0, params[:n_models - 1]]
        nu = np.exp(params[n_models - 1:])[questions]
        pi_i, pi_j = np.exp(log_pi[first]), np.exp(log_pi[second])
        tie = nu * np.sqrt(pi_i * pi_j)
        chosen = np.select([outcome == 1, outcome == 0], [pi_i, pi_j], tie)
        return -np.sum(np.log(chosen / (pi_i + pi_j + tie)))
    best = minimize(negative, np.zeros(n_models - 1 + n_questions), method="BFGS", options={"gtol": 1e-10})
    log_pi = np.r_[0.0, best.x[:n_models - 1]]
    return log_pi - log_pi.mean(), np.exp(best.x[n_models - 1:])


def test_equals_an_independent_likelihood_on_a_small_case():
    rng = np.random.default_rng(7)
    first = rng.integers(0, 4, 80)
    second = (first + rng.integers(1, 4, 80)) % 4
    outcome = rng.choice([1.0, 0.5, 0.0], size=80, p=[0.45, 0.25, 0.3])
    questions = rng.integers(0, 2, 80)
    votes = bt.Votes(["a", "b", "c", "d"], first, second, outcome)
    fit = ties.davidson(votes, questions)
    strengths, nu = independent_fit(first, second, outcome, questions, 4, 2)
    np.testing.assert_allclose(fit.strengths, strengths, atol=1e-4)
    np.testing.assert_allclose(fit.nu, nu, atol=1e-4)
    assert fit.fit.converged and not fit.fit.separated


def test_without_ties_the_strengths_are_the_plain_fit_and_nu_runs_to_zero():
    rng = np.random.default_rng(3)
    first = rng.integers(0, 3, 200)
    second = (first + rng.integers(1, 3, 200)) % 3
    votes = bt.Votes(["a", "b", "c"], first, second, (rng.random(200) < 0.6).astype(float))
    # Among decided votes Davidson's odds of i over j are e^(s_i - s_j), the plain model's; nu -> 0
    np.testing.assert_allclose(ties.davidson(votes).strengths, bt.fit(votes).strengths, atol=1e-3)
    assert ties.davidson(votes).nu[0] < 1e-3


def test_both_bad_is_kept_apart_from_tie_and_rated_per_model():
    frame = pd.DataFrame({"model_a": ["x", "x", "y", "x"], "model_b": ["y", "z", "z", "y"],
                          "choice": ["tie", "tie", "a", "b"], "tie_kind": [None, "both_bad", None, None]})
    rates = ties.model_rates(frame).set_index("model")
    assert rates.loc["x", "votes"] == 3 and rates.loc["x", "tie_rate"] == pytest.approx(2 / 3)
    assert rates.loc["x", "both_bad_rate"] == pytest.approx(1 / 3) and rates.loc["y", "both_bad_rate"] == 0
    assert ties.tie_kinds(frame.drop(columns=["tie_kind"])).tolist() == ["tie", "tie", "win", "win"]


def test_the_section_says_per_question_how_well_it_separates_models():
    pi = np.array([4.0, 1.0, 0.25])
    clear = draw_votes(pi, nu=0.3, n=900, seed=1).assign(question="clear")
    murky = draw_votes(np.ones(3), nu=6.0, n=900, seed=2).assign(question="murky")
    result = pairwise_result.analyse(pairwise_result.prepare(pd.concat([clear, murky], ignore_index=True)),
                                     pairwise_result.PairwiseConfig(bootstrap_rounds=10, style_control="off"),
                                     [pairwise_result.SECTIONS[1], ties_section()])
    said = result.parts["ties"].sentences
    figures = result.parts["ties"].figures.set_index("question")
    assert len(said) == 2 and said[0].startswith("'clear'")
    assert "3 of 3 model pairs have intervals apart" in said[0]
    murky = f"{100 * figures.loc['murky', 'tie_rate']:.0f}% of 900 worker votes are ties"
    assert said[1].startswith("'murky'") and murky in said[1]
    assert figures.loc["murky", "tie_rate"] == pytest.approx(6 / 8, abs=0.04)  # nu / (2 + nu), equal models
    assert figures.loc["murky", "nu"] == pytest.approx(6.0, rel=0.25)
    assert figures.loc["murky", "spread"] < figures.loc["clear", "spread"] / 2
    assert set(result.tables["ties"]["model"]) == {"bot0", "bot1", "bot2"}


def test_a_question_of_equal_models_separates_none():
    # every pair: 4 wins each way and 8 ties, so the strengths are equal and every two intervals overlap
    rows = [{"item_id": f"{a}{b}{k}", "worker_id": "w", "model_a": a, "model_b": b, "choice": choice}
            for a, b in (("x", "y"), ("x", "z"), ("y", "z"))
            for k, choice in enumerate(["a"] * 4 + ["b"] * 4 + ["tie"] * 8)]
    table, figures = ties.section_fit(pairwise_result.prepare(pd.DataFrame(rows)).comparisons)
    np.testing.assert_allclose(table["strength_davidson"], 0, atol=1e-8)
    # P(tie) = nu / (2 + nu) = 1/2 at equal strengths: nu = 2
    assert figures["nu"] == pytest.approx(2.0) and figures["separated_pairs"] == 0
    assert "does not tell any two models apart" in ties.sentence("q", "response", figures, table)


def ties_section():
    from parlai_dialeval.results.sections import ties as section

    return section.SECTION
