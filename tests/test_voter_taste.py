"""The crowd tests' null pieces (adaptive/voter_taste.py) against integrals computed here by other means
(scipy's adaptive quadrature and Simpson's rule, numpy's Gauss-Hermite nodes summed in loops): the bound that decides which groups
are bet on, the null's likelihood where a pair has one vote of the group (read from a table), and the taste
estimate from a sample of the workers where a crowd is large."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy import integrate, stats
from scipy.special import expit, log_expit

from parlai_dialeval.adaptive import voter_taste


@pytest.mark.parametrize("v", [0.0, 0.01, 1.0, 6.25, 25.0])
def test_the_reachability_bound_is_above_the_worst_surprise_of_a_vote_and_close_to_it(v):
    # Jensen: the null's likelihood (t + b on 10 x 10 Gauss-Hermite nodes) of any votes is at least
    # exp(-sum of max(-E log P(for), -E log P(against))); a group is skipped when that sum is below log threshold,
    # so the bound must never be below it (a skipped group that could have been flagged). Was: the maximum over
    # 24 nodes per vote, arrays of votes x 24 (2 GB at a million votes); a closed form log 2 + sqrt(x^2 + v)
    # exceeded it by up to log 2 and bet on groups that cannot reach the threshold.
    offset = np.concatenate([np.linspace(-30, 30, 241), np.random.default_rng(0).normal(0, 5, 200)])
    bound = voter_taste.surprise_bound(offset, v)
    nodes, weights = hermegauss(10)
    weights = weights / weights.sum()
    worst = np.zeros((2, len(offset)))
    for t, wt in zip(nodes, weights):
        for b, wb in zip(nodes, weights):
            worst += wt * wb * np.stack([-log_expit(offset + np.sqrt(v / 2) * (t + b)),
                                         -log_expit(-(offset + np.sqrt(v / 2) * (t + b)))])
    worst = worst.max(axis=0)
    step = (offset.max() - offset.min()) / 2000
    assert (bound >= worst - 1e-12).all()
    assert (bound <= worst + step ** 2 / 32 + 1e-12).all()
    # and the nodes' integral is the Gaussian one (scipy's adaptive quadrature), within 0.003 nats a vote
    sd = np.sqrt(v)
    for x in (-12.0, -1.0, 0.0, 2.5, 20.0):
        exact = max(-log_expit(x), -log_expit(-x)) if not v else max(
            integrate.quad(lambda d, sign=sign, x=x: -log_expit(sign * (x + d)) * stats.norm.pdf(d, 0, sd),
                           -12 * sd, 12 * sd, limit=200)[0] for sign in (1, -1))
        assert voter_taste.surprise_bound(np.array([x]), v)[0] == pytest.approx(exact, abs=3e-3)


def _null_by_grid(yes: np.ndarray, offset: np.ndarray, pair: np.ndarray, v: float) -> float:
    """P(the votes) with d = t + b, t shared and b per pair, each N(0, v / 2): Simpson's rule on a grid of 801
    points over +-9 SD for each of t and b."""
    sd = np.sqrt(v / 2)
    grid = np.linspace(-9 * sd, 9 * sd, 801)
    density = stats.norm.pdf(grid, 0, sd)
    given_t = density.copy()  # over t
    for p in np.unique(pair):
        rows = pair == p
        chance = np.prod(expit(np.where(yes[rows], 1, -1)[:, None, None]
                               * (offset[rows, None, None] + grid[None, :, None] + grid[None, None, :])), axis=0)
        given_t *= integrate.simpson(chance * density[None, :], x=grid, axis=1)
    return float(integrate.simpson(given_t, x=grid))


def test_the_null_of_votes_on_pairs_seen_once_is_the_integral():
    # Most of an arena worker's pairs hold one of their votes: that pair's factor E_b expit(+-(x + b)) is read
    # from a table over x (step 0.01) instead of summed over b's nodes at every vote. Two groups: one of pairs seen
    # once only, one mixing them with a pair of three votes; every prefix against Simpson's rule on a grid.
    rng = np.random.default_rng(5)
    v = 1.0
    pair = np.array([0, 1, 2, 3, 4, 10, 11, 10, 12, 10])
    local = np.array([0] * 5 + [1] * 5)
    yes = rng.random(10) < 0.5
    offset = rng.normal(0, 1.5, 10)
    log_null = voter_taste._null_loglik(yes, offset, local, pair, 2, v)
    for row in range(10):
        rows = np.flatnonzero((local == local[row]) & (np.arange(10) <= row))
        expected = _null_by_grid(yes[rows], offset[rows], pair[rows], v)
        assert np.exp(log_null[row]) == pytest.approx(expected, rel=2e-4), row


def test_offsets_beyond_forty_logits_are_not_clamped():
    # a vote at log-odds -60 for what the worker chose has log-probability about -60, not the table's end
    log_null = voter_taste._null_loglik(np.array([True]), np.array([-60.0]), np.array([0]), np.array([0]), 1, 0.0)
    assert log_null[0] == pytest.approx(-60.0, abs=1e-3)


def test_a_large_crowd_estimates_its_tastes_from_a_sample_of_its_workers(monkeypatch):
    # The estimate's cost grows with the workers: above MAX_WORKERS a random sample of them estimates v (and its
    # bound, resampling them). Votes drawn here: 120 workers x 12 pairs x 6 votes, tastes N(0, 1) per pair
    # around shares of 0.2-0.8; a sample of 60 estimates v = 1 about as well as all 120, and its upper bound is
    # no lower than the truth.
    rng = np.random.default_rng(3)
    workers, pairs, per = 120, 12, 6
    worker = np.repeat(np.arange(workers), pairs * per)
    block = np.repeat(np.arange(workers * pairs), per)
    share = np.repeat(rng.uniform(0.2, 0.8, pairs), per)[np.arange(len(block)) % (pairs * per)]
    mu = voter_taste.center(share, 1.0)  # the crowd's mean chance is the share
    y = (rng.random(len(block)) < expit(mu + np.repeat(rng.normal(0, 1, workers * pairs), per))).astype(float)
    everyone = voter_taste.taste_variance(y, share, block, worker)
    seen = []
    real_em = voter_taste._em
    monkeypatch.setattr(voter_taste, "_em", lambda table, g: seen.append(len(table)) or real_em(table, g))
    monkeypatch.setattr(voter_taste, "MAX_WORKERS", 60)
    sample = voter_taste.taste_variance(y, share, block, worker)
    assert set(seen) == {60}
    assert 0.5 < everyone[0] < 2.0 and 0.4 < sample[0] < 2.5 and sample[1] >= 1.0 and everyone[1] >= 1.0
