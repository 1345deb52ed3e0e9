"""Results by the people who judged (issue 54): over many simulated studies whose votes depend on each other (each
worker's own taste, each item's own difficulty: parlai_dialeval/testing/group_votes.py, which shares no code with the
estimator),

- level: where two groups rank the models alike, how often the permutation test of analysis/groups.py rejects at
  alpha (it must not exceed alpha beyond Monte Carlo error), beside the same statistic read against its chi-square
  reference, which counts votes as independent;
- power: where the groups disagree (different leaders), how often it rejects, by group size;
- coverage: the per-group intervals (clustered by item and worker, Bonferroni over the groups) against each group's
  own truth, and the weighted ranking's intervals (raking to the population's shares) against the population's
  truth, beside the unweighted ranking's;
- cost: the CPU of the groups' section (fits, two-way intervals, 999 permutations) against one plain fit of the
  same votes, in the same run.

    nice .venv/bin/python benchmarks/bench_groups.py [--studies 400] [--permutations 199]

Results in benchmarks/README.md ("Results by the people who judged").
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from parlai_dialeval.analysis import bradley_terry as bt, groups, pairwise, raking  # noqa: E402
from parlai_dialeval.testing.group_votes import group_study, population_truth  # noqa: E402

BASE = np.array([0.4, 0.1, -0.1, -0.4])
FLIPPED = np.array([-0.4, 0.5, 0.0, -0.1])
ALPHA = 0.05


def prepared(comparisons, people):
    frame = pairwise.with_sections(comparisons)
    levels = groups.worker_levels(frame["worker_id"], people, groups.By("group"))
    votes, workers, _ = groups.section_votes(frame, levels.index)
    return frame, levels, votes, workers


def rejection(studies: int, permutations: int, strengths: dict, size: int, taste: float, seed: int):
    """(permutation rejections, chi-square rejections) at ALPHA over ``studies`` studies."""
    from scipy import stats

    perm, chi = 0, 0
    for k in range(studies):
        comparisons, people = group_study(np.random.default_rng(seed + k), strengths, {"a": size, "b": size},
                                          votes_per_worker=20, taste_sd=taste)
        _, levels, votes, workers = prepared(comparisons, people)
        statistic, p = groups.disagreement(votes, workers, (levels.to_numpy() == "b").astype(np.int64),
                                           permutations, seed + k)
        perm += p <= ALPHA
        chi += stats.chi2.sf(statistic, len(votes.models) - 1) <= ALPHA
    return perm, chi


def coverage(studies: int, seed: int):
    """Per-group family coverage, weighted and unweighted coverage of the population's truth, mean Kish size."""
    strengths, population = {"young": BASE, "old": FLIPPED}, {"young": 0.75, "old": 0.25}
    truth = population_truth(strengths, population)
    own = {g: population_truth(strengths, {g: 1.0}) for g in strengths}
    family, weighted, plain, kish = np.zeros(4), np.zeros(4), np.zeros(4), []
    for k in range(studies):
        comparisons, people = group_study(np.random.default_rng(seed + k), strengths, {"young": 15, "old": 45})
        frame, levels, _, _ = prepared(comparisons, people)
        result = groups.group_rankings(frame, levels, ALPHA, min_workers=10, permutations=1)
        hits = [((rows["ci_low"] <= own[g]) & (own[g] <= rows["ci_high"])).to_numpy()
                for g, rows in ((g, result.rankings[result.rankings["group"] == g].set_index("model")
                                 .loc[["m0", "m1", "m2", "m3"]]) for g in strengths)]
        family += np.logical_and.reduce(hits)  # per model: both groups' intervals at once
        weights = pd.Series(raking.rake(levels.to_frame("group"), {"group": population}), index=levels.index)
        kish.append(raking.kish(weights))
        table = groups.weighted_rankings(frame, weights, ALPHA).set_index("model").loc[["m0", "m1", "m2", "m3"]]
        weighted += (table["weighted_ci_low"] <= truth) & (truth <= table["weighted_ci_high"])
        plain += (table["ci_low"] <= truth) & (truth <= table["ci_high"])
    return family / studies, weighted / studies, plain / studies, float(np.mean(kish))


def cost(seed: int):
    comparisons, people = group_study(np.random.default_rng(seed), {"a": BASE, "b": FLIPPED}, {"a": 100, "b": 100})
    frame, levels, votes, _ = prepared(comparisons, people)
    start = time.process_time()
    groups.group_rankings(frame, levels, ALPHA, permutations=999)
    section = time.process_time() - start
    start = time.process_time()
    bt.fit(votes)
    return section, time.process_time() - start, len(votes)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--permutations", type=int, default=199)
    args = parser.parse_args(argv)
    n = args.studies
    se = np.sqrt(ALPHA * (1 - ALPHA) / n)
    print(f"level at alpha {ALPHA} over {n} studies per row (Monte Carlo SE {se:.3f}); 2 groups, 4 models, "
          "20 votes a worker, item sd 0.5")
    for size, taste in ((12, 0.8), (30, 0.5)):
        start = time.time()
        perm, chi = rejection(n, args.permutations, {"a": BASE, "b": BASE}, size, taste, 10_000)
        print(f"  {size} workers a group, taste sd {taste}: permutation {perm / n:.3f}, chi-square reference "
              f"{chi / n:.3f} ({time.time() - start:.0f} s)")
    print(f"power at alpha {ALPHA} (leaders m0 and m1; {n // 2} studies per row)")
    for size in (10, 20, 30, 50):
        perm, _ = rejection(n // 2, args.permutations, {"a": BASE, "b": FLIPPED}, size, 0.5, 20_000)
        print(f"  {size} workers a group: {perm / (n // 2):.3f}")
    family, weighted, plain, kish = coverage(n // 2, 30_000)
    print(f"coverage over {n // 2} studies (15 young, 45 old workers; population 75% young)")
    print(f"  per-group intervals of each group's own truth, both groups at once per model (Bonferroni, 95%): "
          f"{np.round(family, 3)}")
    print(f"  weighted 95% intervals of the population's truth, per model: {np.round(weighted.to_numpy(), 3)}")
    print(f"  unweighted 95% intervals of the population's truth, per model: {np.round(plain.to_numpy(), 3)}")
    print(f"  mean Kish effective sample size: {kish:.1f} of 60 workers")
    section, plain_fit, votes = cost(40_000)
    print(f"cost on {votes} votes, 200 workers: the groups' section {section:.2f} CPU-s, one plain fit "
          f"{plain_fit:.3f} CPU-s (ratio {section / plain_fit:.0f})")


if __name__ == "__main__":
    main()
