"""Benchmark: the anytime-valid PPI e-process (parlai_dialeval/adaptive/ppi_sequential.py; issue 30) against
today's human-only certification, on synthetic clustered votes and on the real ChatEval votes.

Judges answer both orders of every item of a pool; f is their mean answer for model A (a flip across the
orders: 1/2). The "80%" judge flips on 30% of items and elsewhere gives the item's preferred side with
probability 0.93 (agreement 0.8 counting a flip as half); the "useless" judge does the same with sides
drawn at random; the "position" judge answers A on 70% of items whatever they hold; the "80% graded"
judge gives its probability of A (its answer distribution) instead of sides: a noisy copy of the
item's people share, on the preferred side on 80% of items (graded_answers). Synthetic items:
each has its own probability h that people prefer A (beta, mean the pair's win rate, intraclass
correlation ICC), 3 votes per draw; the judge's "preferred side" is h > 1/2. ChatEval: the 20 AMT 2018
A/B comparisons, each prompt with its real 3 votes (drawn with all of them), the preferred side the
majority of those votes (as benchmarks/bench_ppi.py).

  validity  pools whose human win rate is exactly 1/2 (items come in mirrored pairs h, 1 - h), 400 draws:
            share of --repetitions runs in which either direction's wealth ever reached 2/alpha
            (a false claim at alpha = 0.05), per ICC, judge and design (target <= 0.05 + MC error);
  human     votes people gave until the pair settled at the ranking threshold K(K-1)/alpha
            (K = 4 models, synthetic) or 2/alpha (ChatEval, one pair): medians for today's bets on
            people's cluster outcomes (parlai_dialeval.adaptive.sequential: grid and aGRAPA, the
            baseline) and the e-process as shipped (half on the judge's bets, half on today's), on
            uniform draws and on active ones (in proportion to the judge's uncertainty, floor 0.9),
            these also uncentred (centred=False: the outcome before 2026-11-25, on the same draws).
            Active draws are coupled with the uniform ones: a draw takes the uniform design's item
            with probability q = min N p (p is q uniform plus 1 - q a tilt), else an item from the tilt,
            so about 90% of active draws are today's draws, votes included. "today, active draws":
            today's bets on the active draws' outcomes unweighted, a gauge of the noise the other 10%
            of draws add, for judges whose uncertainty is independent of the items (useless, 80%,
            position: their flips fall on random items, so those draws are distributed as today's).
            "ranking": the sum over the 3 adjacent pairs of a 4-model ranking, each at win rate 0.6
            (what an allocator that spends only on unsettled adjacent pairs needs).
Usage: .venv/bin/python benchmarks/bench_ppi_sequential.py [--repetitions 1000] [--studies 60]
       [--part all|validity|synthetic|chateval] [--judges useless 80% position "80% graded"]
       [--designs uniform active] (validity: which draws; centring leaves uniform draws' Z unchanged)
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from parlai_dialeval.adaptive.sequential import wealth_paths
from parlai_dialeval.adaptive.ppi_sequential import draws_to_settle, e_values, selection_probabilities
from parlai_dialeval.adaptive.ppi_simulation import best_possible_share, comparisons_from
from parlai_dialeval.importers import load
from parlai_dialeval.shared_data import shared_data_dir

VOTES = 3
FLIP_SHARE = 0.3
JUDGES = {"useless": None, "80%": (0.8 - FLIP_SHARE / 2) / (1 - FLIP_SHARE), "position": "position",
          "80% graded": "graded"}
ALPHA = 0.05
RANKING_THRESHOLD = 4 * 3 / ALPHA


def graded_answers(h: np.ndarray, rng: np.random.Generator, agreement: float = 0.8) -> np.ndarray:
    """The "80% graded" judge: its probability of A (an answer distribution, not a side), a noisy copy of
    the item's share h of people preferring A on the logit scale, the noise's sd found by bisection so
    that its side (f > 1/2) is the item's (h > 1/2) on a share ``agreement`` of the items."""
    h = np.clip(h, 0.02, 0.98)
    logit, noise = np.log(h / (1 - h)), rng.standard_normal(len(h))
    low, high = 0.0, 50.0
    for _ in range(40):
        sd = (low + high) / 2
        low, high = (sd, high) if np.mean((logit + sd * noise > 0) == (logit > 0)) > agreement else (low, sd)
    return 1 / (1 + np.exp(-(logit + sd * noise)))


def judge_answers(h: np.ndarray, preferred: np.ndarray, judge, rng: np.random.Generator) -> np.ndarray:
    """The judge's mean answer for A on each item; ``h``: the item's share of people preferring A,
    ``preferred``: its preferred side (1 = A)."""
    n = len(preferred)
    if judge == "graded":
        return graded_answers(h, rng)
    if judge == "position":
        return np.where(rng.random(n) < 0.7, 1.0, preferred)
    side = rng.random(n) < 0.5 if judge is None else np.where(rng.random(n) < judge, preferred, 1 - preferred)
    return np.where(rng.random(n) < FLIP_SHARE, 0.5, side.astype(float))


def synthetic_pool(rng, n: int, win_rate: float, icc: float, mirrored: bool = False) -> np.ndarray:
    c = 1 / icc - 1
    h = rng.beta(win_rate * c, (1 - win_rate) * c, n // 2 if mirrored else n)
    return np.concatenate([h, 1 - h]) if mirrored else h


def draw(rng, means_or_votes, f: np.ndarray, active: bool, count: int, shared=None):
    """(y, f, N p, min N p) of ``count`` draws from the pool; ``means_or_votes``: per item h (synthetic: 3
    votes drawn) or its real votes (ChatEval). ``shared``: the uniform numbers that pick the items, choose
    between the uniform part and the tilt, and make the votes (the same for uniform and active draws:
    active draws coupled with uniform ones, see the module's docstring)."""
    n = len(f)
    p = selection_probabilities(f) if active else np.full(n, 1 / n)
    pick, coin, votes = shared if shared is not None else (rng.random(count), rng.random(count),
                                                           rng.random((count, VOTES)))
    items = np.minimum((pick * n).astype(int), n - 1)  # the uniform design's item
    q = n * p.min()
    if q < 1:  # the tilt's inverse CDF on the draws the coin gives it
        tilt = (p - p.min()) / (1 - q)
        items = np.where(coin < q, items, np.minimum(np.searchsorted(np.cumsum(tilt), pick), n - 1))
    if isinstance(means_or_votes, np.ndarray):
        y = (votes < means_or_votes[items, None]).mean(axis=1)
    else:
        y = np.array([means_or_votes[i].mean() for i in items])
    return y, f[items], n * p[items], float((n * p).min())


def certify_draws(y: np.ndarray, threshold: float) -> int | None:
    """Draws until certify's bets (the grid and aGRAPA) on people's outcomes settle either direction."""
    hit = np.nonzero(np.maximum.accumulate(np.maximum(wealth_paths(y), wealth_paths(y, sign=-1))) >= threshold)[0]
    return int(hit[0]) + 1 if len(hit) else None


def settle(rng, pool, f, threshold, cap) -> dict:
    """Human votes to settle for each method (cap * VOTES where not settled within ``cap`` draws): today's
    certification and the judge's e-process as shipped on uniform draws, and on active draws coupled
    with them, uncentred (the previous outcome) and centred (as shipped)."""
    out = {}
    shared = (rng.random(cap), rng.random(cap), rng.random((cap, VOTES)))
    y, fi, scaled, q = draw(rng, pool, f, False, cap, shared)
    out["today"] = (certify_draws(y, threshold) or cap) * VOTES
    out["judge"] = (draws_to_settle(y, fi, f.mean(), threshold) or cap) * VOTES
    y, fi, scaled, q = draw(rng, pool, f, True, cap, shared)
    out["today, active draws"] = (certify_draws(y, threshold) or cap) * VOTES
    for name, centred in (("active, uncentred", False), ("active", True)):
        out[name] = (draws_to_settle(y, fi, f.mean(), threshold, scaled, q, centred=centred) or cap) * VOTES
    return out


def validity(args) -> None:
    print(f"validity: pools of 1000 items with human win rate exactly 1/2, 400 draws of {VOTES} votes, a claim "
          f"when either direction reaches {2 / ALPHA:.0f}; {args.repetitions} runs each (MC SE at 0.05: "
          f"{np.sqrt(0.05 * 0.95 / args.repetitions):.3f})")
    rng = np.random.default_rng(args.seed)
    for icc in (0.13, 0.5):
        for name in args.judges:
            judge, rates = JUDGES[name], []
            for active in (design == "active" for design in args.designs):
                claims = 0
                for _ in range(args.repetitions):
                    h = synthetic_pool(rng, 1000, 0.5, icc, mirrored=True)
                    f = judge_answers(h, (h > 0.5).astype(float), judge, rng)
                    y, fi, scaled, q = draw(rng, h, f, active, 400)
                    process = e_values(y, fi, f.mean(), scaled, q)
                    claims += max(process.best_above, process.best_below) >= 2 / ALPHA
                rates.append(claims / args.repetitions)
            print(f"  ICC {icc:4.2f} judge {name:9} false-claim rate: "
                  + ", ".join(f"{design} {rate:.3f}" for design, rate in zip(args.designs, rates)))


def report(label: str, runs: list[dict]) -> None:
    medians = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
    base = medians["today"]
    print(f"  {label:34} " + "  ".join(f"{k} {v:6.0f} ({v / base:.2f}x)" for k, v in medians.items()))


def synthetic(args) -> None:
    print(f"synthetic: human votes to settle at {RANKING_THRESHOLD:.0f} (4 models), median of {args.studies} "
          "studies, pool 2000 items per pair; ratio to today's design")
    rng = np.random.default_rng(args.seed + 1)
    for icc in (0.13, 0.3, 0.5, 0.8):
        for name in args.judges:
            runs = []
            for _ in range(args.studies):
                total = {}
                for _pair in range(3):
                    h = synthetic_pool(rng, 2000, 0.6, icc)
                    f = judge_answers(h, (h > 0.5).astype(float), JUDGES[name], rng)
                    for k, v in settle(rng, h, f, RANKING_THRESHOLD, 4000).items():
                        total[k] = total.get(k, 0) + v
                runs.append(total)
            report(f"ranking, ICC {icc:.2f}, judge {name}", runs)


def chateval(args) -> None:
    comparisons = comparisons_from(load([shared_data_dir() / "chateval" / "amt_ab_2018"]).comparisons)
    clear = [c for c in comparisons if abs(np.mean([v.mean() for v in c.votes]) - 0.5) >= 0.05]
    print(f"ChatEval: {len(clear)} of {len(comparisons)} comparisons whose win rate is at least 0.05 from 1/2; "
          f"human votes to settle at {2 / ALPHA:.0f}, median of {args.studies} studies per comparison, then the "
          "median over comparisons of each method's ratio to today's design")
    # from the votes alone (tests/test_ppi_simulation.py checks it by hand): a judge that knew each prompt's
    # true preference leaves people a share (1 - ICC) / (m ICC + 1 - ICC); an 80% judge of sides 1 - 0.36 (1 - that)
    best = np.array([best_possible_share(c) for c in clear])
    print(f"  best share any judge of prompts could give (data alone): median {np.median(best):.2f} "
          f"[{best.min():.2f}-{best.max():.2f}], at most 0.5 on {int((best <= 0.5).sum())} of {len(clear)}; "
          f"an 80% judge of sides: median {np.median(1 - 0.36 * (1 - best)):.2f} [min {(1 - 0.36 * (1 - best)).min():.2f}]")
    rng = np.random.default_rng(args.seed + 2)
    for name in args.judges:
        ratios = {}
        for comparison in clear:
            means = np.array([v.mean() for v in comparison.votes])
            preferred = np.where(means > 0.5, 1.0, np.where(means < 0.5, 0.0, (rng.random(len(means)) < 0.5) * 1.0))
            runs = [settle(rng, comparison.votes, judge_answers(means, preferred, JUDGES[name], rng), 2 / ALPHA, 3000)
                    for _ in range(args.studies)]
            medians = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
            for k, v in medians.items():
                ratios.setdefault(k, []).append(v / medians["today"])
            ratios.setdefault("today votes", []).append(medians["today"])
        print(f"  judge {name:8} today's median votes {np.median(ratios.pop('today votes')):.0f}; " + "  ".join(
            f"{k} {np.median(v):.2f}x [{min(v):.2f}-{max(v):.2f}]" for k, v in ratios.items() if k != "today"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--studies", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=("all", "validity", "synthetic", "chateval"), default="all")
    parser.add_argument("--judges", nargs="+", choices=tuple(JUDGES), default=list(JUDGES))
    parser.add_argument("--designs", nargs="+", choices=("uniform", "active"), default=["uniform", "active"],
                        help="validity: the draws to check")
    args = parser.parse_args()
    start = time.time()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores")
    for part in (validity, synthetic, chateval):
        if args.part in ("all", part.__name__):
            part(args)
    print(f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
