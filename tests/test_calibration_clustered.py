"""Calibration with clustered votes (issue 25), the fast part; benchmarks/calibrate_clustered.py runs the
full-size tables (docs/adaptive_evaluation.md, "Calibration").

Studies come from parlai_dialeval.testing.clustered_votes, a beta-binomial generator that imports no
project code. Strong clustering (5 votes per item, ICC 0.5) so that the old per-vote rules visibly fail
on the same studies: the simulations can tell valid from invalid.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from parlai_dialeval.adaptive import planner
from parlai_dialeval.adaptive.certification import certify, pair_outcomes
from parlai_dialeval.adaptive.sequential import certification_threshold, e_value, wealth_paths
from parlai_dialeval.analysis import pairwise
from parlai_dialeval.testing.clustered_votes import clustered_study

ALPHA = 0.05


def bound(studies: int) -> float:
    return ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)


def test_equal_models_with_clustered_votes_keep_alpha_in_certify_and_the_win_rate_test():
    rng, studies = np.random.default_rng(11), 100
    claims = per_vote_claims = rejected = per_vote_rejected = 0
    for _ in range(studies):
        study = clustered_study(rng, models=2, items_per_pair=60, votes_per_item=5, icc=0.5, tie_rate=0.1)
        claims += certify(study, ALPHA, intervals=False)["certified_winner"].notna().any()
        rates = pairwise.win_rates(study).iloc[0]
        rejected += rates["p_value"] < ALPHA
        # the old rules on the same studies, written out here: every vote an independent bet / trial
        frame = pairwise.oriented(study)
        y = ((frame["score"] + 1) / 2).to_numpy()
        per_vote_claims += max(e_value(y), e_value(1 - y)) >= 2 / ALPHA
        decided = int(rates["wins_a"] + rates["wins_b"])
        per_vote_rejected += stats.binomtest(int(rates["wins_a"]), decided).pvalue < ALPHA
    assert claims / studies <= bound(studies) and rejected / studies <= bound(studies)
    assert per_vote_rejected / studies > bound(studies) and per_vote_claims > claims


def test_wilson_interval_covers_the_win_rate_when_votes_cluster():
    rng, studies, covered = np.random.default_rng(12), 100, 0
    for _ in range(studies):
        study = clustered_study(rng, models=2, items_per_pair=80, votes_per_item=5, icc=0.5, tie_rate=0.1,
                                win_rates={(0, 1): 0.6})
        rates = pairwise.win_rates(study).iloc[0]
        truth = 0.6 if rates["model_a"] == "m0" else 0.4
        covered += rates["ci_low"] <= truth <= rates["ci_high"]
    assert covered / studies >= 1 - bound(studies)


def test_wilson_interval_covers_the_win_rate_when_items_get_very_unequal_votes():
    """85% of items judged once, 15% fifteen times: the design effect over the plain mean votes per item (3.1)
    covered 0.82 in an independent simulation of 400 studies; over Kish's size-weighted mean (11.6), 0.95."""
    rng, studies, covered = np.random.default_rng(13), 100, 0
    for _ in range(studies):
        votes = np.where(rng.random(200) < 0.15, 15, 1)
        study = clustered_study(rng, models=2, items_per_pair=200, votes_per_item=votes, icc=0.3, tie_rate=0.2,
                                win_rates={(0, 1): 0.6})
        rates = pairwise.win_rates(study).iloc[0]
        truth = 0.6 if rates["model_a"] == "m0" else 0.4
        covered += rates["ci_low"] <= truth <= rates["ci_high"]
    assert covered / studies >= 1 - bound(studies)


def in_item_order(study: pd.DataFrame) -> pd.DataFrame:
    """The study's votes with each item's votes together (as when a HIT's workers answer at once), items
    in order of first appearance, numbered in ``position``."""
    order = {item: i for i, item in enumerate(pd.unique(study["item_id"]))}
    return study.assign(position=study["item_id"].map(order)).sort_values("position", kind="stable")


def certify_stopping_items(study: pd.DataFrame, cap: int) -> int:
    """Items certify's rule needs to settle "m0 beats m1": its per-item outcomes (pair_outcomes), the
    first item at which their betting wealth reaches the threshold K(K-1)/alpha; ``cap`` if never."""
    pair = pair_outcomes(study.drop(columns="position")).iloc[0]
    better = pair["outcomes"] if pair["model_a"] == "m0" else 1 - pair["outcomes"]  # the claim "m0 beats m1"
    hits = np.flatnonzero(wealth_paths(better) >= certification_threshold(2, ALPHA))
    return int(hits[0]) + 1 if hits.size else cap


def settled(study: pd.DataFrame, items: int) -> bool:
    return certify(study[study["position"] < items].drop(columns="position"), ALPHA,
                   intervals=False)["certified_winner"].notna().any()


def median_se(values: np.ndarray, rng: np.random.Generator) -> float:
    return float(np.std([np.median(rng.choice(values, len(values))) for _ in range(400)]))


def test_planned_sequential_median_equals_a_simulation_of_certify():
    votes = planner.Votes(win_rate=0.75, tie_rate=0.2, votes_per_item=3, icc=0.3)
    planned_runs = {q: items for q, (items, above) in
                    planner.sequential_items(votes, threshold=2 / ALPHA, simulations=400, seed=3).items()
                    if not above}
    rng, cap = np.random.default_rng(13), 160
    studies = [in_item_order(clustered_study(rng, models=2, items_per_pair=cap, votes_per_item=3, icc=0.3,
                                             tie_rate=0.2, win_rates={(0, 1): 0.75})) for _ in range(60)]
    stops = np.array([certify_stopping_items(study, cap) for study in studies], dtype=float)
    # certify itself settles exactly there, on a few of the studies: not one item earlier
    for study, stop in [(study, int(stop)) for study, stop in zip(studies, stops) if stop < cap][:4]:
        assert settled(study, stop) and not settled(study, stop - 1)
    observed, planned = float(np.median(stops)), planned_runs[50]
    # Monte-Carlo error of both medians: bootstrap here; the planner's 400 runs by the normal rule
    # 1.2533 sd / sqrt(n), with sd read from its 50th-80th percentile spread (0.8416 sd)
    planned_se = 1.2533 * (planned_runs[80] - planned_runs[50]) / 0.8416 / math.sqrt(400)
    error = math.hypot(median_se(stops, rng), planned_se)
    assert abs(observed - planned) <= 3 * error + 1, (observed, planned, error)


def test_planned_fixed_design_has_its_power_under_the_test_the_analysis_runs():
    votes = planner.Votes(win_rate=0.65, tie_rate=0.2, votes_per_item=3, icc=0.3)
    items = planner.fixed_items(votes, ALPHA, 0.8)
    # independent votes would need about 90 / 0.8 / 3 = 38 items: clustering costs more
    assert items > 60
    rng, studies, significant = np.random.default_rng(14), 120, 0
    for _ in range(studies):
        study = clustered_study(rng, models=2, items_per_pair=items, votes_per_item=3, icc=0.3, tie_rate=0.2,
                                win_rates={(0, 1): 0.65})
        significant += pairwise.win_rates(study).iloc[0]["p_value"] < ALPHA
    assert significant / studies == pytest.approx(0.8, abs=3 * math.sqrt(0.8 * 0.2 / studies))


def test_pilot_measures_votes_per_item_and_icc():
    pilot = clustered_study(np.random.default_rng(15), models=3, items_per_pair=300, votes_per_item=3, icc=0.3,
                            tie_rate=0.2, win_rates={(0, 1): 0.6, (1, 2): 0.6, (0, 2): 0.7})
    found = planner.assumptions_from_pilot(pilot, pd.DataFrame(), pd.DataFrame())
    assert found["votes_per_item"] == 3 and found["icc"] == pytest.approx(0.3, abs=0.1)
    assert found["tie_rate"] == pytest.approx(0.2, abs=0.03)


def test_adaptive_ledger_bets_once_on_an_item_whose_votes_arrive_in_several_batches():
    """Equal models; every item is reused in 8 batches (one vote each, ICC 0.5). Keyed by item (as the
    adaptive launch does) the ledger keeps alpha; betting every batch's outcome anew does not."""
    from parlai_dialeval.adaptive.ledger import Ledger
    from parlai_dialeval.analysis.collection_order import record_outcomes

    rng, studies = np.random.default_rng(16), 60
    keyed = fresh = 0
    for _ in range(studies):
        study = clustered_study(rng, models=2, items_per_pair=40, votes_per_item=8, icc=0.5, tie_rate=0.1)
        study = study.assign(type="comparison", batch=study.groupby("item_id").cumcount())
        by_item, anew = Ledger(["m0", "m1"]), Ledger(["m0", "m1"])
        for _, batch in study.groupby("batch"):
            for _, first, second, outcome, item in record_outcomes(batch.drop(columns="batch").to_dict("records")):
                by_item.add(first, second, outcome, item)
                anew.add(first, second, outcome)
        keyed += by_item.settled("m0", "m1")
        fresh += anew.settled("m0", "m1")
    assert keyed / studies <= bound(studies) < fresh / studies


def sm_scores(ratings: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    from parlai_dialeval.analysis import single_model

    turn = single_model.per_conversation_success(single_model.sm_turn_ratings(ratings))
    return turn, single_model.per_conversation_likert(single_model.sm_dialog_ratings(ratings))


def test_single_model_tests_keep_alpha_when_each_worker_rates_one_model():
    """Equal models; 20 workers with a personal bias (SD 1 on the logit and on the Likert scale), each
    rating only one model: a worker's bias looks like a model difference. The tests clustered by worker
    keep alpha; Student t over conversations (the rule before) does not, on the same studies."""
    from parlai_dialeval.analysis.single_model import ttests
    from parlai_dialeval.testing.clustered_ratings import sm_study

    rng, studies = np.random.default_rng(17), 100
    rejected, plain = {"success": 0, "value": 0}, {"success": 0, "value": 0}
    for _ in range(studies):
        turn, dialog = sm_scores(sm_study(rng, icc=0.3, workers=20, worker_sd=1.0, worker_per_model=True))
        for value, scores in (("success", turn), ("value", dialog)):
            test = ttests(scores, [("m0", "m1")], value=value).iloc[0]
            assert test["unit_of_independence"] == "worker"
            rejected[value] += test["p"] < ALPHA
            plain[value] += stats.ttest_ind(scores.loc[scores["model"] == "m0", value],
                                            scores.loc[scores["model"] == "m1", value]).pvalue < ALPHA
    assert max(rejected.values()) / studies <= bound(studies) < min(plain.values()) / studies


def test_single_model_tests_keep_alpha_when_a_few_workers_rate_most_conversations():
    """Equal models; 30 workers, each rating both models, a few of them most conversations (Zipf 1.5 loads: 4.2
    effective workers). With t on the count of workers less 1 the tests rejected 0.08-0.13 of an independent
    simulation's studies (300 each); on the effective number less 1, 0.01-0.03. CR2 (worker_robust_fit) instead of
    CR1 on the same 400 studies of a second simulation: 0.020 and 0.013 against 0.025 and 0.018 (SE about 0.007)."""
    from parlai_dialeval.analysis.single_model import ttests
    from parlai_dialeval.testing.clustered_ratings import sm_study

    rng, studies, rejected = np.random.default_rng(29), 100, {"success": 0, "value": 0}
    for _ in range(studies):
        turn, dialog = sm_scores(sm_study(rng, conversations=120, icc=0.3, workers=30, worker_sd=1.0,
                                          worker_loads=1 / np.arange(1, 31) ** 1.5))
        for value, scores in (("success", turn), ("value", dialog)):
            test = ttests(scores, [("m0", "m1")], value=value).iloc[0]
            assert test["unit_of_independence"] == "worker"
            rejected[value] += test["p"] < ALPHA
    assert max(rejected.values()) / studies <= bound(studies)


def test_single_model_intervals_cover_rates_and_likert_means_when_turns_cluster():
    """Truths in closed form from the generator: tick rates 0.6 / 0.7 at ICC 0.3, 4 turns (its WTA rate
    by the beta-binomial), Likert latent means 3.5 / 4.0 with SD 1 (its mean of rounded clipped scores)."""
    from parlai_dialeval.analysis.single_model import likert_summary, sm_dialog_ratings, sm_turn_ratings, success_rates
    from parlai_dialeval.testing.clustered_ratings import likert_mean, sm_study, wta_rate

    rng, studies, missed = np.random.default_rng(18), 100, {}
    truth = {("m0", "lin"): 0.6, ("m1", "lin"): 0.7, ("m0", "wta"): wta_rate(0.6, 0.3, 4),
             ("m1", "wta"): wta_rate(0.7, 0.3, 4), ("m0", "likert"): likert_mean(3.5, 1.0),
             ("m1", "likert"): likert_mean(4.0, 1.0)}
    for _ in range(studies):
        ratings = sm_study(rng, rates=(0.6, 0.7), likert_means=(3.5, 4.0), icc=0.3)
        rates = success_rates(sm_turn_ratings(ratings)).set_index("model")
        likert = likert_summary(sm_dialog_ratings(ratings)).set_index("model")
        for (model, kind), value in truth.items():
            low, high = (likert.loc[model, ["ci_low", "ci_high"]] if kind == "likert"
                         else rates.loc[model, [f"{kind}_ci_low", f"{kind}_ci_high"]])
            missed[model, kind] = missed.get((model, kind), 0) + (not low <= value <= high)
    assert max(missed.values()) / studies <= bound(studies), missed


def test_two_way_test_allows_for_workers_tastes_where_the_test_by_prompt_does_not():
    """Equal models judged by 20 workers, each with a taste for one model (SD 1 on the logit): the sign
    test by prompt rejects far too often for the worker population; p_two_way (prompt x worker) does not."""
    rng, studies, two_way, by_prompt = np.random.default_rng(19), 100, 0, 0
    for _ in range(studies):
        rates = pairwise.win_rates(clustered_study(rng, models=2, items_per_pair=150, votes_per_item=3, icc=0.13,
                                                   tie_rate=0.2, workers=20, worker_sd=1.0)).iloc[0]
        assert rates["workers"] == 20
        two_way += rates["p_two_way"] < ALPHA
        by_prompt += rates["p_value"] < ALPHA
    assert two_way / studies <= bound(studies) < by_prompt / studies


def test_two_way_test_keeps_near_alpha_when_a_few_workers_give_most_votes():
    """Equal models, 30 workers of whom 3 give 57% of the votes (Zipf 1.5 loads; 4.4 effective workers), each with a
    taste: with t on the count of workers less 1 degrees of freedom p_two_way rejected 0.135 in an independent
    simulation (400 studies); on the effective number less 1, 0.075 (200 studies). The docs call it approximate
    below about 20 effective workers, and the report says so."""
    rng, studies, rejected = np.random.default_rng(23), 100, 0
    for _ in range(studies):
        rates = pairwise.win_rates(clustered_study(rng, models=2, items_per_pair=200, votes_per_item=3, icc=0.13,
                                                   tie_rate=0.2, workers=30, worker_sd=1.0,
                                                   worker_loads=1 / np.arange(1, 31) ** 1.5)).iloc[0]
        assert rates["effective_workers"] < 6
        rejected += rates["p_two_way"] < ALPHA
    assert rejected / studies <= bound(studies)
