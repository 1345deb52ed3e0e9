"""Judgments of unfinished conversations: kept in the data (nothing is dropped on export), left out of
the statistics. A worker who timed out, returned the task or whose bot failed left partial turns; counting
them would let a half conversation weigh in a success or win rate (issue: SM-Eval and PW-Turn). Nor does a
finished conversation of an assignment the worker never submitted (``submission``: returned, disconnected,
timed out or still working) count: the worker did not hand that work in (issue 40)."""
from __future__ import annotations

import pandas as pd

FINISHED = ("complete", "onboarding")  # onboarding conversations are finished known-answer dialogues


def finished(status: pd.Series) -> pd.Series:
    """True where a conversation is finished: no status recorded (complete by default) or a finished one."""
    return status.isna() | status.isin(FINISHED)


def unfinished_ids(conversations: pd.DataFrame) -> set:
    if conversations.empty or "status" not in conversations.columns:
        return set()
    return set(conversations.loc[~finished(conversations["status"]), "id"])


def submitted(submission: pd.Series) -> pd.Series:
    """True where the assignment was submitted: no submission recorded (imported data) or ``submitted``."""
    return submission.isna() | submission.eq("submitted")


def unsubmitted_ids(conversations: pd.DataFrame) -> set:
    """Conversations of assignments the worker did not submit, finished or not."""
    if conversations.empty or "submission" not in conversations.columns:
        return set()
    return set(conversations.loc[~submitted(conversations["submission"]), "id"])


def finished_only(ratings: pd.DataFrame, comparisons: pd.DataFrame,
                  conversations: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """Ratings and comparisons that judge finished conversations of submitted assignments, and how many of
    each were left out and why. A comparison judges a conversation through ``item_id`` (PW-Turn) or
    ``conversation_a/_b`` (PW-Dialog)."""
    left_out = {}
    drop_ratings = pd.Series(False, index=ratings.index)
    drop_comparisons = pd.Series(False, index=comparisons.index)
    # the assignment first: a rated chat of a HIT never submitted is counted under that reason
    for why, bad in (("of assignments not submitted (returned, disconnected, timed out or in progress)",
                      unsubmitted_ids(conversations)),
                     ("of conversations not complete (status)", unfinished_ids(conversations))):
        if not bad:
            continue
        rows = ratings["conversation_id"].isin(bad) & ~drop_ratings if len(ratings) else drop_ratings
        columns = [c for c in ("item_id", "conversation_a", "conversation_b") if c in comparisons]
        items = pd.Series(False, index=comparisons.index)
        for column in columns:
            items |= comparisons[column].isin(bad)
        items &= ~drop_comparisons
        if rows.any():
            left_out[f"ratings {why}"] = int(rows.sum())
        if items.any():
            left_out[f"comparisons {why}"] = int(items.sum())
        drop_ratings, drop_comparisons = drop_ratings | rows, drop_comparisons | items
    if not drop_ratings.any() and not drop_comparisons.any():
        return ratings, comparisons, left_out
    return ratings[~drop_ratings], comparisons[~drop_comparisons], left_out
