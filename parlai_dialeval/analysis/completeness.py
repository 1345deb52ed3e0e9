"""Judgments of unfinished conversations: kept in the data (nothing is dropped on export), left out of
the statistics. A worker who timed out, returned the task or whose bot failed left partial turns; counting
them would let a half conversation weigh in a success or win rate (issue: SM-Eval and PW-Turn)."""
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


def finished_only(ratings: pd.DataFrame, comparisons: pd.DataFrame,
                  conversations: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """Ratings and comparisons that judge finished conversations, and how many of each were left out.
    A comparison judges a conversation through ``item_id`` (PW-Turn) or ``conversation_a/_b`` (PW-Dialog)."""
    bad = unfinished_ids(conversations)
    left_out = {}
    if not bad:
        return ratings, comparisons, left_out
    drop_ratings = ratings["conversation_id"].isin(bad)
    drop_comparisons = pd.Series(False, index=comparisons.index)
    for column in ("item_id", "conversation_a", "conversation_b"):
        if column in comparisons:
            drop_comparisons |= comparisons[column].isin(bad)
    if drop_ratings.any():
        left_out["ratings of conversations not complete (status)"] = int(drop_ratings.sum())
    if drop_comparisons.any():
        left_out["comparisons of conversations not complete (status)"] = int(drop_comparisons.sum())
    return ratings[~drop_ratings], comparisons[~drop_comparisons], left_out
