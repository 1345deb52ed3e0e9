"""Provisional results: which models' places in a ranking are not yet to be trusted, and why in words.

Two reasons, after LMArena's practice of marking scores provisional until enough fresh votes arrive:
- too few fresh votes: fewer worker votes than ``min_votes`` (automatic ties are no votes), counting only
  votes submitted at or after ``fresh_since`` where given;
- one of several variants: a model of a family with two or more members in the ranking that were tested
  against the same opponents (at least half of each member's opponents outside the family shared with
  another member). Showing the best of several tries inflates its score (Singh et al., "The Leaderboard
  Illusion", arXiv 2504.20879), so every variant is marked, not only the best.
Families come from the user, never from names alone by default: a variants mapping (model -> family) or a
regular expression whose first group is the family (e.g. ``(.+)-exp-\\d+``); names cannot tell a private
variant from a released size (vicuna-7b, vicuna-13b).
Pure functions: DataFrames in, a DataFrame out.
"""
from __future__ import annotations

import re
from collections import defaultdict

import pandas as pd

# 100: below it a model's overall win rate's 95% interval is wider than +-0.1 (1.96 x 0.5 / sqrt(100) = 0.098).
DEFAULT_MIN_VOTES = 100
COLUMNS = ["model", "votes", "fresh_votes", "family", "variants", "provisional", "reason"]


def families(models, variants: dict[str, str] | None = None, pattern: str | None = None) -> dict[str, str]:
    """model -> family for the models the mapping names or the pattern's first group matches."""
    out = {m: variants[m] for m in models if variants and m in variants}
    if pattern:
        rule = re.compile(pattern)
        for model in models:
            match = rule.fullmatch(model)
            if model not in out and match and match.groups() and match.group(1):
                out[model] = match.group(1)
    return out


def provisional_models(votes: dict[str, int], opponents: dict[str, set], min_votes: int = DEFAULT_MIN_VOTES,
                       family: dict[str, str] | None = None, fresh: dict[str, int] | None = None) -> pd.DataFrame:
    """One row per model (COLUMNS): its votes, fresh votes (= votes unless ``fresh`` is given), family, the
    other variants tested against the same opponents, whether it is provisional and the reason in words."""
    family = family or {}
    fresh = votes if fresh is None else fresh
    members = defaultdict(list)
    for model in votes:
        if model in family:
            members[family[model]].append(model)
    rows = []
    for model in sorted(votes):
        reasons = []
        if fresh.get(model, 0) < min_votes:
            count = fresh.get(model, 0)
            reasons.append(f"{count} fresh vote{'s' * (count != 1)}, fewer than {min_votes}")
        peers = _same_opponents(model, members.get(family.get(model), []), opponents, family)
        if peers:
            reasons.append(f"one of {len(peers) + 1} variants of '{family[model]}' tested against the same opponents "
                           f"({', '.join(sorted(peers))}): the best of several tries scores too high")
        rows.append({"model": model, "votes": int(votes[model]), "fresh_votes": int(fresh.get(model, 0)),
                     "family": family.get(model, ""), "variants": len(peers) + 1 if peers else 1,
                     "provisional": bool(reasons), "reason": "; ".join(reasons)})
    return pd.DataFrame(rows, columns=COLUMNS)


def _same_opponents(model: str, family_members: list[str], opponents: dict[str, set], family: dict) -> list[str]:
    """The other members of the model's family that share at least half of its outside opponents (and it
    half of theirs)."""
    def outside(m):
        return {o for o in opponents.get(m, set()) if family.get(o) != family.get(model)}

    mine = outside(model)
    peers = []
    for other in family_members:
        theirs = outside(other)
        shared = len(mine & theirs)
        if other != model and mine and theirs and shared * 2 >= len(mine) and shared * 2 >= len(theirs):
            peers.append(other)
    return peers


def from_comparisons(comparisons: pd.DataFrame, min_votes: int = DEFAULT_MIN_VOTES,
                     variants: dict[str, str] | None = None, pattern: str | None = None,
                     fresh_since=None) -> pd.DataFrame:
    """``provisional_models`` over comparisons (one section's): worker votes per model (automatic ties
    left out), opponents from the pairs voted on, fresh votes those submitted at or after ``fresh_since``
    (a timestamp; votes without a submit time are not fresh then)."""
    votes = comparisons[~comparisons["automatic"].eq(True)] if "automatic" in comparisons else comparisons
    a, b = votes["model_a"].astype(str), votes["model_b"].astype(str)
    counts = pd.concat([a, b]).value_counts()
    pairs = pd.DataFrame({"a": a, "b": b}).drop_duplicates()
    opponents = defaultdict(set)
    for first, second in zip(pairs["a"], pairs["b"]):
        opponents[first].add(second)
        opponents[second].add(first)
    fresh = None
    if fresh_since is not None:
        from parlai_dialeval.analysis.collection_order import submit_times

        new = (submit_times(votes) >= pd.to_datetime(fresh_since, utc=True)).to_numpy()
        fresh = pd.concat([a[new], b[new]]).value_counts().to_dict()
    models = list(counts.index)
    return provisional_models(counts.to_dict(), opponents, min_votes, families(models, variants, pattern), fresh)
