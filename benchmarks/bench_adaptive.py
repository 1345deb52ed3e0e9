"""Benchmark: judgments to a certified ranking, adaptive vs uniform allocation, in one run (issue 16).

Simulated studies (../shared/notes/adaptive_evaluation.md, section 5): K Bradley-Terry models whose
neighbours' win rates are drawn from U(0.55, 0.65); 2 judgments per pair first, then batches of 28 with a
look after each; cap 40,000 judgments.
  ours      greedy-adjacent allocation, stopping when every adjacent pair of the current ranking is
            certified by its direct betting e-process at K(K-1)/alpha (valid under adaptive allocation);
  baseline  uniform allocation, stopping when every adjacent Bradley-Terry contrast crosses the
            normal-mixture boundary at alpha/(pairs) (the note's "uniform + ACS"; valid for uniform only).
Also: K equal models looked at after every batch (family-wise false-claim rate), and K = 16.
Targets (K = 8, 50 instances): median <= 4,500 judgments, <= 0.45x the baseline, no wrong order; null <= 0.05.
Usage: .venv/bin/python benchmarks/bench_adaptive.py [--instances 50] [--null-runs 100] [--k16-instances 10]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from tqdm import tqdm

from parlai_dialeval.adaptive.allocation import GreedyAdjacent, Uniform
from parlai_dialeval.adaptive.simulate import bt_contrast_winner, neighbour_strengths, run_study


def compare(k: int, instances: int, label: str) -> None:
    ours, base = [], []
    for i in tqdm(range(instances), desc=f"K={k}", leave=False):
        strengths = neighbour_strengths(k, np.random.default_rng(i))
        ours.append(run_study(GreedyAdjacent(), strengths, np.random.default_rng(10_000 + i)))
        base.append(run_study(Uniform(), strengths, np.random.default_rng(20_000 + i), decide=bt_contrast_winner))
    n_ours = np.array([r.judgments for r in ours])
    n_base = np.array([r.judgments for r in base])
    print(f"{label}: {instances} instances")
    for name, runs, n in (("ours", ours, n_ours), ("baseline", base, n_base)):
        q1, med, q3 = np.percentile(n, [25, 50, 75])
        print(f"  {name:9} median {med:8,.0f} [IQR {q1:,.0f}-{q3:,.0f}], 90th {np.percentile(n, 90):,.0f}, "
              f"capped {sum(not r.stopped for r in runs)}, wrong claims {sum(r.wrong_claims for r in runs)}")
    print(f"  ratio of medians {np.median(n_ours) / np.median(n_base):.2f}x, "
          f"paired median ratio {np.median(n_ours / n_base):.2f}x")


def null_rate(k: int, runs: int, cap: int = 6000) -> None:
    claims = {"ours": 0, "baseline": 0}
    for i in tqdm(range(runs), desc="null", leave=False):
        equal = np.zeros(k)
        claims["ours"] += run_study(GreedyAdjacent(), equal, np.random.default_rng(30_000 + i), cap=cap).any_claim
        claims["baseline"] += run_study(Uniform(), equal, np.random.default_rng(40_000 + i), cap=cap,
                                        decide=bt_contrast_winner).any_claim
    print(f"null: {k} equal models, {runs} runs of {cap:,} judgments, a look after every batch: runs with any "
          f"claim: ours {claims['ours'] / runs:.3f}, baseline {claims['baseline'] / runs:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=50)
    parser.add_argument("--null-runs", type=int, default=100)
    parser.add_argument("--k16-instances", type=int, default=10)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores")
    start = time.perf_counter()
    compare(8, args.instances, "K = 8")
    null_rate(8, args.null_runs)
    compare(16, args.k16_instances, "K = 16")
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
