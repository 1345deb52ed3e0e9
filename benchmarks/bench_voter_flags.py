"""Voter tests and fragility at size: false flags on honest crowds, detection of rigging per share of the
votes with the target's rank with and without the flagged workers, and the time of both on a million votes
against one Bradley-Terry fit of the same votes (the baseline, measured in the same run: the ranking's own
core; the full win-rate table took 366 s on 200,000 votes of 200 models, arena-43's to speed up).

Run: .venv/bin/python benchmarks/bench_voter_flags.py [--quick]. Results in benchmarks/README.md.
Crowds: parlai_dialeval/testing/crowd_votes.py (item effects SD 1, worker tastes SD 0.3, position bias
0.4 on the logit toward A, 10% ties; also 10 workers of 600 votes with tastes SD 0.5), which shares no code
with the tests; then where the tests stop finding riggers (``limits``).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive.voter_flags import exclude_flagged, flag_voters
from parlai_dialeval.analysis import pairwise
from parlai_dialeval.analysis.fragility import bt_fragility, pair_fragility
from parlai_dialeval.analysis.bradley_terry import encode, ilsr, kinds, win_matrix
from parlai_dialeval.testing.crowd_votes import crowd_study

STRENGTHS = np.linspace(0.0, 1.4, 8)  # m0 weakest ... m7 strongest
TARGET = 1  # the rigged model: second weakest


def rank(votes: pd.DataFrame, model: str) -> int:
    encoded = encode(votes)
    strength = ilsr(win_matrix(*kinds(encoded.first, encoded.second, encoded.outcome), len(encoded.models)))
    return int((strength > strength[encoded.models.index(model)]).sum()) + 1


def honest(studies: int, votes: int, workers: int = 40, worker_sd: float = 0.3) -> dict:
    flagged_studies = flagged_workers = seen = 0
    tests: dict = {}
    for seed in range(studies):
        flags = flag_voters(crowd_study(np.random.default_rng(seed), strengths=STRENGTHS, votes=votes, workers=workers,
                                        worker_sd=worker_sd))
        flagged_studies += bool(flags.flagged)
        flagged_workers += len(flags.flagged)
        seen += flags.workers
        for test in set(flags.evidence()["test"]):
            tests[test] = tests.get(test, 0) + 1
    return {"studies": studies, "votes": votes, "workers": workers, "worker_sd": worker_sd,
            "with_a_flag": flagged_studies / studies, "workers_flagged": flagged_workers / seen,
            "studies_flagged_by": tests}


def rigging(share: float, studies: int, votes: int, rigger_votes: int = 60) -> dict:
    detected = riggers = honest_flagged = by_rigging = 0
    ranks = {"kept": [], "excluded": []}
    for seed in range(studies):
        study = crowd_study(np.random.default_rng(1000 + seed), strengths=STRENGTHS, votes=votes, workers=40,
                            rigging_share=share, target=TARGET, rigger_votes=rigger_votes)
        flags = flag_voters(study.drop(columns=["honest"]))
        bad = set(study.loc[~study["honest"], "worker_id"])
        detected += len(bad & set(flags.flagged))
        evidence = flags.evidence()
        by_rigging += len(bad & set(evidence.loc[evidence["test"] == "rigging", "worker_id"]))
        riggers += len(bad)
        honest_flagged += len(set(flags.flagged) - bad)
        ranks["kept"].append(rank(study, f"m{TARGET}"))
        ranks["excluded"].append(rank(exclude_flagged(study, flags)[0], f"m{TARGET}"))
    return {"share": share, "rigger_votes": rigger_votes, "riggers": riggers / studies, "detected": detected / riggers,
            "by_rigging_test": by_rigging / riggers,
            "honest_flagged_per_study": honest_flagged / studies, "true_rank": len(STRENGTHS) - TARGET,
            "rank_kept": np.mean(ranks["kept"]), "rank_excluded": np.mean(ranks["excluded"])}


def limits(studies: int) -> pd.DataFrame:
    """Where the tests stop finding riggers: most of the target's workers, or many riggers of few votes each."""
    return pd.DataFrame([rigging(0.5, studies, 4000), rigging(0.1, studies, 4000, rigger_votes=10),
                         rigging(0.1, studies, 4000, rigger_votes=20)])


def arena(votes: int, models: int) -> dict:
    """Arena-like votes: every pair at random, one vote per item, 50 votes per worker."""
    rng = np.random.default_rng(0)
    strength = np.sort(rng.normal(0, 1, models))
    a = rng.integers(0, models, votes)
    b = (a + rng.integers(1, models, votes)) % models
    p = 1 / (1 + np.exp(strength[b] - strength[a]))
    choice = np.where(rng.random(votes) < 0.1, "tie", np.where(rng.random(votes) < p, "a", "b"))
    names = np.array([f"model{i:03d}" for i in range(models)], dtype=object)
    frame = pairwise.with_sections(pd.DataFrame({
        "item_id": np.arange(votes).astype(str), "model_a": names[a], "model_b": names[b], "choice": choice,
        "worker_id": np.char.add("w", rng.integers(0, votes // 50, votes).astype(str)).astype(object)}))
    timings = {}
    def strengths():
        encoded = encode(frame)
        return ilsr(win_matrix(*kinds(encoded.first, encoded.second, encoded.outcome), len(encoded.models)))

    for name, run in (("Bradley-Terry fit (baseline)", strengths),
                      ("flag_voters", lambda: flag_voters(frame)), ("pair_fragility", lambda: pair_fragility(frame)),
                      ("bt_fragility", lambda: bt_fragility(frame))):
        start = time.perf_counter()
        result = run()
        timings[name] = time.perf_counter() - start
        if name == "flag_voters":
            print(f"flag_voters: {len(result.flagged)} of {result.workers} honest workers flagged")
    print(result["sentence"].iloc[0])
    return timings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer studies and 200,000 arena votes")
    args = parser.parse_args()
    studies = 10 if args.quick else 100
    crowds = [honest(studies, 3000), honest(studies, 6000, workers=10, worker_sd=0.5)]
    print(pd.DataFrame(crowds).to_string(index=False))
    print(pd.DataFrame([rigging(share, max(studies // 5, 4), 4000)
                        for share in (0.01, 0.02, 0.05, 0.1, 0.2)]).to_string(index=False))
    print(limits(max(studies // 5, 4)).to_string(index=False))
    timings = arena(200_000 if args.quick else 1_000_000, 200)
    base = timings["Bradley-Terry fit (baseline)"]
    for name, seconds in timings.items():
        print(f"{name}: {seconds:.1f} s ({seconds / base:.1f} x the baseline)")


if __name__ == "__main__":
    main()
