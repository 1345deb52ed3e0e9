"""Certify which model beats which from pairwise comparisons, valid at any look during collection.

Each pair's evidence is one outcome per cluster of votes (parlai_dialeval.analysis.cluster_robust: the votes
on one item, i.e. an A/B prompt, an ACUTE conversation pair or a PW-Turn conversation): the mean of its
votes, a vote scoring 1 when the first model of the pair wins, 0 when it loses and 1/2 for a tie. Votes
on one item are not independent (the same prompt is easy or hard for a model for every worker), so
betting on each vote inflates the false-claim rate (9.9% instead of 5% at ICC 0.3, three votes per
prompt); cluster means of independently drawn items are independent, which is what the betting
e-process needs. Clusters enter in the collection order of their first vote (submit times where the data
has them, else file order; the table says which). Automatic ties (identical responses, no worker judged
them) are not evidence, as in the rankings and in adaptive collection. Per question and unit of
judgement, as the pairwise analysis.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive.sequential import certification_threshold, confidence_sequence, e_value
from parlai_dialeval.analysis.cluster_robust import UNIT_OF_INDEPENDENCE, clustering_summary
from parlai_dialeval.analysis.collection_order import cluster_outcomes, vote_clusters
from parlai_dialeval.analysis.pairwise import split_onboarding

PAIR_COLUMNS = ["question", "unit", "model_a", "model_b", "outcomes", "votes", "order", "unit_of_independence",
                "icc", "design_effect"]


def pair_outcomes(comparisons: pd.DataFrame) -> pd.DataFrame:
    """One row per question, unit and model pair (``model_a`` first seen as A): ``outcomes``, the
    array of cluster outcomes for ``model_a`` in collection order, ``votes``, the ``order`` used, the
    unit of independence, and the ICC and design effect of the votes within clusters."""
    votes, order = vote_clusters(comparisons)
    clusters = cluster_outcomes(votes)
    pair_key = ["question", "unit", "first", "second"]
    pair_votes = dict(list(votes.groupby(pair_key, sort=False)))
    rows = []
    for key, group in clusters.groupby(pair_key, sort=False):
        votes_of_pair = pair_votes[key]
        summary = clustering_summary(votes_of_pair["outcome"].to_numpy(), votes_of_pair["cluster"].to_numpy())
        rows.append({"question": key[0], "unit": key[1], "model_a": key[2], "model_b": key[3],
                     "outcomes": group["outcome"].to_numpy(float), "votes": int(group["votes"].sum()),
                     "order": order, "unit_of_independence": UNIT_OF_INDEPENDENCE[key[1]],
                     "icc": summary["icc"], "design_effect": summary["design_effect"]})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def certify(comparisons: pd.DataFrame, alpha: float = 0.05, intervals: bool = True) -> pd.DataFrame:
    """Per question, unit and model pair: units of evidence (clusters), votes, the unit of
    independence with the ICC and design effect, the order the clusters were bet in, the mean cluster
    outcome for ``model_a``, the largest e-value for each direction, the simultaneous confidence
    sequence of ``model_a``'s win rate, and the verdict (``model_a`` or ``model_b`` certified better, or
    ``unsettled``). ``intervals=False`` leaves the confidence sequence out (nan), as calibration runs do."""
    comparisons, _ = split_onboarding(comparisons)
    pairs = pair_outcomes(comparisons)
    rows = []
    for (question, unit), section in pairs.groupby(["question", "unit"], sort=False):
        models = set(section["model_a"]) | set(section["model_b"])
        threshold = certification_threshold(len(models), alpha)
        for pair in section.itertuples(index=False):
            y = pair.outcomes
            e_a, e_b = e_value(y), e_value(1 - y)
            # the verdict never depends on the interval; calibration runs skip it (its grid is the slow part)
            low, high = confidence_sequence(y, 2 / threshold) if intervals else (np.nan, np.nan)
            winner = pair.model_a if e_a >= threshold else pair.model_b if e_b >= threshold else None
            rows.append({"question": question, "unit": unit, "model_a": pair.model_a, "model_b": pair.model_b,
                         "units": len(y), "votes": pair.votes, "unit_of_independence": pair.unit_of_independence,
                         "icc": pair.icc, "design_effect": pair.design_effect, "order": pair.order,
                         "win_rate_a": float(np.mean(y)),
                         "e_a_beats_b": e_a, "e_b_beats_a": e_b, "threshold": threshold,
                         "cs_low": low, "cs_high": high, "certified_winner": winner,
                         "verdict": verdict(pair.model_a, pair.model_b, winner, e_a, e_b, threshold)})
    return pd.DataFrame(rows)


def verdict(model_a: str, model_b: str, winner: str | None, e_a: float, e_b: float, threshold: float) -> str:
    if winner is not None:
        loser = model_b if winner == model_a else model_a
        return f"settled: {winner} beats {loser} (e = {max(e_a, e_b):.3g} >= {threshold:,.0f})"
    return (f"needs more data: evidence {max(e_a, e_b):.3g} of the {threshold:,.0f} needed "
            f"(in favour of {model_a if e_a >= e_b else model_b})")


def certified_order(pairs: pd.DataFrame) -> list[list[str]]:
    """Models ranked by their certified head-to-head wins, best first, as groups whose members no
    certified claim separates in this ranking; a strict total order is certified only where each
    consecutive pair of groups is separated by a direct certified claim."""
    wins: dict[str, set[str]] = {}
    for row in pairs.itertuples(index=False):
        wins.setdefault(row.model_a, set())
        wins.setdefault(row.model_b, set())
        if isinstance(row.certified_winner, str):
            loser = row.model_b if row.certified_winner == row.model_a else row.model_a
            wins[row.certified_winner].add(loser)
    groups: list[list[str]] = []
    for model in sorted(wins, key=lambda m: (-len(wins[m]), m)):
        if groups and not any(model in wins[other] for other in groups[-1]):
            groups[-1].append(model)
        else:
            groups.append([model])
    return groups
