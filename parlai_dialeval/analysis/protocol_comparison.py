"""Protocols side by side on the same models: what significance costs with each, the ranking each gives,
how far those rankings agree, and how well each protocol's workers agree with one another.

Pure functions over the time-to-significance table of ``analysis.significance_time`` (one row per
technique, metric and model pair) and canonical comparisons.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from parlai_dialeval.analysis import agreement
from parlai_dialeval.analysis.pairwise import with_sections

PROTOCOL = ["technique", "metric"]
# Units of judgement of pairwise comparisons (analysis.pairwise) -> Smith et al.'s technique names.
UNIT_TECHNIQUE = {"turn": "pw_turn", "dialog": "pw_dialog", "response": "ab"}


def costs(times: pd.DataFrame, hourly_pay: float, fee: float) -> pd.DataFrame:
    """Worker-hours and money to significance per protocol and model pair (blank where unknown)."""
    return times.assign(money_needed=times["hours_needed"] * hourly_pay * (1 + fee))


def rankings(times: pd.DataFrame) -> pd.DataFrame:
    """Per protocol, each model's score and its rank (1 = best; equal scores share the better rank).
    Pairwise protocols: the model's mean win rate over its pairs (Borda score); single-model ones (rows
    with ``mean_a``/``mean_b``): its mean score, a point estimate, where the resampled effective win rate
    would split two equal models by bootstrap noise."""
    single = times["mean_a"].notna()
    sides = pd.concat([
        times[[*PROTOCOL, "model_a"]].rename(columns={"model_a": "model"}).assign(
            score=times["mean_a"].where(single, times["win_rate_a"])),
        times[[*PROTOCOL, "model_b"]].rename(columns={"model_b": "model"}).assign(
            score=times["mean_b"].where(single, 1 - times["win_rate_a"]))])
    table = sides.groupby([*PROTOCOL, "model"], sort=False)["score"].mean().reset_index()
    # scores equal but for float rounding (sums of the same win rates in another order) are ties
    table["rank"] = (table["score"].round(12).groupby([table[c] for c in PROTOCOL])
                     .rank(ascending=False, method="min").astype(int))
    return table.sort_values([*PROTOCOL, "rank", "model"]).reset_index(drop=True)


def ranking_agreement(ranked: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau (tau-b, ties allowed) between the rankings of every two protocols, over the models both
    ranked; blank where either ranks them all equal (no order to agree with)."""
    # ranks, not scores: the tau then agrees with the rankings table, ties included
    scores = {key: part.set_index("model")["rank"] for key, part in ranked.groupby(PROTOCOL, sort=False)}
    rows = []
    for (first, x), (second, y) in itertools.combinations(scores.items(), 2):
        common = x.index.intersection(y.index)
        ordered = len(common) >= 2 and x[common].nunique() > 1 and y[common].nunique() > 1
        tau = kendalltau(x[common], y[common]).statistic if ordered else np.nan
        rows.append({"protocol_1": " / ".join(first), "protocol_2": " / ".join(second), "models": len(common),
                     "kendall_tau": tau})
    return pd.DataFrame(rows, columns=["protocol_1", "protocol_2", "models", "kendall_tau"])


def cheapest(priced: pd.DataFrame) -> pd.DataFrame:
    """Per model pair and metric, the protocol that reached significance in the fewest worker-hours."""
    reached = priced[priced["reached"] & priced["hours_needed"].notna()]
    if reached.empty:
        return pd.DataFrame(columns=["model_a", "model_b", "metric", "technique", "hours_needed", "money_needed"])
    best = reached.loc[reached.groupby(["model_a", "model_b", "metric"], sort=False)["hours_needed"].idxmin()]
    return best[["model_a", "model_b", "metric", "technique", "hours_needed", "money_needed"]].reset_index(drop=True)


def worker_agreement(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Per pairwise technique and question: items, votes per item and Fleiss' kappa among workers."""
    if comparisons.empty:
        return pd.DataFrame(columns=["technique", "question", "items", "votes_per_item", "fleiss_kappa"])
    rows = []
    for (question, unit), part in with_sections(comparisons).groupby(["question", "unit"], sort=False):
        result = agreement.fleiss_kappa(part)
        rows.append({"technique": UNIT_TECHNIQUE[unit], "question": question,
                     "items": sum(result["vote_counts"].values()),
                     "votes_per_item": ", ".join(f"{n}: {k} items" for n, k in result["vote_counts"].items()),
                     "fleiss_kappa": result["fleiss_kappa"]})
    return pd.DataFrame(rows)
