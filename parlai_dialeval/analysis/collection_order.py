"""Votes in the order they were collected, and one outcome per cluster of them: what the anytime-valid
certification, the adaptive launch's ledger, the planner and the voter tests read (the votes on one item count
once, in the order their first vote came; analysis.cluster_robust.cluster_ids names the item).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from parlai_dialeval.analysis.cluster_robust import cluster_ids

SUBMIT_TIME = "submit_time"  # a vote's submission time: a column, or a key of its ``meta``


def submit_times(comparisons: pd.DataFrame) -> pd.Series:
    """Each vote's submission time (NaT where the data records none), from a ``submit_time`` column or
    ``meta["submit_time"]`` (the ChatEval importer keeps MTurk's SubmitTime there)."""
    if SUBMIT_TIME in comparisons:
        raw = comparisons[SUBMIT_TIME]
    elif "meta" in comparisons:
        raw = comparisons["meta"].map(lambda m: m.get(SUBMIT_TIME) if isinstance(m, dict) else None)
    else:
        raw = pd.Series(None, index=comparisons.index, dtype=object)
    return pd.to_datetime(raw, errors="coerce", utc=True)


def collection_order(comparisons: pd.DataFrame) -> tuple[np.ndarray, str]:
    """(position of each vote in collection order, which order that is): submission times where every
    vote has one (ties in time keep file order), else the order of the file, which the caller must say."""
    times = submit_times(comparisons)
    if len(times) and times.notna().all():
        return np.argsort(np.argsort(times.to_numpy(), kind="stable"), kind="stable"), "submit time"
    missing = int(times.isna().sum())
    reason = "the data records no submit times" if missing == len(times) else f"{missing} vote(s) have no submit time"
    return np.arange(len(comparisons)), f"file order ({reason})"


def vote_clusters(comparisons: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """(the votes that are evidence, with their cluster, the order used). Automatic ties (identical
    responses, no worker), onboarding and check items are left out; each vote gets ``first``/``second`` (the pair
    as first seen per question and unit), ``outcome`` for ``first`` (1, 1/2, 0), ``cluster``
    (``cluster_ids``) and ``position`` in collection order; rows are sorted by position."""
    from parlai_dialeval.analysis.pairwise import SECTION, oriented, with_sections

    frame = oriented(with_sections(comparisons), by=SECTION)
    keep = ~frame["auto"]
    if "onboarding" in frame:
        keep &= ~frame["onboarding"].eq(True)
    if "check" in frame:  # attention and gold items judge no model (docs/data_model.md, "Checks")
        keep &= frame["check"].isna()
    frame = frame[keep]
    position, order = collection_order(frame)
    frame = frame.assign(position=position).sort_values("position", kind="stable")
    return frame.assign(outcome=(frame["score"] + 1) / 2, cluster=cluster_ids(frame)), order


CLUSTER_KEY = ["question", "unit", "first", "second", "cluster"]


def cluster_outcomes(votes: pd.DataFrame) -> pd.DataFrame:
    """One row per cluster of ``vote_clusters`` votes, in the collection order of its first vote: the
    key, ``outcome`` (the mean of its votes for ``first``), ``votes``, and the ``position`` and
    ``worker`` of its first vote."""
    group = votes.groupby(CLUSTER_KEY, sort=False)
    # one column at a time on the one grouping: half the time of named aggregation (the adaptive launch's ledger
    # reads each batch through here)
    out = pd.DataFrame({"outcome": group["outcome"].mean(), "votes": group["outcome"].size(),
                        "position": group["position"].min(), "worker": group["worker_id"].first()}).reset_index()
    return out.sort_values("position", kind="stable").reset_index(drop=True)


def record_outcomes(records: list[dict]) -> list[tuple[str, str, str, float, str]]:
    """Canonical records -> (worker of its first vote, first model by name, second, outcome for the
    first, the cluster's key) per cluster of ``vote_clusters``, in collection order: the adaptive launch's
    evidence. The key (question, unit and item, as JSON) names the item whichever batch its votes came
    in, so the ledger bets on an item once."""
    rows = [r for r in records if r.get("type") == "comparison"]
    if not rows:
        return []
    votes, _ = vote_clusters(pd.DataFrame(rows))
    out = []
    for row in cluster_outcomes(votes).itertuples(index=False):
        first, second = sorted((row.first, row.second))
        key = json.dumps([str(row.question), row.unit, first, second, row.cluster])
        out.append((row.worker, first, second, row.outcome if row.first == first else 1 - row.outcome, key))
    return out
