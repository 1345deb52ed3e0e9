"""Many small Bradley-Terry fits (fragility's refits, style control's categories, the edge sweep): the cost of
keeping BLAS on one thread per fit, against the fit itself.

    .venv/bin/python benchmarks/bench_small_fits.py [--fits 500] [--votes 200] [--models 4]

Measured in the same run, on the same votes: ``bradley_terry.fit`` (BLAS limited through a controller that found
the libraries once, bt_likelihood.one_blas_thread), the same fit wrapped in a fresh ``threadpool_limits`` as fit
did before (threadpoolctl scans every loaded shared object each time). Result in benchmarks/README.md
("The test suite").
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from parlai_dialeval.analysis import bradley_terry as bt  # noqa: E402


def votes(n: int, m: int, seed: int) -> bt.Votes:
    rng = np.random.default_rng(seed)
    first = rng.integers(0, m, n)
    second = (first + rng.integers(1, m, n)) % m
    strength = np.linspace(1, -1, m)
    outcome = (rng.random(n) < 1 / (1 + np.exp(strength[second] - strength[first]))).astype(float)
    return bt.Votes(models=[f"m{i}" for i in range(m)], first=first, second=second, outcome=outcome,
                    clusters=np.arange(n), weights=None)


def timed(run, studies) -> float:
    start = time.process_time()
    for study in studies:
        run(study)
    return time.process_time() - start


def fresh_limits(study):
    with threadpool_limits(1, user_api="blas"):
        return bt.fit(study)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=500)
    parser.add_argument("--votes", type=int, default=200)
    parser.add_argument("--models", type=int, default=4)
    args = parser.parse_args()
    studies = [votes(args.votes, args.models, seed) for seed in range(args.fits)]
    bt.fit(studies[0])  # imports and the one scan
    ours = timed(bt.fit, studies)
    before = timed(fresh_limits, studies)  # the nested limit is a no-op: what remains is the scan per fit
    print(f"{args.fits} fits of {args.votes} votes among {args.models} models (CPU seconds)")
    print(f"ours:            {ours:6.2f} s ({1000 * ours / args.fits:.2f} ms a fit)")
    print(f"fresh limits:    {before:6.2f} s ({1000 * before / args.fits:.2f} ms a fit) -> ours is "
          f"{before / ours:.1f}x faster")


if __name__ == "__main__":
    main()
