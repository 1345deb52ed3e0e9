"""Benchmark: analyze_pairwise on 1,000,000 votes, plain and with style control and fragility (issue 43).

Target: with style control and fragility, under 60 s on the 2-core machine. Measured in the same run:
  plain      scripts.analyze_pairwise.analyze with its defaults (1,000 bootstrap rounds): the baseline;
  style      the same with style control on;
  fragility  the same with the fragility analysis on;
  both       both on.
Style control and fragility are options of PairwiseConfig added on other branches (issue 43); this script
looks for them by name (STYLE, FRAGILITY) and reports "not available on this branch" where they are
missing, so it can be rerun unchanged after merging.
Votes: Arena-like, every battle its own item, --models models with Bradley-Terry strengths, 10% ties,
1,000 workers; responses drawn from a pool of texts with varied length and markdown, so style covariates
have something to measure.
Usage: .venv/bin/python benchmarks/bench_million_votes.py [--votes 1000000] [--models 100]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

# PairwiseConfig fields that switch each feature on, as the other branches may name them.
STYLE = ("style_control", "style")
FRAGILITY = ("fragility",)


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


def switch(config_class, names) -> str | None:
    """The first of ``names`` that is a field of ``config_class``, or None."""
    fields = {f.name for f in dataclasses.fields(config_class)}
    return next((name for name in names if name in fields), None)


def run(frame: pd.DataFrame, **options) -> float:
    """Wall seconds of one analysis; prints its process CPU seconds too (the machine is shared)."""
    from parlai_dialeval.scripts.analyze_pairwise import PairwiseConfig, analyze

    start, cpu = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as out:
        analyze(frame, Path(out), PairwiseConfig(**options), log=lambda *_: None)
    print(f"  ({time.process_time() - cpu:.1f} CPU-s)", flush=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    args = parser.parse_args()
    from parlai_dialeval.scripts.analyze_pairwise import PairwiseConfig

    print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}; {args.votes:,} votes, {args.models} models", flush=True)
    frame = votes(args.votes, args.models)
    base = run(frame)
    print(f"plain analysis (baseline): {base:.1f} s", flush=True)
    style, fragility = switch(PairwiseConfig, STYLE), switch(PairwiseConfig, FRAGILITY)
    wanted = {"style control": [(style, STYLE)], "fragility": [(fragility, FRAGILITY)],
              "both": [(style, STYLE), (fragility, FRAGILITY)]}
    for label, options in wanted.items():
        missing = [" or ".join(names) for found, names in options if found is None]
        if missing:
            print(f"{label}: not available on this branch (PairwiseConfig has no field {'; no '.join(missing)})")
            continue
        options = [found for found, _ in options]
        seconds = run(frame, **{name: True for name in options})
        print(f"{label}: {seconds:.1f} s, {seconds / base:.2f}x the plain analysis (target < 60 s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
