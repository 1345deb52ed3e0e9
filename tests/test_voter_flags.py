"""Voter flags (adaptive/voter_flags.py) on simulated crowds (parlai_dialeval/testing/crowd_votes.py, which
shares no code with them): honest clustered, position-biased crowds flagged at most at alpha; riggers,
one-sided and too-fast workers flagged by their own test."""
from __future__ import annotations

import re

import choix
import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.adaptive.voter_flags import VoterSettings, exclude_flagged, flag_voters
from parlai_dialeval.testing.crowd_votes import crowd_study


def test_honest_clustered_position_biased_crowds_are_not_flagged():
    # Family-wise error rate <= 5% per study: in 8 independent honest studies (item effects SD 1, worker
    # tastes SD 0.3, 60% of decided votes for side A) more than one with a flag would have probability
    # below 1 - 0.95^8 - 8 x 0.05 x 0.95^7 = 5.7%, and that is if every study used its whole alpha.
    studies = [flag_voters(crowd_study(np.random.default_rng(seed), votes=2000)) for seed in range(8)]
    assert sum(bool(flags.flagged) for flags in studies) <= 1
    # 8 models, few workers with many votes and stronger tastes (SD 0.5 per model; 75 votes per worker and
    # model): the tastes the crowd shows keep them unflagged (more than one: probability <= 3.3% at alpha 0.05)
    tastes = [flag_voters(crowd_study(np.random.default_rng(seed), strengths=np.linspace(0.0, 1.4, 8), workers=10,
                                      votes=6000, worker_sd=0.5)) for seed in range(6)]
    assert sum(bool(flags.flagged) for flags in tastes) <= 1
    a_share = crowd_study(np.random.default_rng(0), votes=2000).query("choice != 'tie'")["choice"].eq("a").mean()
    assert 0.55 < a_share < 0.7  # the crowd does have position bias


@pytest.mark.slow
def test_honest_workers_with_strong_tastes_are_not_flagged():
    # Issue 50 item 7: with tastes of SD 1 logit per worker and model (the calibration setting of
    # docs/adaptive_evaluation.md), 10 workers x 600 votes, 21 of 30 honest studies flagged someone (43 of 300
    # workers, 42 by rigging) under the fixed margin of odds x e; 4 of these 6 (8 workers) before the fix. The
    # crowd's own spread of tastes is what an honest worker may have: more than one of 6 studies flagged has
    # probability <= 3.3% at alpha 0.05; at SD 1.5, more than one of 3: <= 0.7%.
    for sd, seeds in ((1.0, 6), (1.5, 3)):
        studies = [flag_voters(crowd_study(np.random.default_rng(seed), strengths=np.linspace(0.0, 1.4, 8),
                                           workers=10, votes=6000, worker_sd=sd)) for seed in range(seeds)]
        assert sum(bool(flags.flagged) for flags in studies) <= 1, sd
        assert all(flags.taste_sd > sd for flags in studies if flags.taste_sd is not None)  # a pair's taste: SD sd x 2^0.5


def _bt_rank(votes: pd.DataFrame, model: str) -> int:
    """Rank (1 = best) of ``model`` by choix's Bradley-Terry MLE, ties as half wins: independent of the code."""
    models = sorted(set(votes["model_a"]) | set(votes["model_b"]))
    index = {m: i for i, m in enumerate(models)}
    matrix = np.zeros((len(models), len(models)))
    for a, b, choice in votes[["model_a", "model_b", "choice"]].itertuples(index=False):
        win = {"a": 1.0, "b": 0.0, "tie": 0.5}[choice]
        matrix[index[a], index[b]] += win
        matrix[index[b], index[a]] += 1 - win
    strength = choix.ilsr_pairwise_dense(matrix, alpha=1e-3)
    return int((strength > strength[index[model]]).sum()) + 1


def test_riggers_are_flagged_and_excluding_them_restores_the_targets_rank():
    study = crowd_study(np.random.default_rng(3), votes=2000, rigging_share=0.05, target=0, rigger_votes=100)
    flags = flag_voters(study)
    riggers = set(study.loc[~study["honest"], "worker_id"])
    assert set(flags.flagged) == riggers
    evidence = flags.evidence()
    assert set(evidence["test"]) <= {"rigging", "against_crowd"}
    assert set(evidence.loc[evidence["test"] == "rigging", "target"]) == {"m0"}
    kept, left_out = exclude_flagged(study, flags)
    assert left_out == int((~study["honest"]).sum())
    assert _bt_rank(study, "m0") < 4 and _bt_rank(kept, "m0") == 4  # m0 is the weakest model


def test_riggers_with_a_tenth_of_all_votes_are_found_though_they_are_the_targets_crowd():
    # 8 riggers x 60 votes, all on the target's 7 pairs: a third of its votes, the majority of its pairs by volume
    strengths = np.linspace(0.0, 1.4, 8)
    study = crowd_study(np.random.default_rng(1000), strengths=strengths, votes=4000, rigging_share=0.1, target=1,
                        rigger_votes=60)
    flags = flag_voters(study.drop(columns=["honest"]))
    assert set(flags.flagged) == set(study.loc[~study["honest"], "worker_id"])
    assert _bt_rank(study, "m1") <= 3 and _bt_rank(exclude_flagged(study, flags)[0], "m1") == 7


def test_riggers_with_a_fifth_of_all_votes_are_found_by_the_rigging_test():
    # 17 riggers x 60 votes against 40 honest workers: half the target's votes, and on most of its pairs the
    # majority of its workers; against_crowd saw almost none of them before the rigging test bet against the
    # others' share of votes for the target (23% found by the benchmark's 20 studies at this share)
    strengths = np.linspace(0.0, 1.4, 8)
    study = crowd_study(np.random.default_rng(1001), strengths=strengths, votes=4000, rigging_share=0.2, target=1,
                        rigger_votes=60)
    flags = flag_voters(study.drop(columns=["honest"]))
    riggers = set(study.loc[~study["honest"], "worker_id"])
    assert len(riggers) == 17 and set(flags.flagged) == riggers
    evidence = flags.evidence()
    assert set(evidence.loc[evidence["test"] == "rigging", "worker_id"]) == riggers
    assert set(evidence.loc[evidence["test"] == "rigging", "target"]) == {"m1"}
    assert _bt_rank(study, "m1") == 1 and _bt_rank(exclude_flagged(study, flags)[0], "m1") == 7


def test_a_lone_rigger_with_one_percent_of_the_votes_is_found():
    # 40 votes, all for the second weakest of 8 models, about 40% of the others' votes on its pairs: beyond any
    # taste of this crowd (SD 0.3 per model)
    strengths = np.linspace(0.0, 1.4, 8)
    for seed in range(1000, 1004):
        study = crowd_study(np.random.default_rng(seed), strengths=strengths, votes=4000, rigging_share=0.01,
                            target=1, rigger_votes=60)
        assert flag_voters(study.drop(columns=["honest"])).flagged == ["rig0"]


def test_rigging_null_is_the_other_workers_share_for_the_model_with_honest_tastes_around_it():
    # x beats y on 4 of the other 5 workers' votes (one each); the tested worker votes for y 30 times, on both
    # sides: the null's centre is the others' share for y with half a worker each way, (1 + 0.5) / 6 = 0.25,
    # whatever the worker's own votes. (Was: that share's odds times a fixed e^1, 0.4046; issue 50 item 7 made
    # the allowance the spread of honest tastes, estimated from the crowd or set with ``taste``.)
    others = [("x", "y", "a" if worker < 4 else "b", f"o{worker}") for worker in range(5)]
    own = [("y", "x", "a"), ("x", "y", "b")] * 15
    votes = pd.DataFrame(others + [(a, b, c, "t") for a, b, c in own], columns=["model_a", "model_b", "choice",
                                                                                "worker_id"])
    votes["item_id"] = [f"i{n}" for n in range(len(votes))]
    narrow, wide = (flag_voters(votes, VoterSettings(taste=sd)).table.set_index(["worker_id", "test"])
                    .loc[("t", "rigging")] for sd in (0.0, 5.0))
    assert (narrow["target"], narrow["votes"], narrow["hits"]) == ("y", 30, 30)
    assert narrow["null"] == pytest.approx(0.25) and wide["null"] == pytest.approx(0.25)
    # 30 of 30 for y where the others give it a quarter: beyond any taste of SD 0, within one of SD 5
    assert narrow["flagged"] and not wide["flagged"]


def test_random_clickers_are_flagged_for_the_weaker_model_they_vote_for_too_often():
    # a worker who picks A or B at random votes for the weaker model of each pair about half the time: never
    # against the crowd more often than not, but far above the weaker model's share (what one ChatEval
    # worker does: 156 of 300 votes for a model the others chose on 15% of theirs). Lopsided pairs (1.5 apart
    # on the logit) and 400 votes each: the weak models' shares are far below a half, beyond any taste here
    study = crowd_study(np.random.default_rng(11), strengths=np.linspace(0.0, 4.5, 4), votes=2000,
                        random_workers=2, dishonest_votes=400)
    flags = flag_voters(study)
    evidence = flags.evidence()
    assert set(flags.flagged) == {"random0", "random1"}
    # against the crowd too since issue 50 item 7 (a taste-aware null, and an alternative of any constant share)
    rigging = evidence[evidence["test"] == "rigging"]
    assert set(rigging["worker_id"]) == {"random0", "random1"} and set(rigging["target"]) <= {"m0", "m1"}


def test_one_sided_and_too_fast_workers_are_flagged_by_their_own_test():
    study = crowd_study(np.random.default_rng(5), votes=2000, side_workers=2, fast_workers=2, dishonest_votes=120)
    flags = flag_voters(study)
    evidence = flags.evidence()
    assert set(evidence.loc[evidence["test"] == "position", "worker_id"]) == {"side0", "side1"}
    assert set(evidence.loc[evidence["test"] == "too_fast", "worker_id"]) == {"fast0", "fast1"}
    assert set(flags.flagged) == {"side0", "side1", "fast0", "fast1"}
    side = [line for line in flags.sentences() if line.startswith("worker side0: picked one side on ")]
    assert len(side) == 1 and re.search(r"on (\d+) of \1 votes \(honest at most 80%\); e-value", side[0])


def test_threshold_is_bonferroni_over_workers_tests_and_models():
    study = crowd_study(np.random.default_rng(7), votes=600, workers=10)
    flags = flag_voters(study, VoterSettings(alpha=0.1))
    table = flags.table
    # 4 tests x 10 workers / 0.1; the crowd tests also x 4 models (independent arithmetic; against_crowd is per
    # worker and model since issue 50 item 7, where it was per worker: 400)
    crowd = table["test"].isin(["rigging", "against_crowd"])
    assert np.allclose(table.loc[~crowd, "threshold"], 400)
    assert np.allclose(table.loc[crowd, "threshold"], 1600)


def test_tests_that_cannot_apply_say_why():
    study = crowd_study(np.random.default_rng(9), votes=600).drop(columns=["duration"])
    study["model_a"], study["model_b"] = (np.where(study["model_a"] < study["model_b"], study[c1], study[c2])
                                          for c1, c2 in (("model_a", "model_b"), ("model_b", "model_a")))
    flags = flag_voters(study)
    assert flags.tests["too_fast"].startswith("not run: the records hold no times")
    assert flags.tests["position"].startswith("not run: no pair was shown in both orders")
    assert set(flags.table["test"]) == {"against_crowd", "rigging"}
    models = len(set(study["model_a"]) | set(study["model_b"]))  # both crowd tests per model too (issue 50 item 7)
    assert np.allclose(flags.table["threshold"].min(), 2 * flags.workers * models / 0.05)


@pytest.mark.slow
def test_analyze_pairwise_and_certify_report_flagged_workers_and_leave_them_out_on_request(tmp_path):
    from parlai_dialeval.scripts import analyze_pairwise, certify

    study = crowd_study(np.random.default_rng(3), votes=2000, rigging_share=0.05, target=0, rigger_votes=100)
    riggers = sorted(set(study.loc[~study["honest"], "worker_id"]))
    study = study.drop(columns=["honest"])
    left = analyze_pairwise.analyze(study, tmp_path / "left", analyze_pairwise.PairwiseConfig(
        bootstrap_rounds=5, exclude_flagged=True), log=lambda *_: None)
    assert left["summary"]["voter_flags"]["flagged"] == riggers
    assert left["summary"]["voter_flags"]["votes_left_out"] == int(study["worker_id"].isin(riggers).sum())
    assert _bt_rank(study, "m0") < 4 and left["rankings"].set_index("model").loc["m0", "rank"] == 4
    report = (tmp_path / "left" / "report.html").read_text()
    assert f"worker {riggers[0]}: " in report and "votes are left out of everything below" in report
    assert "m3 is top; " in report and " reverses if " in report
    kept = certify.analyze(study, tmp_path / "certify", certify.CertifyConfig())
    flagged = kept["voter_flags"]
    assert sorted(set(flagged.loc[flagged["flagged"], "worker_id"])) == riggers
    report = (tmp_path / "certify" / "report.html").read_text()
    assert "their votes are kept (--exclude-flagged true leaves them out)" in report
    assert " reverses if " in report and (tmp_path / "certify" / "fragility_pairs.csv").exists()
