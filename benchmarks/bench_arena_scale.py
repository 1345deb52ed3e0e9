"""Benchmark: analyze_pairwise at Arena scale, peak resident memory and time.

(a) ``--models 200`` (default): one question, every model in it, with and without an LLM judge (--judge),
    against a baseline of ``--baseline-models`` (default 20) measured in the same run. Target: under 4 GB
    resident for 200 models (issue 43; 800 models were killed at 21.9 GB before).
Each configuration runs ``scripts.analyze_pairwise.analyze`` (the command's whole analysis, report and
figures included) in a fresh process, whose peak RSS (getrusage ru_maxrss) is reported.
Votes: Bradley-Terry truth (strengths N(0, 1)), pairs drawn at random, 10% ties, ``--votes-per-model``
votes per model on average (every battle its own item, as Arena's are), 30 workers.
Usage: .venv/bin/python benchmarks/bench_arena_scale.py [--models 200] [--baseline-models 20]
       [--votes-per-model 200] [--rounds 1000]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd


def arena_votes(n_models: int, n_votes: int, seed: int = 0, ties: float = 0.1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strengths = rng.normal(0, 1, n_models)
    a = rng.integers(0, n_models, n_votes)
    b = (a + rng.integers(1, n_models, n_votes)) % n_models
    p = 1 / (1 + np.exp(strengths[b] - strengths[a]))
    draw = rng.random(n_votes)
    choice = np.where(draw < ties, "tie", np.where(rng.random(n_votes) < p, "a", "b"))
    names = np.array([f"model-{i:04d}" for i in range(n_models)], dtype=object)
    return pd.DataFrame({"item_id": [f"q{i}" for i in range(n_votes)], "worker_id": rng.integers(0, 30, n_votes).astype(str),
                         "model_a": names[a], "model_b": names[b], "choice": choice,
                         "question": "Which answer is better?"})


def judge_of(votes: pd.DataFrame, seed: int = 1, agree: float = 0.8, extra: float = 1.0) -> pd.DataFrame:
    """An LLM judge that agrees with the person 80% of the time, on every item people judged and on as
    many again that only the judge saw."""
    rng = np.random.default_rng(seed)
    judged = votes.copy()
    flip = rng.random(len(judged)) > agree
    judged.loc[flip, "choice"] = rng.choice(["a", "b", "tie"], int(flip.sum()))
    only = votes.sample(frac=extra, random_state=seed, replace=True).reset_index(drop=True)
    only["item_id"] = [f"j{i}" for i in range(len(only))]
    return pd.concat([judged, only], ignore_index=True).assign(worker_id="judge:bench")


def one(n_models: int, votes_per_model: int, rounds: int, with_judge: bool) -> dict:
    from parlai_dialeval.scripts.analyze_pairwise import PairwiseConfig, analyze

    votes = arena_votes(n_models, n_models * votes_per_model // 2)
    judge = judge_of(votes) if with_judge else None
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        analyze(votes, __import__("pathlib").Path(out), PairwiseConfig(bootstrap_rounds=rounds, judge="bench"),
                log=lambda *_: None, judge=judge)
    seconds = time.perf_counter() - start
    return {"models": n_models, "votes": len(votes), "judge": with_judge, "seconds": round(seconds, 1),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2)}


def measure(n_models: int, votes_per_model: int, rounds: int, with_judge: bool) -> dict:
    """``one`` in a fresh process, so each peak is its own."""
    run = subprocess.run([sys.executable, __file__, "--one", json.dumps([n_models, votes_per_model, rounds, with_judge])],
                         capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"})
    if run.returncode:
        return {"models": n_models, "judge": with_judge, "failed": run.stderr.strip().splitlines()[-1:]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--baseline-models", type=int, default=20)
    parser.add_argument("--votes-per-model", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*json.loads(args.one))))
        return
    print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}")
    for with_judge in (False, True):
        base = measure(args.baseline_models, args.votes_per_model, args.rounds, with_judge)
        big = measure(args.models, args.votes_per_model, args.rounds, with_judge)
        print(json.dumps(base))
        print(json.dumps(big))
        if "failed" not in base and "failed" not in big:
            print(f"  judge={with_judge}: {args.models} models use {big['peak_rss_gb'] / base['peak_rss_gb']:.1f}x the "
                  f"memory of {args.baseline_models} ({big['peak_rss_gb']} GB; target < 4 GB) and "
                  f"{big['seconds'] / base['seconds']:.1f}x the time")


if __name__ == "__main__":
    main()
