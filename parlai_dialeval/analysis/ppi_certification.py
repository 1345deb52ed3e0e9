"""``dialeval certify --judge``: which model beats which, with the judge's answers carrying part of the
load, valid at every look (the e-process of parlai_dialeval.analysis.ppi_sequential).

Per question, unit and model pair: the judge's pool is every item it answered (one cluster per item, the
rule of analysis/clustering.py, its answers averaged: a flip across the two orders is 1/2); people's
clusters on those items enter in collection order, each its mean vote with the judge's answer on it.
Validity needs people's items drawn uniformly at random, with replacement, from the judge's pool; a fixed
design dealt from a pool much larger than it is close to that (exports do not record draw probabilities,
so actively drawn items are certified by the adaptive launch itself, which knows them). People's
clusters on items the judge did not answer are counted, not used. The threshold is certify's, K(K-1)/alpha
for K models. Pure function: DataFrames in, a DataFrame out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive.sequential import certification_threshold
from parlai_dialeval.analysis.clustering import cluster_outcomes, vote_clusters
from parlai_dialeval.analysis.ppi_sequential import e_values

COLUMNS = ["question", "unit", "model_a", "model_b", "units", "human_unjudged", "judge_pool", "judge_mean",
           "human_mean", "judge_weight", "e_a_beats_b", "e_b_beats_a", "threshold", "certified_winner", "verdict"]


def pair_clusters(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Cluster outcomes in collection order, the pair named in sorted order (``model_a`` < ``model_b``)
    with the outcome for ``model_a``."""
    out = cluster_outcomes(vote_clusters(comparisons)[0])
    flip = out["first"] > out["second"]
    return out.assign(model_a=out["first"].where(~flip, out["second"]),
                      model_b=out["second"].where(~flip, out["first"]),
                      outcome=out["outcome"].where(~flip, 1 - out["outcome"]))


def certify_with_judge(human: pd.DataFrame, judge: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """One row per question, unit and pair: people's clusters used (``units``) and left out
    (``human_unjudged``), the judge's pool size and mean answer, people's mean, the last PPI++ weight, the
    largest e-value of each direction, the threshold and the verdict."""
    key = ["question", "unit", "model_a", "model_b", "cluster"]
    people, answers = pair_clusters(human), pair_clusters(judge)
    pool = answers.groupby(key, sort=False)["outcome"].mean().rename("judge")
    people = people.join(pool, on=key)
    pools = {k: part.to_numpy(float) for k, part in pool.groupby(level=key[:4], sort=False)}
    rows = []
    for (question, unit), section in people.groupby(["question", "unit"], sort=False):
        models = set(section["model_a"]) | set(section["model_b"])
        threshold = certification_threshold(len(models), alpha)
        for (a, b), part in section.groupby(["model_a", "model_b"], sort=False):
            judged = part[part["judge"].notna()]
            f_pool = pools.get((question, unit, a, b), np.zeros(0))
            row = {"question": question, "unit": unit, "model_a": a, "model_b": b, "units": len(judged),
                   "human_unjudged": int(part["judge"].isna().sum()), "judge_pool": len(f_pool),
                   "judge_mean": float(f_pool.mean()) if len(f_pool) else np.nan,
                   "human_mean": float(judged["outcome"].mean()) if len(judged) else np.nan,
                   "threshold": threshold}
            if not len(judged):
                rows.append({**row, "verdict": "no person judged an item the judge answered: no evidence"})
                continue
            process = e_values(judged["outcome"].to_numpy(float), judged["judge"].to_numpy(float), float(f_pool.mean()))
            e_a, e_b = process.best_above, process.best_below
            winner = a if e_a >= threshold else b if e_b >= threshold else None
            loser = None if winner is None else (b if winner == a else a)
            verdict = (f"settled with the judge: {winner} beats {loser} (e = {max(e_a, e_b):.3g} >= {threshold:,.0f})"
                       if winner else f"needs more data: evidence {max(e_a, e_b):.3g} of the {threshold:,.0f} needed")
            rows.append({**row, "judge_weight": process.lam, "e_a_beats_b": e_a, "e_b_beats_a": e_b,
                         "certified_winner": winner, "verdict": verdict})
    return pd.DataFrame(rows, columns=COLUMNS)
