"""Benchmark: Bradley-Terry with 1,000 bootstrap rounds on 1,000,000 votes among 20 models.

Target: well under 0.5 s for the bootstrap fits. Measured in the same run, on the same votes:
  ours      deduplicate (a, b, outcome) rows once, draw each round's counts from a multinomial, fit all
            rounds' win matrices at once (parlai_dialeval.analysis.bradley_terry.bootstrap);
  per-round the same multinomial draws, one choix fit per round (this project's code before batching);
  fastchat  FastChat's compute_bootstrap_bt (fastchat/serve/monitor/rating_systems.py, L-BFGS per round in
            a process pool), given with --fastchat DIR (a FastChat checkout, or a folder holding its
            rating_systems.py; not part of this project);
  rows      resample the vote rows, count them into a win matrix, fit choix (per round, extrapolated);
  naive     resample the vote rows, choix.ilsr_pairwise on the (winner, loser) list (extrapolated).
Usage: .venv/bin/python benchmarks/bench_bradley_terry.py [--votes N] [--rounds R] [--fastchat DIR]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
from pathlib import Path

import choix
import numpy as np

from parlai_dialeval.analysis import bradley_terry as bt


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
    return choix.ilsr_pairwise(n_models, list(zip(winners.tolist(), losers.tolist())), alpha=bt.ILSR_ALPHA)


def rows_round(a, b, outcome, n_models, rng):
    idx = rng.integers(0, len(a), len(a))
    winners = np.where(outcome[idx] == 1, a[idx], b[idx])
    losers = np.where(outcome[idx] == 1, b[idx], a[idx])
    matrix = np.bincount(winners * n_models + losers, minlength=n_models * n_models).reshape(n_models, n_models)
    return bt.ilsr(matrix.astype(float))


def per_round_loop(a, b, outcome, n_models, rounds, seed):
    """The bootstrap as it was before batching: rows deduplicated by np.unique over rows, the same
    draws, one choix fit per round."""
    unique, counts = np.unique(np.column_stack([a, b, outcome]), axis=0, return_counts=True)
    total = int(counts.sum())
    samples = np.random.default_rng(seed).multinomial(total, counts / total, size=rounds)
    return np.array([bt.ilsr(bt.win_matrix(unique, sample, n_models)) for sample in samples])


def fastchat_bootstrap(folder: Path, a, b, outcome, rounds):
    """FastChat's compute_bootstrap_bt on the same votes, imported from a checkout's file."""
    import pandas as pd

    # a FastChat checkout, or a folder holding the file itself (../shared/anchors/fastchat)
    found = [path for path in (folder / "fastchat" / "serve" / "monitor" / "rating_systems.py",
                               folder / "rating_systems.py") if path.is_file()]
    if not found:
        raise SystemExit(f"--fastchat {folder}: neither a FastChat checkout nor a folder holding rating_systems.py")
    spec = importlib.util.spec_from_file_location("rating_systems", found[0])
    module = importlib.util.module_from_spec(spec)
    sys.modules["rating_systems"] = module  # its process pool pickles functions by module name
    spec.loader.exec_module(module)
    winner = np.select([outcome == 1, outcome == 0], ["model_a", "model_b"], "tie")
    battles = pd.DataFrame({"model_a": [f"m{i:02d}" for i in a], "model_b": [f"m{i:02d}" for i in b],
                            "winner": winner})
    return module.compute_bootstrap_bt(battles, rounds)


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
    parser.add_argument("--fastchat", type=Path, default=None,
                        help="a FastChat checkout (or a folder holding rating_systems.py), for its baseline")
    args = parser.parse_args()
    a, b, outcome, truth = make_votes(args.votes, args.models)
    print(f"{args.votes:,} votes, {args.models} models, {args.rounds} bootstrap rounds; "
          f"{platform.machine()}, {os.cpu_count()} CPUs")

    start = time.perf_counter()
    strengths, low, high = bt.bootstrap(bt.Votes([f"m{i}" for i in range(args.models)], a, b, outcome),
                                        rounds=args.rounds, seed=1)
    ours = time.perf_counter() - start
    unique, counts = bt.kinds(a, b, outcome)
    total = int(counts.sum())
    draws = np.random.default_rng(1).multinomial(total, counts / total, size=args.rounds)
    matrices = np.stack([bt.win_matrix(unique, d, args.models) for d in draws])
    start = time.perf_counter()
    batched = bt.ilsr_rounds(matrices)
    fits = time.perf_counter() - start
    start = time.perf_counter()
    looped = per_round_loop(a, b, outcome, args.models, args.rounds, seed=1)
    before = time.perf_counter() - start
    print(f"ours:      {ours:8.2f} s for {args.rounds} rounds, of which the batched fits {fits:.3f} s")
    print(f"per-round: {before:8.2f} s (one choix fit per round, same draws) -> ours is {before / ours:.1f}x faster; "
          f"max |batched - per-round| strength {np.abs(batched - looped).max():.1e}")
    if args.fastchat is not None:
        start = time.perf_counter()
        fastchat_bootstrap(args.fastchat, a, b, outcome, args.rounds)
        fastchat = time.perf_counter() - start
        print(f"fastchat:  {fastchat:8.2f} s (compute_bootstrap_bt, {os.cpu_count()} processes) -> ours is "
              f"{fastchat / ours:.1f}x faster")
    else:
        print("fastchat:  skipped (give --fastchat DIR, a FastChat checkout, to measure compute_bootstrap_bt)")
    rng = np.random.default_rng(2)
    naive, naive_fit = per_round(naive_round, args.naive_rounds, a, b, outcome, args.models, rng)
    rows, _ = per_round(rows_round, args.rows_rounds, a, b, outcome, args.models, rng)

    centred = truth - truth.mean()
    print(f"rows:      {rows * args.rounds:8.2f} s extrapolated ({rows:.3f} s/round over {args.rows_rounds} rounds)"
          f" -> ours is {rows * args.rounds / ours:.1f}x faster")
    print(f"naive:     {naive * args.rounds:8.0f} s extrapolated ({naive:.2f} s/round over {args.naive_rounds} "
          f"rounds) -> ours is {naive * args.rounds / ours:.0f}x faster")
    print(f"check: true strengths inside 95% CI for {int(((low <= centred) & (centred <= high)).sum())}/"
          f"{args.models} models; max |ours - naive one-round fit| = {np.abs(strengths - naive_fit).max():.3f} "
          "(a resample, so small but non-zero)")


if __name__ == "__main__":
    main()
