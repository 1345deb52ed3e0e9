"""Training data from what people judged: preference pairs in TRL's conversational preference format
(``prompt``, ``chosen``, ``rejected`` as lists of ``{role, content}`` messages,
https://huggingface.co/docs/trl/dataset_formats) from A/B, PW-Turn and ACUTE comparisons, and rated
dialogues (``messages`` with a ``score``) from live-chat and SM-Eval ratings, for reward modelling.

A comparison holding responses (A/B, PW-Turn) gives prompt = its context, chosen / rejected = one
assistant message each. One comparing whole conversations (ACUTE, PW-Dialog) gives prompt = the two
conversations' common opening (often empty: TRL's implicit-prompt case) and chosen / rejected = the rest.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from parlai_dialeval.data.schema import VOIDED
from parlai_dialeval.data.validate import is_missing
from parlai_dialeval.metrics.style_features import FEATURES, text_features

TIES = ("drop", "keep")
VOTES = ("every", "majority")
# Style control (analysis/style_control.py) adjusts the models' strengths, not single votes; for training
# data the rule is per pair: "matched" keeps only pairs whose chosen and rejected replies have the same
# style (every feature's (a - b) / (a + b + 1), style control's normalisation, within STYLE_TOLERANCE), so
# a reward model cannot learn that longer or more formatted replies win.
STYLES = ("raw", "matched")
# 0.1: lengths within about 20% of each other; a markdown, question or emoji count equal (1 against 0 is 0.5)
# or nearly so among many (5 against 6 is 0.08)
STYLE_TOLERANCE = 0.1


@dataclass(frozen=True)
class PairOptions:
    ties: str = "drop"        # drop, or keep with tie: true (chosen = A, rejected = B)
    votes: str = "every"      # every vote a pair, or one per item and model pair by majority
    qc_passing_only: bool = True
    style: str = "raw"


def role_messages(turns) -> list[dict]:
    """Turns (``{speaker, text}`` dicts, or plain strings ending with the user's) as role/content messages:
    the worker (``human``) is the user, every model the assistant."""
    if isinstance(turns, str):
        return [{"role": "user", "content": turns}]
    out, count = [], len(turns)
    for position, turn in enumerate(turns):
        if isinstance(turn, dict):
            role = "user" if turn.get("speaker") == "human" else "assistant"
            out.append({"role": role, "content": str(turn.get("text", ""))})
        else:  # plain history: the last line is the user's, the lines alternate before it
            out.append({"role": "user" if (count - 1 - position) % 2 == 0 else "assistant", "content": str(turn)})
    return out


def _common_prefix(a: list[dict], b: list[dict]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _messages(row, conversations: dict) -> tuple[list, list, list] | None:
    """(prompt, A's messages, B's messages) of a comparison, or None where it holds neither responses
    nor known conversations."""
    if not is_missing(row.get("response_a")) and not is_missing(row.get("response_b")):
        context = row.get("context")
        prompt = [] if context is None or (not isinstance(context, list) and is_missing(context)) else \
            role_messages(context)
        return prompt, [{"role": "assistant", "content": row["response_a"]}], \
            [{"role": "assistant", "content": row["response_b"]}]
    a, b = conversations.get(row.get("conversation_a")), conversations.get(row.get("conversation_b"))
    if a is None or b is None:
        return None
    a, b = role_messages(a), role_messages(b)
    shared = _common_prefix(a, b)
    return a[:shared], a[shared:], b[shared:]


def _majority(votes: pd.DataFrame) -> pd.DataFrame:
    """One row per item, turn, question and model pair: the choice most of its workers made (a tie where
    A and B drew or ties led), with how many votes it summarises."""
    keys = ["item_id", "turn_index", "question", "model_a", "model_b"]
    rows = []
    for _, group in votes.groupby(keys, dropna=False, sort=False):
        counts = Counter(group["choice"])
        choice = "a" if counts["a"] > max(counts["b"], counts["tie"]) else \
            "b" if counts["b"] > max(counts["a"], counts["tie"]) else "tie"
        first = group.iloc[0].to_dict()
        rows.append({**first, "choice": choice, "worker_id": None, "votes": len(group)})
    return pd.DataFrame(rows, columns=list(votes.columns) + ["votes"])


def preference_pairs(comparisons: pd.DataFrame, conversations: pd.DataFrame, options: PairOptions,
                     flagged_workers: set[str] = frozenset()) -> tuple[list[dict], Counter]:
    """TRL preference rows from the comparisons (onboarding items and automatic ties never count) and a
    count of what was left out, by reason."""
    left_out: Counter = Counter()
    votes = comparisons
    for name, mask in (("onboarding items", votes["onboarding"].eq(True)),
                       ("automatic ties (identical responses, no worker)", votes["automatic"].eq(True)),
                       ("votes of workers failing quality control",
                        votes["worker_id"].isin(flagged_workers) if options.qc_passing_only else None),
                       *((why, votes[column].eq(True)) for column, why in VOIDED.items() if column in votes)):
        if mask is not None and mask.any():
            left_out[name] += int(mask.sum())
            votes = votes[~mask.reindex(votes.index, fill_value=False)]
    votes = votes.assign(votes=1) if options.votes == "every" else _majority(votes)
    by_id = dict(zip(conversations["id"], conversations["turns"])) if len(conversations) else {}
    rows = []
    columns = [c for c in ("item_id", "choice", "model_a", "model_b", "context", "response_a", "response_b",
                           "conversation_a", "conversation_b", "question", "study", "worker_id", "votes")
               if c in votes.columns]
    arrays = [votes[c].to_numpy(dtype=object) for c in columns]  # to_dict("records") costs seconds a million rows
    for values in zip(*arrays):
        row = dict(zip(columns, values))
        tie = row["choice"] == "tie"
        if tie and options.ties == "drop":
            left_out["ties (--pairs-ties keep keeps them)"] += 1
            continue
        found = _messages(row, by_id)
        if found is None:
            left_out["comparisons without responses or known conversations"] += 1
            continue
        prompt, a, b = found
        b_won = row["choice"] == "b"
        rows.append({"prompt": prompt, "chosen": b if b_won else a, "rejected": a if b_won else b,
                     "tie": tie, "model_chosen": row["model_b"] if b_won else row["model_a"],
                     "model_rejected": row["model_a"] if b_won else row["model_b"],
                     "item_id": row["item_id"], "question": _text(row.get("question")),
                     "study": _text(row.get("study")), "worker_id": _text(row.get("worker_id")),
                     "votes": int(row["votes"])})
    if options.style == "matched" and rows:
        matched = style_matched([r["chosen"] for r in rows], [r["rejected"] for r in rows])
        if not matched.all():
            left_out["pairs whose replies differ in style (--pairs-style matched)"] += int((~matched).sum())
            rows = [row for row, keep in zip(rows, matched) if keep]
    return rows, left_out


def style_matched(chosen: list[list[dict]], rejected: list[list[dict]]) -> np.ndarray:
    """Per pair, whether its two sides' assistant messages have the same style: every style feature
    (metrics/style_features.py) within STYLE_TOLERANCE as (a - b) / (a + b + 1)."""
    def features(sides):
        texts = ["\n".join(m["content"] for m in side if m["role"] == "assistant") for side in sides]
        return text_features(pd.Series(texts, dtype=object))[list(FEATURES)].to_numpy(float)

    a, b = features(chosen), features(rejected)
    return (np.abs(a - b) / (a + b + 1) <= STYLE_TOLERANCE).all(axis=1)


def _text(value) -> str | None:
    return None if value is None or is_missing(value) else str(value)


def rated_dialogues(ratings: pd.DataFrame, conversations: pd.DataFrame,
                    flagged_workers: set[str] = frozenset(), qc_passing_only: bool = True) -> tuple[list[dict], Counter]:
    """One row per rating of a conversation (live chat, SM-Eval): its messages (up to and including the
    rated turn for per-turn ratings), the rated model, criterion, scale and score."""
    left_out: Counter = Counter()
    by_id = dict(zip(conversations["id"], conversations["turns"])) if len(conversations) else {}
    rows = []
    for row in ratings.to_dict("records"):
        if qc_passing_only and row["worker_id"] in flagged_workers:
            left_out["ratings of workers failing quality control"] += 1
            continue
        turns = by_id.get(row["conversation_id"])
        if turns is None:
            left_out["ratings of items that are not conversations in the data"] += 1
            continue
        turn = row.get("turn_index")
        if turn is not None and not is_missing(turn):
            turns = turns[:int(turn) + 1]
        rows.append({"messages": role_messages(turns), "model": row["model"], "criterion": row["criterion"],
                     "scale": row["scale"], "scale_min": _number(row.get("scale_min")),
                     "scale_max": _number(row.get("scale_max")), "score": float(row["value"]),
                     "turn_index": None if turn is None or is_missing(turn) else int(turn),
                     "conversation_id": row["conversation_id"], "worker_id": row["worker_id"],
                     "study": _text(row.get("study"))})
    return rows, left_out


def _number(value) -> float | None:
    return None if value is None or is_missing(value) else float(value)
