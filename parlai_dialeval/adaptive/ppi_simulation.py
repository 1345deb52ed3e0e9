"""Simulated LLM judges of known quality on real human votes, to measure what PPI++ buys and whether
its intervals hold (benchmarks/bench_ppi.py; a small version in tests/test_ppi_simulation.py).

The population is one ChatEval A/B comparison (../shared/data/chateval/amt_ab_2018): its prompts,
each with its real worker votes (A = 1, B = 0, tie = 1/2; automatic ties left out). The estimand is
model A's vote share with ties as half, over all of the comparison's votes. A study draws prompts with
replacement: ``n`` for people (all their votes, so the three votes of a prompt stay together) and a
separate ``pool`` for the judge alone.

Judges, per prompt, from the majority of its votes (mean above 1/2: A; below: B; exactly 1/2: none):
``agreement`` q gives the majority with probability q and the other side otherwise, and a coin flip
where there is no majority, so q = 0.5 is a judge unrelated to people; ``position`` answers A (the
first-shown response) on 70% of prompts whatever they hold and is an 80% judge on the rest. A judge's
answers are drawn once per repetition: a judge answers a prompt the same way each time it is drawn.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive.ppi import ppi_mean

JUDGES = {"useless (50%)": 0.5, "65%": 0.65, "80%": 0.8, "90%": 0.9, "position-biased": "position"}
POSITION_SHARE = 0.7  # share of prompts on which the position-biased judge answers "A" regardless


@dataclass
class Comparison:
    name: str
    votes: list[np.ndarray]  # per prompt, its vote scores

    @property
    def target(self) -> float:
        return float(np.concatenate(self.votes).mean())


def comparisons_from(frame: pd.DataFrame) -> list[Comparison]:
    """Per study (ChatEval folder) its prompts' vote scores in model_a's orientation."""
    frame = frame[~frame["automatic"].eq(True)]
    score = frame["choice"].map({"a": 1.0, "b": 0.0, "tie": 0.5})
    out = []
    for study, part in frame.assign(score=score).groupby("study", sort=True):
        votes = [g.to_numpy(float) for _, g in part.groupby("item_id", sort=True)["score"]]
        out.append(Comparison(str(study).rsplit("/", 1)[-1], votes))
    return out


def judge_labels(comparison: Comparison, judge, rng: np.random.Generator) -> np.ndarray:
    """One simulated judge's answer (1 = A, 0 = B) per prompt of the comparison."""
    means = np.array([v.mean() for v in comparison.votes])
    majority = np.where(means > 0.5, 1.0, np.where(means < 0.5, 0.0, np.nan))
    coin = (rng.random(len(means)) < 0.5).astype(float)
    quality = 0.8 if judge == "position" else float(judge)
    agree = rng.random(len(means)) < quality
    labels = np.where(np.isnan(majority), coin, np.where(agree, majority, 1 - majority))
    if judge == "position":
        labels = np.where(rng.random(len(means)) < POSITION_SHARE, 1.0, labels)
    return labels


def study(comparison: Comparison, labels: np.ndarray, n: int, pool: int, rng: np.random.Generator,
          alpha: float = 0.05):
    """One study: PPI++ (clustered by prompt) on ``n`` prompts judged by people and ``pool`` prompts
    judged by the judge alone, all drawn with replacement."""
    people = rng.integers(0, len(comparison.votes), n)
    judged = rng.integers(0, len(comparison.votes), pool)
    votes = [comparison.votes[i] for i in people]
    y = np.concatenate(votes)
    f = np.repeat(labels[people], [len(v) for v in votes])
    clusters = np.repeat(np.arange(n), [len(v) for v in votes])
    return ppi_mean(y, f, labels[judged], clusters, np.arange(pool), alpha=alpha)


def coverage(comparisons: list[Comparison], judge, repetitions: int, share: float, pool_factor: float,
             seed: int, alpha: float = 0.05) -> dict:
    """Share of repetitions whose PPI interval (and human-only interval) holds the target; each
    repetition takes the next comparison in turn and ``share`` of its prompts for people."""
    rng = np.random.default_rng(seed)
    hits, human_hits, weights = [], [], []
    for r in range(repetitions):
        comparison = comparisons[r % len(comparisons)]
        items = len(comparison.votes)
        result = study(comparison, judge_labels(comparison, judge, rng), max(2, round(share * items)),
                       round(pool_factor * items), rng, alpha)
        low, high = result.interval()
        h_low, h_high = result.interval(human=True)
        hits.append(low[0] <= comparison.target <= high[0])
        human_hits.append(h_low[0] <= comparison.target <= h_high[0])
        weights.append(result.lam)
    return {"coverage": float(np.mean(hits)), "human_coverage": float(np.mean(human_hits)),
            "median_weight": float(np.median(weights)), "repetitions": repetitions}


def human_share_needed(comparison: Comparison, judge, shares: np.ndarray, repetitions: int, pool_factor: float,
                       rng: np.random.Generator) -> float:
    """Prompts judged by people, as a share of a full human-only study (all the comparison's prompts),
    at which the mean PPI interval is as narrow as the full study's mean human-only interval (linear
    interpolation on the grid ``shares``; nan if the grid's last share is not enough)."""
    items = len(comparison.votes)
    pool = round(pool_factor * items)
    full = []
    for _ in range(repetitions):
        result = study(comparison, judge_labels(comparison, judge, rng), items, pool, rng)
        full.append(np.diff(result.interval(human=True), axis=0)[0, 0])
    reference = float(np.mean(full))
    widths = []
    for share in shares:
        runs = [study(comparison, judge_labels(comparison, judge, rng), max(2, round(share * items)), pool, rng)
                for _ in range(repetitions)]
        widths.append(np.mean([np.diff(r.interval(), axis=0)[0, 0] for r in runs]))
    widths = np.array(widths)
    below = np.nonzero(widths <= reference)[0]
    if not len(below):
        return float("nan")
    i = below[0]
    if i == 0:
        return float(shares[0])
    # Widths fall with the share: interpolate between the last grid point above and the first below.
    return float(np.interp(reference, [widths[i], widths[i - 1]], [shares[i], shares[i - 1]]))


def best_possible_share(comparison: Comparison) -> float:
    """The share a judge that knew every prompt's true preference could reach with an endless pool:
    what is left of the prompt-mean vote's variance once the between-prompt part is known,
    (1 - ICC) / (m ICC + 1 - ICC) for m votes per prompt (ICC within prompts, one-way ANOVA)."""
    from parlai_dialeval.analysis.cluster_robust import icc_oneway

    votes = np.concatenate(comparison.votes)
    prompts = np.repeat(np.arange(len(comparison.votes)), [len(v) for v in comparison.votes])
    icc = max(icc_oneway(votes, prompts), 0.0)
    m = len(votes) / len(comparison.votes)
    return float((1 - icc) / (m * icc + 1 - icc))
