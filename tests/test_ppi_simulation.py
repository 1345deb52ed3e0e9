"""A small version of benchmarks/bench_ppi.py: PPI++ with simulated judges on the real ChatEval votes.

The simulated studies resample real prompts with their real votes (the data is the generator; no
estimator code makes it); the target is each comparison's vote share computed in the test."""
from __future__ import annotations

import numpy as np
import pytest

from parlai_dialeval.adaptive import ppi_simulation as sim
from parlai_dialeval.importers import load


@pytest.fixture(scope="module")
def comparisons(shared_data):
    return sim.comparisons_from(load([shared_data / "chateval" / "amt_ab_2018"]).comparisons)


def test_comparisons_hold_every_worker_vote(comparisons, shared_data):
    assert len(comparisons) == 20
    # ChatEval's README: 200 prompts x 3 votes per comparison; the importer keeps 10,960 worker and
    # automatic records (tests/test_import_chateval.py); only prompts with worker votes are here.
    assert all(len(c.votes) <= 200 for c in comparisons)
    assert all(set(np.concatenate(c.votes)) <= {0.0, 0.5, 1.0} for c in comparisons)
    ncm = next(c for c in comparisons if c.name == "AMT_NCM_Test_NCM_Cakechat")
    assert ncm.target == pytest.approx(np.mean(np.concatenate(ncm.votes)))


def test_a_judge_agrees_with_the_majority_as_often_as_asked(comparisons):
    rng = np.random.default_rng(0)
    agree, total = 0, 0
    for c in comparisons:
        labels = sim.judge_labels(c, 0.8, rng)
        means = np.array([v.mean() for v in c.votes])
        decided = means != 0.5
        agree += int(np.sum(labels[decided] == (means[decided] > 0.5)))
        total += int(decided.sum())
    assert agree / total == pytest.approx(0.8, abs=0.02)


@pytest.mark.parametrize("judge", [0.5, 0.9, "position"])
def test_intervals_cover_the_vote_share(comparisons, judge):
    """300 full-size studies per judge (the benchmark runs 1,000 at full and half size): coverage of
    the 95% interval at least 0.92 (Monte-Carlo SE about 0.013)."""
    result = sim.coverage(comparisons, judge, 300, 1.0, 5, seed=11)
    assert result["coverage"] >= 0.92


def test_a_good_judge_saves_people_and_a_useless_one_costs_nothing(comparisons):
    rng = np.random.default_rng(3)
    shares = np.round(np.arange(0.4, 1.31, 0.1), 2)
    some = comparisons[:3]
    good = [sim.human_share_needed(c, 0.9, shares, 20, 5, rng) for c in some]
    useless = [sim.human_share_needed(c, 0.5, shares, 20, 5, rng) for c in some]
    assert max(good) < 0.85
    assert max(useless) <= 1.1


def test_best_possible_share_is_the_hand_computed_floor():
    """Two prompts, votes (1, 1, 0) and (0, 0, 1): ICC(1) from the one-way ANOVA by hand: MSB =
    3 * 2 * (1/6)^2 = 1/6, MSW = 4/3 / 4 = 1/3, n0 = 3, ICC = (1/6 - 1/3) / (1/6 + 2/3) < 0 -> 0, so
    the floor is 1: a judge of prompts cannot explain votes that vary only within prompts."""
    c = sim.Comparison("x", [np.array([1.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])])
    assert sim.best_possible_share(c) == 1.0
    # Three prompts each voted unanimously: ICC 1, nothing is left for people.
    c = sim.Comparison("y", [np.ones(3), np.zeros(3), np.ones(3)])
    assert sim.best_possible_share(c) == 0.0


def test_the_best_share_any_judge_could_give_is_read_from_the_votes_alone(comparisons):
    """The checkable bound of docs/ppi.md ("Where 0.5x is reachable"). A judge of prompts can at best
    predict a prompt's true preference h; what is left of the mean of m votes is the workers' part, so
    people's share is at least (1 - ICC) / (m ICC + 1 - ICC) (one-way ANOVA ICC, computed here by hand with
    the unequal-groups n0 of Shrout and Fleiss 1979, not by the package's icc_oneway). A judge of sides
    that agrees with h's side a share a of the time has corr(f, h)^2 <= (2a - 1)^2, so its share is at least
    1 - (2a - 1)^2 (1 - that bound). Numbers asserted: from the ChatEval votes."""
    perfect, side80 = [], []
    for c in comparisons:
        groups = [np.asarray(v, float) for v in c.votes]
        sizes = np.array([len(g) for g in groups])
        total, k = sizes.sum(), len(groups)
        grand = np.concatenate(groups).mean()
        msb = sum(len(g) * (g.mean() - grand) ** 2 for g in groups) / (k - 1)
        msw = sum(((g - g.mean()) ** 2).sum() for g in groups) / (total - k)
        n0 = (total - (sizes ** 2).sum() / total) / (k - 1)
        icc = max((msb - msw) / (msb + (n0 - 1) * msw), 0.0)
        m = total / k
        bound = (1 - icc) / (m * icc + 1 - icc)
        assert sim.best_possible_share(c) == pytest.approx(bound, abs=1e-9)
        perfect.append(bound)
        side80.append(1 - (2 * 0.8 - 1) ** 2 * (1 - bound))
    # even a judge that knew every prompt's true preference leaves a median 0.67 of the people
    assert 0.6 < np.median(perfect) < 0.75
    assert sum(b <= 0.5 for b in perfect) == 5  # 0.5x reachable by such a judge on 5 of the 20 comparisons
    assert min(side80) > 0.75  # an 80% judge of sides: out of reach on every comparison
