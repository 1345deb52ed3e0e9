"""Benchmark: Bradley-Terry with 1,000 bootstrap rounds on 1,000,000 votes among 20 models.

Target: under 30 s on a 2-core machine. Measured against straightforward implementations in the same
run (their time per round, extrapolated to the same number of rounds):
  naive     resample the vote rows, fit choix.ilsr_pairwise on the list of (winner, loser) pairs;
  rows      resample the vote rows, count them into a win matrix, fit choix.ilsr_pairwise_dense;
  ours      deduplicate (a, b, outcome) rows once, draw each round's counts from a multinomial, fit the
            win matrix (parlai_dialeval.analysis.rankings.bradley_terry).
Usage: .venv/bin/python benchmarks/bench_bradley_terry.py [--votes N] [--rounds R]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import choix
import numpy as np

from parlai_dialeval.analysis import rankings


def make_votes(n_votes: int, n_models: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    strengths = np.linspace(1.5, -1.5, n_models)
    a = rng.integers(0, n_models, n_votes)
    b = (a + rng.integers(1, n_models, n_votes)) % n_models
    p = 1 / (1 + np.exp(strengths[b] - strengths[a]))
    outcome = (rng.random(n_votes) < p).astype(float)
    return a, b, outcome, strengths


def naive_round(a, b, outcome, n_models, rng):
    idx = rng.integers(0, len(a), len(a))
    winners = np.where(outcome[idx] == 1, a[idx], b[idx])
    losers = np.where(outcome[idx] == 1, b[idx], a[idx])
    return choix.ilsr_pairwise(n_models, list(zip(winners.tolist(), losers.tolist())), alpha=rankings.BT_ALPHA)


def rows_round(a, b, outcome, n_models, rng):
    idx = rng.integers(0, len(a), len(a))
    winners = np.where(outcome[idx] == 1, a[idx], b[idx])
    losers = np.where(outcome[idx] == 1, b[idx], a[idx])
    matrix = np.bincount(winners * n_models + losers, minlength=n_models * n_models).reshape(n_models, n_models)
    return rankings.fit_bt(matrix.astype(float))


def per_round(function, rounds, *args):
    start = time.perf_counter()
    for _ in range(rounds):
        result = function(*args)
    return (time.perf_counter() - start) / rounds, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--naive-rounds", type=int, default=2, help="rounds timed for the naive baseline")
    parser.add_argument("--rows-rounds", type=int, default=20, help="rounds timed for the rows baseline")
    args = parser.parse_args()
    a, b, outcome, truth = make_votes(args.votes, args.models)
    print(f"{args.votes:,} votes, {args.models} models, {args.rounds} bootstrap rounds; "
          f"{platform.machine()}, {os.cpu_count()} CPUs")

    start = time.perf_counter()
    strengths, low, high = rankings.bradley_terry(a, b, outcome, args.models, rounds=args.rounds, seed=1)
    ours = time.perf_counter() - start
    rng = np.random.default_rng(2)
    naive, naive_fit = per_round(naive_round, args.naive_rounds, a, b, outcome, args.models, rng)
    rows, _ = per_round(rows_round, args.rows_rounds, a, b, outcome, args.models, rng)

    centred = truth - truth.mean()
    print(f"ours:  {ours:8.2f} s for {args.rounds} rounds (target < 30 s: {'met' if ours < 30 else 'MISSED'})")
    print(f"rows:  {rows * args.rounds:8.2f} s extrapolated ({rows:.3f} s/round over {args.rows_rounds} rounds)"
          f" -> ours is {rows * args.rounds / ours:.1f}x faster")
    print(f"naive: {naive * args.rounds:8.0f} s extrapolated ({naive:.2f} s/round over {args.naive_rounds} "
          f"rounds) -> ours is {naive * args.rounds / ours:.0f}x faster")
    print(f"check: true strengths inside 95% CI for {int(((low <= centred) & (centred <= high)).sum())}/"
          f"{args.models} models; max |ours - naive one-round fit| = {np.abs(strengths - naive_fit).max():.3f} "
          "(a resample, so small but non-zero)")


if __name__ == "__main__":
    main()
