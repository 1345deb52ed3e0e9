"""The one Bradley-Terry (analysis/bradley_terry.py): its encoding, its maximum-likelihood fit against statsmodels
and FastChat's rating code (../shared/anchors/fastchat/rating_systems.py, imported by path), and the batched
regularised fits of the bootstrap against choix round by round."""
from __future__ import annotations

import importlib.util
import math

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from needs import needs

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.analysis.pairwise import with_sections

FASTCHAT = SHARED_DATA.parent / "anchors" / "fastchat" / "rating_systems.py"


@pytest.fixture(scope="module")
def fastchat():
    """FastChat's rating_systems.py (commit 0e6d3e4, ../shared/anchors/fastchat/README.md), never copied here;
    the test skips without it, and fails under CI."""
    needs(None if FASTCHAT.is_file() else f"FastChat's rating code not found at {FASTCHAT} (../shared/anchors)")
    spec = importlib.util.spec_from_file_location("fastchat_rating_systems", FASTCHAT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pairs(rng, n, k):
    first = rng.integers(0, k, n)
    return first, (first + rng.integers(1, k, n)) % k


def _votes(seed: int, n: int = 400, k: int = 4, ties: float = 0.04, slope=(0.8, -0.3)):
    """Votes from P(first wins) = expit(s_first - s_second + x . slope), some ties, clusters nested in pairs."""
    rng = np.random.default_rng(seed)
    first, second = _pairs(rng, n, k)
    x = rng.normal(size=(n, len(slope)))
    truth = np.linspace(0.4, -0.3, k)
    outcome = (rng.random(n) < 1 / (1 + np.exp(-(truth[first] - truth[second] + x @ np.asarray(slope))))).astype(float)
    outcome[rng.random(n) < ties] = 0.5
    clusters = (np.minimum(first, second) * k + np.maximum(first, second)) * 10 + rng.integers(0, 10, n)
    return bt.Votes([f"m{i}" for i in range(k)], first, second, outcome, clusters), x


def _dense(votes: bt.Votes) -> np.ndarray:
    """The dense design e_first - e_second, built here without the module."""
    full = np.zeros((len(votes), len(votes.models)))
    full[np.arange(len(votes)), votes.first] += 1
    full[np.arange(len(votes)), votes.second] -= 1
    return full


def test_fit_matches_statsmodels_glm_with_clustered_covariance():
    """Independent computation: statsmodels' Binomial GLM on the dense design, cov_type="cluster"."""
    import statsmodels.api as sm

    votes, x = _votes(3)
    fit = bt.fit(votes, x)
    glm = sm.GLM(votes.outcome, np.column_stack([_dense(votes)[:, 1:], x]), family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": votes.clusters})
    assert fit.converged
    np.testing.assert_allclose(fit.coefficients, glm.params[3:], rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.coefficient_cov)), glm.bse[3:], rtol=1e-6)
    full = np.concatenate([[0], glm.params[:3]])
    np.testing.assert_allclose(fit.strengths, full - full.mean(), atol=1e-6)
    np.testing.assert_allclose(fit.params, glm.params, atol=1e-6)


def test_plain_fit_matches_a_statsmodels_logit_and_its_information():
    """No covariates, no clusters: the logistic regression on pair indicators (statsmodels' Logit; a tie is
    two half-votes, each way, with frequency weights in a GLM), and the inverse information of the strengths."""
    import statsmodels.api as sm

    votes, _ = _votes(5, ties=0.1)
    fit = bt.fit(votes)
    design = _dense(votes)[:, 1:]
    decided = votes.outcome != 0.5
    tie = ~decided
    rows = np.vstack([design[decided], design[tie], design[tie]])
    y = np.concatenate([votes.outcome[decided], np.ones(tie.sum()), np.zeros(tie.sum())])
    weights = np.concatenate([np.ones(decided.sum()), np.full(2 * tie.sum(), 0.5)])
    glm = sm.GLM(y, rows, family=sm.families.Binomial(), freq_weights=weights).fit()
    full = np.concatenate([[0], glm.params])
    np.testing.assert_allclose(fit.strengths, full - full.mean(), atol=1e-7)
    centre = np.eye(4) - 0.25
    embedded = np.zeros((4, 4))
    embedded[1:, 1:] = glm.cov_params()
    np.testing.assert_allclose(fit.inverse_information, centre @ embedded @ centre.T, atol=1e-7)
    if not tie.any():
        logit = sm.Logit(votes.outcome, design).fit(disp=0)
        np.testing.assert_allclose(glm.params, logit.params, atol=1e-7)


def test_weighted_kinds_pseudo_votes_and_signed_targets_fit_the_votes_they_stand_for():
    """Counts of a kind as weights give the fit of the votes themselves; ``prior`` pseudo-votes give the fit
    with those votes appended (statsmodels' GLM, variance weights); targets that differ from weight x outcome
    give the fit of the loss they define (scipy's minimiser on it)."""
    import statsmodels.api as sm
    from scipy.optimize import minimize

    votes, _ = _votes(7, n=300, k=3)
    rows, counts = bt.kinds(votes.first, votes.second, votes.outcome)
    kinds = bt.Votes(votes.models, rows[:, 0].astype(int), rows[:, 1].astype(int), rows[:, 2])
    np.testing.assert_allclose(bt.fit(kinds, weights=counts, covariance=False).strengths, bt.fit(votes).strengths,
                               atol=1e-10)
    one_sided = bt.Votes(["x", "y", "z"], np.array([0, 0, 1, 1]), np.array([1, 2, 2, 2]), np.array([1.0, 1, 1, 0]))
    got = bt.fit(one_sided, prior=0.25, covariance=False).strengths
    extra_low, extra_high = np.triu_indices(3, 1)
    design = _dense(bt.Votes(["x", "y", "z"], np.concatenate([one_sided.first, extra_low, extra_low]),
                             np.concatenate([one_sided.second, extra_high, extra_high]), np.zeros(10)))[:, 1:]
    y = np.concatenate([one_sided.outcome, np.ones(3), np.zeros(3)])
    glm = sm.GLM(y, design, family=sm.families.Binomial(), var_weights=np.r_[np.ones(4), np.full(6, 0.25)]).fit()
    full = np.concatenate([[0], glm.params])
    np.testing.assert_allclose(got, full - full.mean(), atol=1e-7)
    weights = np.linspace(0.2, 1.0, len(votes))
    targets = weights * votes.outcome * 0.9 + 0.02
    design = _dense(votes)[:, 1:]

    def loss(beta):
        eta = design @ beta
        return -np.sum(targets * eta - weights * np.logaddexp(0, eta))

    reference = minimize(loss, np.zeros(design.shape[1]), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(bt.fit(votes, weights=weights, targets=targets, covariance=False).params, reference,
                               atol=1e-5)


def test_plain_fit_equals_fastchats_compute_bt(fastchat):
    # FastChat's Arena Bradley-Terry: unregularised maximum likelihood on ratings r with logit ln(10) (r_a - r_b),
    # ties half a win, reported as 400 r + 1000 (no anchor model here).
    votes, _ = _votes(11, n=3000, k=6, ties=0.1)
    winner = np.select([votes.outcome == 1, votes.outcome == 0], ["model_a", "model_b"], "tie")
    battles = pd.DataFrame({"model_a": np.array(votes.models)[votes.first], "model_b": np.array(votes.models)[votes.second],
                            "winner": winner})
    elo = fastchat.compute_bt(battles, tol=1e-10)
    theirs = math.log(10) * (elo[votes.models].to_numpy() - 1000) / 400
    np.testing.assert_allclose(bt.fit(votes).strengths, theirs - theirs.mean(), atol=1e-5)


def test_fit_with_covariates_equals_fastchats_style_control(fastchat):
    # FastChat's style control (compute_style_control: its features from four style counts per side, centred
    # and scaled; reg=0 leaves its L2 penalty out) is the same model as ours given the same features.
    rng = np.random.default_rng(12)
    n, k = 4000, 5
    first, second = _pairs(rng, n, k)
    counts = {name: rng.poisson(lam, (n, 2)) for name, lam in
              (("sum_assistant_tokens", 120), ("header_count", 0.5), ("list_count", 2), ("bold_count", 1))}
    length = (counts["sum_assistant_tokens"][:, 0] - counts["sum_assistant_tokens"][:, 1]) / (
        counts["sum_assistant_tokens"].sum(axis=1) + 1)
    truth = np.linspace(0.5, -0.5, k)
    p = 1 / (1 + np.exp(-(truth[first] - truth[second] + 2.0 * length)))
    outcome = (rng.random(n) < p).astype(float)
    outcome[rng.random(n) < 0.05] = 0.5
    models = [f"m{i}" for i in range(k)]
    meta = [{"sum_assistant_a_tokens": int(counts["sum_assistant_tokens"][i, 0]),
             "sum_assistant_b_tokens": int(counts["sum_assistant_tokens"][i, 1]),
             **{f"{name}_{side}": {"all": int(counts[name][i, s])} for name in ("header_count", "list_count", "bold_count")
                for s, side in enumerate("ab")}} for i in range(n)]
    battles = pd.DataFrame({"model_a": np.array(models)[first], "model_b": np.array(models)[second],
                            "winner": np.select([outcome == 1, outcome == 0], ["model_a", "model_b"], "tie"),
                            "conv_metadata": meta})
    ratings, coefficients = fastchat.compute_style_control(battles, reg=0.0, tol=1e-10)
    features = fastchat.preprocess_for_style(battles)[1]
    fit = bt.fit(bt.Votes(models, first, second, outcome), features)
    np.testing.assert_allclose(fit.coefficients, coefficients, atol=1e-4)
    theirs = math.log(10) * (ratings[models].to_numpy() - 1000) / 400
    np.testing.assert_allclose(fit.strengths, theirs - theirs.mean(), atol=1e-4)


def test_encode_is_sorted_names_outcomes_and_pair_item_clusters():
    # Issue 43: the integer codes must give a dictionary's indices of the sorted names, the outcomes and the
    # partition into (model pair, item) clusters; automatic ties are no votes.
    rng = np.random.default_rng(4)
    n = 300
    a = rng.integers(0, 7, n)
    names = np.array(["zeta", "Alpha", "beta", "10", "9", "b", "ä"], dtype=object)
    frame = with_sections(pd.DataFrame({
        "item_id": rng.integers(0, 60, n).astype(str), "model_a": names[a], "model_b": names[(a + rng.integers(1, 7, n)) % 7],
        "choice": rng.choice(["a", "b", "tie"], n), "automatic": rng.random(n) < 0.1,
        "context": np.where(rng.random(n) < 0.5, None, rng.integers(0, 20, n).astype(str))}))
    votes = bt.encode(frame)
    kept = frame[~frame["automatic"]]
    assert votes.models == sorted(set(names))
    index = {m: i for i, m in enumerate(votes.models)}
    assert list(votes.first) == [index[m] for m in kept["model_a"]]
    assert list(votes.second) == [index[m] for m in kept["model_b"]]
    assert list(votes.outcome) == [{"a": 1.0, "b": 0.0, "tie": 0.5}[c] for c in kept["choice"]]
    labels = [f"{min(i, j)}|{max(i, j)}|" + (f"item:{item}" if pd.isna(context) else f"context:{context}")
              for i, j, item, context in zip(votes.first, votes.second, kept["item_id"], kept["context"])]
    assert list(votes.clusters) == list(pd.factorize(pd.Series(labels))[0])
    assert bt.encode(frame.drop(columns="unit")).clusters is None


def test_ties_count_half_in_the_win_matrix():
    votes = bt.encode(pd.DataFrame({"model_a": ["x"] * 4 + ["y"], "model_b": ["y"] * 4 + ["x"],
                                    "choice": ["a", "b", "tie", "tie", "tie"], "automatic": [None] * 4 + [True]}))
    assert len(votes) == 4
    np.testing.assert_allclose(bt.win_matrix(*bt.kinds(votes.first, votes.second, votes.outcome), 2), [[0, 2], [2, 0]])
    strengths, _, _ = bt.bootstrap(votes, rounds=0)
    assert strengths[0] == pytest.approx(strengths[1], abs=1e-6)


def test_batched_fits_equal_choix_round_by_round():
    rng = np.random.default_rng(4)
    matrices = rng.integers(0, 40, (25, 6, 6)).astype(float) + 0.5 * rng.integers(0, 3, (25, 6, 6))
    matrices[:, np.arange(6), np.arange(6)] = 0
    matrices[3] = 0
    matrices[3, 0, 1] = 5  # one one-sided pair: finite only through the regularisation
    batched = bt.ilsr_rounds(matrices)
    each = np.array([bt.ilsr(m) for m in matrices])  # choix.ilsr_pairwise_dense
    assert np.abs(batched - each).max() < 1e-6


def test_kinds_equal_numpys_row_unique():
    rng = np.random.default_rng(0)
    a, b = _pairs(rng, 5000, 7)
    outcome = rng.choice([0.0, 0.5, 1.0], 5000)
    rows, counts = bt.kinds(a, b, outcome)
    expected_rows, expected_counts = np.unique(np.column_stack([a, b, outcome]), axis=0, return_counts=True)
    assert np.array_equal(rows, expected_rows) and np.array_equal(counts, expected_counts)


def test_bootstrap_intervals_are_unchanged_by_batching():
    rng = np.random.default_rng(1)
    a, b = _pairs(rng, 3000, 5)
    outcome = (rng.random(3000) < 1 / (1 + np.exp(b - a))).astype(float)
    votes = bt.Votes([f"m{i}" for i in range(5)], a, b, outcome)
    strengths, low, high = bt.bootstrap(votes, rounds=200, seed=3)
    unique, counts = bt.kinds(a, b, outcome)
    draws = np.random.default_rng(3).multinomial(int(counts.sum()), counts / counts.sum(), size=200)
    boot = np.array([bt.ilsr(bt.win_matrix(unique, d, 5)) for d in draws])
    assert np.allclose(low, np.percentile(boot, 2.5, axis=0), atol=1e-6)
    assert np.allclose(high, np.percentile(boot, 97.5, axis=0), atol=1e-6)


def test_fits_run_blas_on_one_thread_and_scan_the_libraries_once(monkeypatch):
    """A fresh threadpool_limits per fit scanned every loaded shared object (5 ms; a fifth of fragility's
    thousands of small fits): the BLAS libraries are found once, limited to one thread during a fit, restored."""
    import threadpoolctl

    from parlai_dialeval.analysis import bt_likelihood

    bt.fit(_votes(5)[0])  # the scan, if none was made yet
    probe = threadpoolctl.ThreadpoolController().select(user_api="blas")

    def blas_threads():
        return {info["num_threads"] for info in probe.info()}

    scans, observed = [], []
    real_init, real_maximise = threadpoolctl.ThreadpoolController.__init__, bt_likelihood.Likelihood.maximise

    def counted(self, *args, **kwargs):
        scans.append(1)
        real_init(self, *args, **kwargs)

    def watched(self, *args, **kwargs):
        observed.append(blas_threads())
        return real_maximise(self, *args, **kwargs)

    monkeypatch.setattr(threadpoolctl.ThreadpoolController, "__init__", counted)
    monkeypatch.setattr(bt_likelihood.Likelihood, "maximise", watched)
    before = blas_threads()
    for seed in range(3):
        bt.fit(_votes(seed)[0])
    assert scans == [] and observed == [{1}] * 3 and blas_threads() == before
