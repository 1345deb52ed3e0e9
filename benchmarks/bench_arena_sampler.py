"""Benchmark: the arena's informative pair sampler against uniform draws (issue 55), on simulated battles
(parlai_dialeval/testing/arena_battles.py: models of known strength, a tie rate of 10%, imports no estimator code),
battles drawn --in-flight at a time as concurrent participants are.

  certify  battles until the top model is certified (it beats every other head to head at K(K-1)/alpha, alpha
           0.05, the arena's adaptive=true rule), uniform vs informative (explore 0.2), on the same --studies seeds:
           medians and the paired median ratio informative / uniform. Worlds: K = 5 (strengths 0.8 0.3 0.1 -0.4
           -0.8, the leader's pairs with the second and third shifted by +0.7 and +0.4: not exactly Bradley-Terry)
           and K = 8 (evenly spaced from 1 to -1, Bradley-Terry).
  bias     the K = 5 world under informative draws: the mean error of the Bradley-Terry fit weighted by the inverse
           sampling probability, and unweighted, against what a uniform draw of pairs estimates (the world's
           uniform_estimand), over --bias-studies studies of 600 and of 1,500 battles; z = bias / its standard error.
Usage: .venv/bin/python benchmarks/bench_arena_sampler.py [--studies 40] [--bias-studies 100] [--in-flight 20]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.testing.arena_battles import Truth, simulate

WORLDS = {"K = 5, leader's pairs shifted": Truth([0.8, 0.3, 0.1, -0.4, -0.8], 0.1, {(0, 1): 0.7, (0, 2): 0.4}),
          "K = 8, Bradley-Terry": Truth(list(np.linspace(1, -1, 8)), 0.1)}
CAP = 40000


def certify(studies: int, in_flight: int) -> None:
    print("| world | studies | uniform: median battles [IQR] | informative: median battles [IQR] | paired median ratio |")
    print("|---|---|---|---|---|")
    for name, truth in WORLDS.items():
        found = {kind: [] for kind in ("uniform", "informative")}
        for seed in range(studies):
            for kind in found:
                at = simulate(truth, kind, CAP, seed=10_000 + seed, in_flight=in_flight,
                              stop_when_certified=True)["certified_at"]
                found[kind].append(at or CAP)
        uniform, informative = (np.array(found[k], float) for k in ("uniform", "informative"))

        def summary(values):
            low, mid, high = np.percentile(values, [25, 50, 75])
            return f"{mid:,.0f} [{low:,.0f}-{high:,.0f}]"

        print(f"| {name} | {studies} | {summary(uniform)} | {summary(informative)} | "
              f"{np.median(informative / uniform):.2f} |")


def bias(studies: int, in_flight: int) -> None:
    truth = WORLDS["K = 5, leader's pairs shifted"]
    target = truth.uniform_estimand()
    print(f"\nuniform estimand: {np.round(target, 3).tolist()}")
    print("| battles | fit | bias per model | largest abs(z) |")
    print("|---|---|---|---|")
    for battles in (600, 1500):
        fits = {"weighted": [], "unweighted": []}
        for seed in range(studies):
            study = simulate(truth, "informative", battles, seed=20_000 + seed, in_flight=in_flight)
            for kind in fits:
                weights = study["weight"] if kind == "weighted" else None
                votes = bt.Votes(list(truth.models), study["a"], study["b"], study["outcome"], weights=weights)
                fits[kind].append(bt.bootstrap(votes, rounds=0)[0])
        for kind, values in fits.items():
            values = np.array(values)
            error = values.mean(axis=0) - target
            z = error / (values.std(axis=0, ddof=1) / np.sqrt(len(values)))
            print(f"| {battles:,} | {kind} | {' '.join(f'{e:+.3f}' for e in error)} | {np.abs(z).max():.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("--studies", 40), ("--bias-studies", 100), ("--in-flight", 20)):
        parser.add_argument(name, type=int, default=default)
    args = parser.parse_args()
    print(f"# {platform.node()}: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, python {platform.python_version()}")
    start = time.time()
    certify(args.studies, args.in_flight)
    bias(args.bias_studies, args.in_flight)
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
