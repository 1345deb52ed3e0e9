"""``dialeval certify --judge``: which model beats which, with the judge's answers carrying part of the
load, valid at every look (the e-process of parlai_dialeval.adaptive.ppi_sequential).

Per question, unit and model pair: the judge's pool is every item it answered (one cluster per item, the
rule of analysis/cluster_robust.py, its answers averaged: a flip across the two orders is 1/2); people's
clusters on those items enter in collection order, each its mean vote with the judge's answer on it.
Validity needs people's items drawn at random, with replacement, from the judge's pool: uniformly (a fixed
design dealt from a pool much larger than it is close to that), or with the probabilities an adaptive
launch with the judge recorded on each judgment (data/schema.py's DRAW_FIELDS): each such judgment is one
draw, weighted by them, as the launch itself bet. People's clusters on items the judge did not answer are
counted, not used. The threshold is certify's, K(K-1)/alpha
for K models. Pure function: DataFrames in, a DataFrame out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive.sequential import certification_threshold
from parlai_dialeval.analysis.collection_order import cluster_outcomes, vote_clusters
from parlai_dialeval.adaptive.ppi_pairwise import asked_as_the_judge
from parlai_dialeval.adaptive.ppi_sequential import e_values

COLUMNS = ["question", "unit", "model_a", "model_b", "units", "human_unjudged", "judge_pool", "judge_mean",
           "human_mean", "judge_weight", "e_a_beats_b", "e_b_beats_a", "threshold", "certified_winner", "verdict"]


def _sorted_pair(frame: pd.DataFrame) -> pd.DataFrame:
    """The pair named in sorted order (``model_a`` < ``model_b``) with the outcome for ``model_a``."""
    flip = frame["first"] > frame["second"]
    return frame.assign(model_a=frame["first"].where(~flip, frame["second"]),
                        model_b=frame["second"].where(~flip, frame["first"]),
                        outcome=frame["outcome"].where(~flip, 1 - frame["outcome"]))


def pair_clusters(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Cluster outcomes in collection order, the pair named in sorted order with the outcome for ``model_a``."""
    return _sorted_pair(cluster_outcomes(vote_clusters(comparisons)[0]))


def people_draws(human: pd.DataFrame) -> pd.DataFrame:
    """People's evidence in collection order: a cluster per item of a fixed design (``scaled`` 1), one draw
    per judgment that an adaptive launch with the judge drew (``scaled`` = N p, ``floor`` its pool's min N p)."""
    drawn = human["draw_probability"].notna() if "draw_probability" in human else pd.Series(False, index=human.index)
    parts = [pair_clusters(human[~drawn]).assign(scaled=1.0, floor=np.nan, pool_size=np.nan)] if (~drawn).any() else []
    if drawn.any():
        votes = _sorted_pair(vote_clusters(human[drawn])[0])
        parts.append(votes.assign(scaled=votes["draw_pool_size"] * votes["draw_probability"],
                                  floor=votes["draw_floor"], pool_size=votes["draw_pool_size"]))
    return pd.concat(parts, ignore_index=True).sort_values("position", kind="stable") if parts else pd.DataFrame(
        columns=["question", "unit", "model_a", "model_b", "cluster", "outcome", "scaled", "floor", "pool_size"])


def _draw_problem(part: pd.DataFrame, pool: int) -> str | None:
    """Why a pair's recorded draws cannot be weighted (None: they can, or there are none)."""
    drawn = part["floor"].notna()
    if not drawn.any():
        return None
    if not drawn.all():
        return "mixes judgments an adaptive launch drew with others: certify them apart"
    sizes, floors = set(part["pool_size"]), set(part["floor"])
    if sizes != {pool}:
        return (f"the launch drew from a pool of {', '.join(f'{s:.0f}' for s in sorted(sizes))} items, the judge file "
                f"answers {pool}: certify with the judge file the launch used")
    if len(floors) > 1 or not 0 < min(floors) <= 1 or (part["scaled"] < min(floors) - 1e-9).any():
        return "recorded draw probabilities are inconsistent (floor, or a draw below it)"
    return None


def certify_with_judge(human: pd.DataFrame, judge: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """One row per question, unit and pair: people's clusters (or recorded draws) used (``units``) and left
    out (``human_unjudged``), the judge's pool size and mean answer, people's mean, the last PPI++ weight,
    the largest e-value of each direction, the threshold and the verdict."""
    key = ["question", "unit", "model_a", "model_b", "cluster"]
    people, answers = people_draws(asked_as_the_judge(human, judge)), pair_clusters(judge)
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
            problem = _draw_problem(part, len(f_pool)) if len(judged) else None
            if not len(judged) or problem:
                rows.append({**row, "verdict": f"no evidence: {problem}" if problem else
                             "no person judged an item the judge answered: no evidence"})
                continue
            floor = float(judged["floor"].iloc[0]) if judged["floor"].notna().any() else 1.0
            process = e_values(judged["outcome"].to_numpy(float), judged["judge"].to_numpy(float),
                               float(f_pool.mean()), judged["scaled"].to_numpy(float), floor)
            e_a, e_b = process.best_above, process.best_below
            winner = a if e_a >= threshold else b if e_b >= threshold else None
            loser = None if winner is None else (b if winner == a else a)
            verdict = (f"settled with the judge: {winner} beats {loser} (e = {max(e_a, e_b):.3g} >= {threshold:,.0f})"
                       if winner else f"needs more data: evidence {max(e_a, e_b):.3g} of the {threshold:,.0f} needed")
            rows.append({**row, "judge_weight": process.lam, "e_a_beats_b": e_a, "e_b_beats_a": e_b,
                         "certified_winner": winner, "verdict": verdict})
    return pd.DataFrame(rows, columns=COLUMNS)
