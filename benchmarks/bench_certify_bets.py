"""Benchmark: which human-only bets should `dialeval certify` place (issues 25 and 30)? Today's grid of 20
fixed bets, the variance-adaptive aGRAPA bet of the judge's e-process without a judge, or their average.

Each rule bets on cluster outcomes (the mean of an item's votes, 1 = first model wins, tie 1/2) against
"win rate <= 1/2" in both directions (parlai_dialeval.adaptive.sequential: grid_paths, agrapa_paths). Items
come from the beta-binomial model of parlai_dialeval/testing/clustered_votes.py (its item_win_probabilities,
which imports no project code), 3 votes per item, 20% ties; "ICC" is the within-item intraclass correlation
of decided votes. Outcomes are independent across items, so their order does not matter.

  null        equal models, 200 items per pair, K = 2 and 12 models, ICC 0 / 0.13 / 0.3 / 0.8: share of
              --studies studies in which any pair reaches K(K-1)/alpha in either direction at any look
              (a false claim; bound alpha + 2 SE).
  votes       one pair, win rate 0.55 / 0.60 / 0.70 among decided votes, at the threshold of K = 4 (240) and
              K = 12 (2,640): median human votes to settle over --pair-studies studies (runs open at the
              cap of 6,000 items count as the cap); "ranking": the sum over the 3 adjacent pairs of a
              4-model ranking at win rate 0.6.
  single      the same with one decided vote per item and no ties (outcomes all 0 or 1), at the thresholds
              of K = 2 (40), 4 and 12.
  chateval    ../shared/data/chateval/amt_ab_2018 (12 models, 18 pairs, threshold 2,640), one outcome per
              prompt in submit-time order (certify's pair_outcomes): how many pairs each rule settles.
Usage: .venv/bin/python benchmarks/bench_certify_bets.py [--studies 1000] [--pair-studies 300] [--seed 7]
       [--part all|null|votes|single|chateval]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from parlai_dialeval.adaptive.sequential import agrapa_paths, certification_threshold, grid_paths
from parlai_dialeval.testing.clustered_votes import item_win_probabilities

ALPHA = 0.05
VOTES, TIES = 3, 0.2
ICCS = (0.0, 0.13, 0.3, 0.8)
CAP = 6000
# weight of the aGRAPA wealth in the rule's wealth; the rest is the grid's (an average of two test
# supermartingales under H0 is one too)
RULES = {"grid (today)": 0.0, "aGRAPA": 1.0, "average": 0.5}


def cluster_outcomes(rng: np.random.Generator, shape: tuple, win_rate: float, icc: float, votes: int = VOTES,
                     ties: float = TIES) -> np.ndarray:
    """Outcomes of items of ``shape`` (last axis: collection order): the mean of ``votes`` votes each."""
    p = item_win_probabilities(rng, np.full(shape, win_rate), icc)
    drawn = np.where(rng.random(shape + (votes,)) < ties, 0.5, rng.random(shape + (votes,)) < p[..., None])
    return drawn.mean(axis=-1)


def running_best(y: np.ndarray) -> dict[str, np.ndarray]:
    """Per rule, the running maximum over both directions of the wealth, shape of ``y``."""
    parts = {sign: (grid_paths(y, sign), agrapa_paths(y, sign)) for sign in (1, -1)}
    return {name: np.maximum.accumulate(np.maximum(*[(1 - w) * g + w * a for g, a in parts.values()]), axis=-1)
            for name, w in RULES.items()}


def null(args) -> None:
    print(f"null: equal models, 200 items per pair, {VOTES} votes, {TIES:.0%} ties; share of {args.studies} studies "
          f"with any claim (bound {ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / args.studies):.4f})")
    for models in (2, 12):
        pairs, threshold = models * (models - 1) // 2, certification_threshold(models, ALPHA)
        for step, icc in enumerate(ICCS):
            seed = args.seed + 10 * models + step
            rng, claims = np.random.default_rng(seed), dict.fromkeys(RULES, 0)
            for chunk in np.array_split(np.arange(args.studies), max(1, args.studies * pairs // 2000)):
                best = running_best(cluster_outcomes(rng, (len(chunk), pairs, 200), 0.5, icc))
                for name, wealth in best.items():
                    claims[name] += int((wealth[..., -1] >= threshold).any(axis=1).sum())
            print(f"  K={models:2} ICC {icc:4.2f} seed {seed}: " + "  ".join(
                f"{name} {count / args.studies:.4f}" for name, count in claims.items()), flush=True)


def votes_to_settle(rng, studies: int, win_rate: float, icc: float, threshold: float, votes: int = VOTES,
                    ties: float = TIES) -> dict[str, np.ndarray]:
    stops = {name: np.empty(0) for name in RULES}
    for chunk in np.array_split(np.arange(studies), max(1, studies // 50)):
        best = running_best(cluster_outcomes(rng, (len(chunk), CAP), win_rate, icc, votes, ties))
        for name, wealth in best.items():
            reached = wealth >= threshold
            stops[name] = np.concatenate([stops[name], np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, CAP)])
    return {name: stop * votes for name, stop in stops.items()}


def votes(args) -> None:
    print(f"votes to settle one pair: median of {args.pair_studies} studies, {VOTES} votes per item; ratio to today")
    rng = np.random.default_rng(args.seed + 100)
    for models in (4, 12):
        threshold = certification_threshold(models, ALPHA)
        for win_rate in (0.55, 0.6, 0.7):
            for icc in ICCS:
                medians = {k: float(np.median(v)) for k, v in
                           votes_to_settle(rng, args.pair_studies, win_rate, icc, threshold).items()}
                print(f"  threshold {threshold:5.0f} win rate {win_rate:.2f} ICC {icc:4.2f}: " + "  ".join(
                    f"{k} {v:6.0f} ({v / medians['grid (today)']:.2f}x)" for k, v in medians.items()), flush=True)
    for icc in ICCS:
        runs = [votes_to_settle(rng, args.pair_studies, 0.6, icc, certification_threshold(4, ALPHA)) for _ in range(3)]
        medians = {k: float(np.median(sum(run[k] for run in runs))) for k in RULES}
        print(f"  ranking of 4 (3 adjacent pairs at 0.60), ICC {icc:4.2f}: " + "  ".join(
            f"{k} {v:6.0f} ({v / medians['grid (today)']:.2f}x)" for k, v in medians.items()), flush=True)


def single(args) -> None:
    print(f"votes to settle one pair with one decided vote per item (no ties): median of {args.pair_studies} studies")
    rng = np.random.default_rng(args.seed + 200)
    for models in (2, 4, 12):
        threshold = certification_threshold(models, ALPHA)
        for win_rate in (0.55, 0.6, 0.7):
            medians = {k: float(np.median(v)) for k, v in
                       votes_to_settle(rng, args.pair_studies, win_rate, 0.0, threshold, votes=1, ties=0.0).items()}
            print(f"  threshold {threshold:5.0f} win rate {win_rate:.2f}: " + "  ".join(
                f"{k} {v:6.0f} ({v / medians['grid (today)']:.2f}x)" for k, v in medians.items()), flush=True)


def chateval(args) -> None:
    from parlai_dialeval.adaptive.certification import pair_outcomes
    from parlai_dialeval.analysis.pairwise import split_onboarding
    from parlai_dialeval.importers import load
    from parlai_dialeval.shared_data import shared_data_dir

    comparisons, _ = split_onboarding(load([shared_data_dir() / "chateval" / "amt_ab_2018"], log=lambda *a: None)
                                      .comparisons)
    pairs = pair_outcomes(comparisons)
    threshold = certification_threshold(12, ALPHA)
    settled = dict.fromkeys(RULES, 0)
    print(f"ChatEval 2018: {len(pairs)} pairs, threshold {threshold:,.0f}, order {pairs['order'].iloc[0]}; e per rule")
    for pair in pairs.itertuples(index=False):
        e = {name: float(best[-1]) for name, best in running_best(pair.outcomes).items()}
        for name, value in e.items():
            settled[name] += value >= threshold
        print(f"  {pair.model_a} vs {pair.model_b} ({len(pair.outcomes)} prompts, mean {pair.outcomes.mean():.3f}): "
              + "  ".join(f"{k} {v:.3g}" for k, v in e.items()))
    print("  pairs settled: " + "  ".join(f"{k} {v} of {len(pairs)}" for k, v in settled.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--pair-studies", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--part", choices=("all", "null", "votes", "single", "chateval"), default="all")
    args = parser.parse_args()
    start = time.time()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores")
    for part in (null, votes, single, chateval):
        if args.part in ("all", part.__name__):
            part(args)
    print(f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
