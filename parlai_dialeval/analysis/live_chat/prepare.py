"""Live-chat data preparation: the analysed ratings, reversal of negative statements, per-worker z."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from parlai_dialeval.analysis.completeness import finished_only
from parlai_dialeval.analysis.live_chat.settings import Settings


def prepare_ratings(conversations: pd.DataFrame, ratings: pd.DataFrame,
                    settings: Settings) -> tuple[pd.DataFrame, dict]:
    """The analysed ratings, with reversed value ``x``; and counts of what was left out and why."""
    left_out = {}
    frame = ratings
    if "turn_index" in frame.columns and frame["turn_index"].notna().any():
        per_turn = frame["turn_index"].notna()
        left_out["per-turn ratings (not part of this protocol)"] = int(per_turn.sum())
        frame = frame[~per_turn]
    keep = frame["criterion"].isin(settings.criteria)
    if (~keep).any():
        left_out["ratings of criteria not analysed"] = int((~keep).sum())
        frame = frame[keep]
    frame, _, unfinished = finished_only(frame, pd.DataFrame(), conversations)
    left_out.update(unfinished)
    columns = ["worker_id", "conversation_id", "model", "criterion", "value"]
    # .array, not .to_numpy(): Arrow-backed strings stay in Arrow (no Python object per value and back)
    out = pd.DataFrame({c: frame[c].array for c in columns})
    out["assignment_id"] = frame["assignment_id"].array if "assignment_id" in frame else None
    out["value"] = pd.to_numeric(out["value"]).astype(float)
    for column in ("worker_id", "conversation_id", "model", "criterion"):
        out[column] = out[column].astype(str)
    # ratings carry assignment_id optionally; fill it from the conversation, else the conversation id
    missing = out["assignment_id"].isna()
    if missing.any() and len(conversations) and "assignment_id" in conversations.columns:
        lookup = pd.Series(conversations["assignment_id"].to_numpy(), index=conversations["id"].astype(str))
        lookup = lookup[~lookup.index.duplicated()]
        out.loc[missing, "assignment_id"] = out.loc[missing, "conversation_id"].map(lookup).to_numpy()
        missing = out["assignment_id"].isna()
    if missing.any():
        out.loc[missing, "assignment_id"] = out.loc[missing, "conversation_id"]
    out["assignment_id"] = out["assignment_id"].astype(str)
    # names as categories: the steps factorise, group, filter and look them up many times, on integer
    # codes so (0.5-0.9 s less of the benchmark's 3 s analysis, the same tables)
    for column in ("worker_id", "conversation_id", "model", "criterion", "assignment_id"):
        out[column] = out[column].astype("category")
    out["x"] = reverse(out["value"].to_numpy(), out["criterion"].to_numpy(), settings)
    return out, left_out


def is_in(column: pd.Series, values) -> np.ndarray:
    """``column.isin(values)`` as a bool array: one pyarrow call for Arrow-backed strings, where pandas
    makes a pyarrow scalar of each value first (25 ms a call for the benchmark's 17,500 passing workers)."""
    if not isinstance(column.array, pd.arrays.ArrowStringArray):
        return column.isin(values).to_numpy(dtype=bool)
    wanted = pa.array([v for v in values if isinstance(v, str)], type=pa.large_string())
    return pc.is_in(pa.array(column.array), value_set=wanted).to_numpy(zero_copy_only=False)


def reverse(values: np.ndarray, criteria: np.ndarray, settings: Settings) -> np.ndarray:
    """``min + max - x`` for negatively worded statements (``100 - x`` on a 0-100 scale)."""
    x = np.asarray(values, dtype=float).copy()
    if not settings.config.reverse:
        return x
    for name in settings.negative:
        low, high = settings.bounds[name]
        rows = criteria == name
        x[rows] = low + high - x[rows]
    return x


def standardise(x: np.ndarray, groups: np.ndarray, ddof: int = 1, epsilon: float = 1e-6) -> np.ndarray:
    """Per-group z: (x - mean) / (SD(ddof) + epsilon), the authors' formula (scipy's zscore has no epsilon)."""
    grouped = pd.Series(np.asarray(x, dtype=float)).groupby(np.asarray(groups))
    return ((grouped.obj - grouped.transform("mean")) / (grouped.transform("std", ddof=ddof) + epsilon)).to_numpy()


def group_sd(x: np.ndarray, groups: np.ndarray, ddof: int = 1) -> np.ndarray:
    """SD per group code 0..k-1 (a constant group's SD is exactly 0)."""
    return pd.Series(np.asarray(x, dtype=float)).groupby(np.asarray(groups)).std(ddof=ddof).to_numpy()


def add_z(frame: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    codes, _ = pd.factorize(frame["worker_id"])
    if settings.config.standardise:
        frame["z"] = standardise(frame["x"].to_numpy(), codes, settings.config.ddof, settings.config.epsilon)
    else:
        frame["z"] = frame["x"].to_numpy()
    return frame
