"""Planning with an LLM judge: how many items people must judge when a judge of a given agreement
answers a larger pool, for the precision of a human-only study (``dialeval plan --judge-agreement``, or
``--pilot P --judge F.jsonl``: the judge's agreement and correlation measured on a pilot).

Model (the same as benchmarks/bench_ppi.py's judges): each item has a true share of people preferring
model A, Beta-distributed with mean ``win_rate`` and within-item correlation ``icc``; ``votes_per_item``
people vote on it; the judge gives the majority of those votes with probability ``agreement`` and the
other side otherwise (a coin where the votes tie). With rho the correlation of an item's mean vote and
the judge's answer, PPI++ at its best weight has variance (1 - rho^2 N / (N + G)) times the human-only
one for G human-judged items and N judge-only items (Angelopoulos, Duchi and Zrnic 2023, section 2 with
the items as units), so the items needed solve G = G_human (1 - rho^2 N / (N + G)).
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def judge_correlation(agreement: float, win_rate: float, votes_per_item: int, icc: float, items: int = 200_000,
                      seed: int = 0) -> float:
    """rho: correlation of an item's mean vote with the judge's answer, by simulation of ``items`` items."""
    rng = np.random.default_rng(seed)
    if icc > 0:
        a, b = win_rate * (1 - icc) / icc, (1 - win_rate) * (1 - icc) / icc
        share = rng.beta(a, b, items)
    else:
        share = np.full(items, win_rate)
    mean_vote = (rng.random((items, votes_per_item)) < share[:, None]).mean(axis=1)
    majority = np.where(mean_vote > 0.5, 1.0, np.where(mean_vote < 0.5, 0.0, (rng.random(items) < 0.5) * 1.0))
    judge = np.where(rng.random(items) < agreement, majority, 1 - majority)
    if mean_vote.std() == 0 or judge.std() == 0:
        return 0.0
    return float(np.corrcoef(mean_vote, judge)[0, 1])


def human_share(rho: float, pool_factor: float, human_items: float) -> float:
    """Items people must judge with the judge, as a share of a human-only study of ``human_items`` items,
    when the judge alone answers ``pool_factor`` times ``human_items`` more items."""
    pool = pool_factor * human_items
    items = float(human_items)
    for _ in range(200):  # the map is a contraction: G -> G_h (1 - rho^2 N / (N + G))
        items = human_items * (1 - rho ** 2 * pool / (pool + items)) if pool > 0 else human_items
    return items / human_items


def pilot_judge(pilot: pd.DataFrame, judge: pd.DataFrame) -> dict:
    """The judge measured on a pilot's comparisons: ``items`` (people's items it answered), ``agreement``
    (share of items with a majority of votes where its answer, flips as 1/2, is on the majority's side;
    1/2 counts half), ``correlation`` (rho: of an item's mean vote with the judge's answer, each centred
    on its model pair's mean, pooled over pairs) and ``pilot_gain`` (the PPI++ win rates on the pilot
    itself: human-only variance over PPI variance, the median over pairs; 1 where the judge answered
    nothing beyond the people's items). Raises ValueError when fewer than 3 items match."""
    from parlai_dialeval.adaptive.ppi_certification import pair_clusters
    from parlai_dialeval.adaptive.ppi_pairwise import asked_as_the_judge, win_rates

    key = ["question", "unit", "model_a", "model_b", "cluster"]
    answers = pair_clusters(judge).groupby(key, sort=False)["outcome"].mean().rename("judge")
    items = pair_clusters(asked_as_the_judge(pilot, judge)).groupby(key, sort=False)["outcome"].mean().to_frame().join(answers, how="inner")
    if len(items) < 3:
        raise ValueError(f"the judge answered {len(items)} of the pilot's items: at least 3 are needed to measure it")
    decided = items[items["outcome"] != 0.5]
    side = np.sign(decided["outcome"] - 0.5) * np.sign(decided["judge"] - 0.5)
    agreement = float(np.mean(np.where(side == 0, 0.5, side > 0))) if len(decided) else float("nan")
    centred = items - items.groupby(level=key[:4], sort=False).transform("mean")
    spread = centred.std()
    rho = float(centred["outcome"].corr(centred["judge"])) if (spread > 0).all() else 0.0
    rates = win_rates(pilot, judge)
    gain = (rates["effective_human_judgments"] / rates["human_judgments"]).median()
    return {"items": len(items), "agreement": agreement, "correlation": rho,
            "pilot_gain": float(gain) if np.isfinite(gain) else 1.0}
