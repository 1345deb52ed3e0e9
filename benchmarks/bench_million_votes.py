"""Benchmark: analyze_pairwise on 1,000,000 votes, plain and with style control and fragility (issue 43).

Target: with style control and fragility, under 60 s on the 2-core machine. Measured in the same run:
  plain      scripts.analyze_pairwise.analyze with its defaults (1,000 bootstrap rounds), style control
             off (PairwiseConfig(style_control="off")) and the fragility section left out: the baseline;
  style      the same with style control on (style_control="auto", the command's default);
  fragility  the same with the fragility section (results/sections/fragility.py, which the command always
             runs: no option turns it off, so the baseline leaves it out of the result's sections);
  both       both on: the command as it runs by default.
Each run prints its wall and process CPU seconds (the machine is shared: compare CPU seconds); an untimed
analysis of 2,000 votes first does the imports, which would otherwise be charged to the baseline.
Votes: Arena-like, every battle its own item, --models models with Bradley-Terry strengths, 10% ties,
1,000 workers; responses drawn from a pool of texts with varied length and markdown, so style covariates
have something to measure.
Usage: .venv/bin/python benchmarks/bench_million_votes.py [--votes 1000000] [--models 100]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd


def votes(n_votes: int, n_models: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strengths = rng.normal(0, 1, n_models)
    a = rng.integers(0, n_models, n_votes)
    b = (a + rng.integers(1, n_models, n_votes)) % n_models
    p = 1 / (1 + np.exp(strengths[b] - strengths[a]))
    choice = np.where(rng.random(n_votes) < 0.1, "tie", np.where(rng.random(n_votes) < p, "a", "b"))
    pool = np.array([("# Answer\n" if k % 5 == 0 else "") + ("- point\n" * (k % 4)) + "word " * (5 + k % 60)
                     + ("?" if k % 7 == 0 else "") for k in range(500)], dtype=object)
    names = np.array([f"model-{i:03d}" for i in range(n_models)], dtype=object)
    return pd.DataFrame({"item_id": np.char.add("q", np.arange(n_votes).astype(str)).astype(object),
                         "worker_id": np.char.add("w", rng.integers(0, 1000, n_votes).astype(str)).astype(object),
                         "model_a": names[a], "model_b": names[b], "choice": choice,
                         "question": "Which answer is better?", "context": None,
                         "response_a": pool[rng.integers(0, 500, n_votes)],
                         "response_b": pool[rng.integers(0, 500, n_votes)]})


def run(frame: pd.DataFrame, style: bool, fragility: bool) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one analysis."""
    from parlai_dialeval.results import pairwise_result
    from parlai_dialeval.scripts.analyze_pairwise import PairwiseConfig, analyze

    config = PairwiseConfig(style_control="auto" if style else "off")
    sections = [s for s in pairwise_result.SECTIONS if fragility or s.name != "fragility"]
    start, cpu = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as out, mock.patch.object(pairwise_result, "SECTIONS", sections):
        analyze(frame, Path(out), config, log=lambda *_: None)
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    args = parser.parse_args()
    print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}; {args.votes:,} votes, {args.models} models", flush=True)
    run(votes(2_000, 10), style=True, fragility=True)  # untimed: imports (seconds) not charged to the baseline
    frame = votes(args.votes, args.models)
    base_wall, base_cpu = run(frame, style=False, fragility=False)
    print(f"plain (baseline): {base_wall:.1f} s wall, {base_cpu:.1f} CPU-s", flush=True)
    for label, style, fragility in (("style control", True, False), ("fragility", False, True), ("both", True, True)):
        wall, cpu = run(frame, style, fragility)
        print(f"{label}: {wall:.1f} s wall, {cpu:.1f} CPU-s, {cpu / base_cpu:.2f}x the plain analysis's CPU "
              f"(target: under 60 s)", flush=True)
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
