"""The paper's worker check on finished live-chat HITs: the analysis's own quality-control step.

A worker passes when they rated the genuine models significantly higher than the QC bot (one-sided
Mann-Whitney U over the positive statements, Ji et al. 2022 Sec. 3.2): ``live_chat.check_workers``,
the first half of ``dialeval analyze_live_chat``, applied to the work of workers who finished their HIT.
"""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.analysis import live_chat
from parlai_dialeval.data import from_records


def finished_records(records: list[dict]) -> list[dict]:
    """The study plus the conversations and ratings of HITs whose worker finished (submitted) them."""
    finished = {r["id"] for r in records if r["type"] == "conversation" and r.get("submission") == "submitted"}
    return [dict(r) for r in records if r["type"] == "study" or (r["type"] == "conversation" and r["id"] in finished)
            or (r["type"] == "rating" and r["conversation_id"] in finished)]


def worker_checks(records: list[dict], alpha: float | None = None) -> pd.DataFrame:
    """worker_id, n_hits, n_ratings, p_value, passed, note for every worker who finished a HIT; a worker
    passes when p < ``alpha`` (default the analysis's, 0.05)."""
    data = from_records(finished_records(records), source="live_chat_da export")
    if data.ratings.empty:
        return pd.DataFrame(columns=["worker_id", "n_hits", "n_ratings", "p_value", "passed", "note"])
    config = live_chat.LiveChatConfig() if alpha is None else live_chat.LiveChatConfig(qc_alpha=alpha)
    return live_chat.check_workers(data, config).workers
