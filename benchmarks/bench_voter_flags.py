"""Voter tests and fragility at size: false flags on honest crowds across the strong-taste grid (the family-wise
rate of flagging any honest worker, per cell: taste SD 0 to 1.5 logits x 10 to 40 workers, with position bias and
item effects, and without them), detection of rigging per share of the votes (at the usual tastes, SD 0.3, and at
strong ones) with the target's rank with and without the flagged workers, and the time of both on a million votes
(arena-like, and a crowd of 5,000 workers of 200 votes on 8 models: flag_voters alone) against one Bradley-Terry fit
of the same votes (the baseline, measured in the same run: the ranking's own core;
the full win-rate table took 366 s on 200,000 votes of 200 models, arena-43's to speed up).

Run: .venv/bin/python benchmarks/bench_voter_flags.py [--quick] [--studies N] [--processes P] [--speed-only]. Results in
benchmarks/README.md. Crowds: parlai_dialeval/testing/crowd_votes.py (8 models, item effects SD 1, worker tastes
N(0, SD) per worker and model, position bias 0.4 on the logit toward A with SD 0.3 between workers, 10% ties,
300 votes per worker), which shares no code with the tests; then where the tests stop finding riggers
(``limits``).
"""
from __future__ import annotations

import argparse
import multiprocessing
import time

import numpy as np
import pandas as pd
from scipy import stats

from parlai_dialeval.adaptive.voter_flags import exclude_flagged, flag_voters
from parlai_dialeval.analysis import pairwise
from parlai_dialeval.analysis.fragility import bt_fragility, pair_fragility
from parlai_dialeval.analysis.bradley_terry import encode, ilsr, kinds, win_matrix
from parlai_dialeval.testing.crowd_votes import crowd_study

STRENGTHS = np.linspace(0.0, 1.4, 8)  # m0 weakest ... m7 strongest
TARGET = 1  # the rigged model: second weakest
TASTES = (0.0, 0.5, 1.0, 1.5)  # honest workers' taste SD per model (logits)


def rank(votes: pd.DataFrame, model: str) -> int:
    encoded = encode(votes)
    strength = ilsr(win_matrix(*kinds(encoded.first, encoded.second, encoded.outcome), len(encoded.models)))
    return int((strength > strength[encoded.models.index(model)]).sum()) + 1


def honest(studies: int, votes: int, workers: int = 40, worker_sd: float = 0.3, position_bias: float = 0.4,
           item_sd: float = 1.0) -> dict:
    flagged_studies = flagged_workers = seen = 0
    tests: dict = {}
    for seed in range(studies):
        flags = flag_voters(crowd_study(np.random.default_rng(seed), strengths=STRENGTHS, votes=votes, workers=workers,
                                        worker_sd=worker_sd, position_bias=position_bias,
                                        position_sd=0.3 if position_bias else 0.0, item_sd=item_sd))
        flagged_studies += bool(flags.flagged)
        flagged_workers += len(flags.flagged)
        seen += flags.workers
        for test in set(flags.evidence()["test"]):
            tests[test] = tests.get(test, 0) + 1
    upper = stats.beta.ppf(0.975, flagged_studies + 1, studies - flagged_studies) if flagged_studies < studies else 1.0
    return {"worker_sd": worker_sd, "workers": workers, "votes": votes, "position_bias": position_bias,
            "item_sd": item_sd, "studies": studies, "with_a_flag": flagged_studies / studies,
            "with_a_flag_95%_upper": upper, "workers_flagged": flagged_workers / seen, "studies_flagged_by": tests}


def grid(studies: int, processes: int) -> pd.DataFrame:
    """The honest grid: every taste SD and crowd size with position bias and item effects, and at 20 workers
    without them."""
    cells = [{"worker_sd": sd, "workers": w, "votes": 300 * w} for sd in TASTES for w in (10, 20, 40)]
    cells += [{"worker_sd": sd, "workers": 20, "votes": 6000, "position_bias": 0.0, "item_sd": 0.0} for sd in TASTES]
    rows = []
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        for row in pool.imap_unordered(_cell, [(studies, cell) for cell in cells]):
            print(row, flush=True)  # progress: a cell takes minutes
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["item_sd", "worker_sd", "workers"], ascending=[False, True, True])


def _cell(job: tuple[int, dict]) -> dict:
    studies, cell = job
    return honest(studies, **cell)


def rigging(share: float, studies: int, votes: int, rigger_votes: int = 60, worker_sd: float = 0.3) -> dict:
    detected = riggers = honest_flagged = by_rigging = 0
    ranks = {"kept": [], "excluded": []}
    for seed in range(studies):
        study = crowd_study(np.random.default_rng(1000 + seed), strengths=STRENGTHS, votes=votes, workers=40,
                            rigging_share=share, target=TARGET, rigger_votes=rigger_votes, worker_sd=worker_sd)
        flags = flag_voters(study.drop(columns=["honest"]))
        bad = set(study.loc[~study["honest"], "worker_id"])
        detected += len(bad & set(flags.flagged))
        evidence = flags.evidence()
        by_rigging += len(bad & set(evidence.loc[evidence["test"] == "rigging", "worker_id"]))
        riggers += len(bad)
        honest_flagged += len(set(flags.flagged) - bad)
        ranks["kept"].append(rank(study, f"m{TARGET}"))
        ranks["excluded"].append(rank(exclude_flagged(study, flags)[0], f"m{TARGET}"))
    return {"share": share, "worker_sd": worker_sd, "rigger_votes": rigger_votes, "riggers": riggers / studies,
            "detected": detected / riggers,
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


def crowd_scale(votes: int, workers: int) -> dict:
    """A large crowd of the simulation's kind (8 models, tastes SD 1): every worker has many votes on each pair,
    so the taste estimate and the crowd tests' nested null carry the weight (arena votes have one vote a pair)."""
    frame = crowd_study(np.random.default_rng(0), strengths=STRENGTHS, votes=votes, workers=workers, worker_sd=1.0)
    timings = {}
    for name, run in (("Bradley-Terry fit (baseline)", lambda: rank(frame, f"m{TARGET}")),
                      ("flag_voters", lambda: flag_voters(frame))):
        start = time.perf_counter()
        result = run()
        timings[name] = time.perf_counter() - start
    print(f"flag_voters: {len(result.flagged)} of {result.workers} honest workers flagged, taste SD allowed "
          f"{result.taste_sd:.2f}")
    return timings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer studies and 200,000 arena votes")
    parser.add_argument("--studies", type=int, default=None, help="honest studies per cell of the grid (default 100)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--speed-only", action="store_true",
                        help="only the times (the whole run: about 21 minutes on 2 quiet cores)")
    args = parser.parse_args()
    studies = args.studies or (10 if args.quick else 100)
    pd.set_option("display.width", 200)
    if not args.speed_only:
        simulations(studies, args.processes)
    for label, timings in (("arena", arena(200_000 if args.quick else 1_000_000, 200)),
                           ("crowd", crowd_scale(200_000 if args.quick else 1_000_000, 1_000 if args.quick else 5_000))):
        base = timings["Bradley-Terry fit (baseline)"]
        for name, seconds in timings.items():
            print(f"{label}: {name}: {seconds:.1f} s ({seconds / base:.1f} x the baseline)")


def simulations(studies: int, processes: int) -> None:
    print(grid(studies, processes).to_string(index=False, float_format="{:.3f}".format))
    rigs = max(studies // 5, 4)
    print(pd.DataFrame([rigging(share, rigs, 4000) for share in (0.01, 0.02, 0.05, 0.1, 0.2)]
                       + [rigging(share, rigs, 4000, worker_sd=sd) for sd in (1.0, 1.5) for share in (0.05, 0.1, 0.2)]
                       ).to_string(index=False))
    print(limits(rigs).to_string(index=False))


if __name__ == "__main__":
    main()
