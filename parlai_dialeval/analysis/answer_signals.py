"""How each participant's answers were made, from the records the pages keep (docs/data_model.md, "How an answer
was made"), as pure functions: DataFrames in, one row per worker out.

- ``free_texts``: every free text a worker wrote (chat messages but a task's fixed opening and a message's copy
  in a second conversation, justifications, feedback) with its record, or none.
- ``judgment_screens``: every judgment screen (a rating screen's ratings together, a comparison) with its time,
  its record and the values given on it.
- ``worker_answers``: per worker, the signals the evidence table (analysis/evidence.py) combines: pasted text,
  implausible typing, leaving the page while working, answers without the page's record or with records the
  server doubted, judgments faster than reading and clicking allow, constant answers.

The thresholds (``AnswerSettings``) are set so that honest participants at a person's pace stay under each of
them in the simulation of benchmarks/bench_rater_integrity.py (benchmarks/README.md, "Votes worth trusting");
each is stated in the reason a row gives, so a reader can judge it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

TEXT_COLUMNS = ["worker_id", "assignment_id", "source", "text", "record"]
SCREEN_COLUMNS = ["worker_id", "assignment_id", "screen", "answers", "seconds", "record", "rated", "constant"]


@dataclass(frozen=True)
class AnswerSettings:
    pasted_share: float = 0.5  # a text counts as pasted when this share of its characters was pasted or dropped
    min_text_chars: int = 20  # shorter texts ("ok", the fixed "Hi!") say little about how they were made
    key_interval_ms: float = 40.0  # a median gap between typed characters under this (10+ of them): no person's
    min_keys: int = 10
    away_share: float = 0.25  # left the page during at least this share of their answers (at least two)
    seconds_per_answer: float = 1.0  # a judgment screen answered faster than this per answer on it
    fast_share: float = 0.5  # ... on at least this share of the worker's screens (at least min_screens)
    constant_share: float = 0.6  # screens of several ratings given one value each, on this share or more
    min_screens: int = 2
    unrecorded_share: float = 0.5  # answers without the page's record, where the study's pages keep them


def _records(frame: pd.DataFrame, column: str = "provenance") -> list:
    if column not in frame.columns:
        return [None] * len(frame)
    return [v if isinstance(v, dict) else None for v in frame[column].to_numpy(dtype=object)]


def free_texts(conversations: pd.DataFrame, comparisons: pd.DataFrame) -> pd.DataFrame:
    """One row per free text a worker wrote: source ``message`` (a human turn not marked ``meta.fixed``, nor
    ``meta.copy_of``: the arena's prompt, sent to two models, is one text), ``justification`` or ``feedback`` (once
    per assignment), its text and its page record (None: none kept)."""
    rows = []
    if len(conversations) and "worker_id" in conversations.columns:
        records = _records(conversations)
        feedback_seen = set()
        for conv, record in zip(conversations.itertuples(index=False), records):
            worker = getattr(conv, "worker_id", None)
            if not isinstance(worker, str):
                continue
            assignment = getattr(conv, "assignment_id", None)
            for turn in conv.turns if isinstance(conv.turns, list) else []:
                meta = turn.get("meta") or {}
                if turn.get("speaker") == "human" and not meta.get("fixed") and not meta.get("copy_of"):
                    rows.append((worker, assignment, "message", turn.get("text") or "", turn.get("provenance")))
            feedback = getattr(conv, "feedback", None)
            if isinstance(feedback, str) and feedback.strip() and (worker, assignment) not in feedback_seen:
                feedback_seen.add((worker, assignment))
                rows.append((worker, assignment, "feedback", feedback, (record or {}).get("feedback")))
    if len(comparisons) and "justification" in comparisons.columns:
        records = _records(comparisons)
        for worker, assignment, text, record in zip(comparisons["worker_id"], comparisons.get(
                "assignment_id", pd.Series(None, index=comparisons.index)), comparisons["justification"], records):
            if isinstance(text, str) and text.strip():
                rows.append((worker, assignment, "justification", text, (record or {}).get("justification")))
    return pd.DataFrame(rows, columns=TEXT_COLUMNS)


def judgment_screens(ratings: pd.DataFrame, comparisons: pd.DataFrame) -> pd.DataFrame:
    """One row per judgment screen: a rating screen's ratings together (same worker, assignment, item and turn:
    one live-chat rating page, one SM-Turn annotation, one scale-design item), each comparison alone; ``answers``
    on it, ``seconds`` (from the page's record, else the records' ``duration``: summed where each rating holds a
    share of it, else the one they all hold), the first ``record`` kept, ``rated`` (three or more ratings on a scale
    wider than yes/no) and ``constant`` (those all one value). Built column by column: a million ratings take
    no loop per rating."""
    parts = []
    if len(ratings):
        parts.append(_rating_screens(ratings))
    if len(comparisons):  # one screen each
        records = _records(comparisons)
        durations = _numbers(comparisons, "duration")
        claimed = np.array([r.get("seconds", np.nan) if r else np.nan for r in records], dtype=float)
        parts.append(pd.DataFrame({
            "worker_id": comparisons["worker_id"].to_numpy(),
            "assignment_id": comparisons.get("assignment_id", pd.Series(None, index=comparisons.index)).to_numpy(),
            "screen": comparisons["item_id"].astype(str).to_numpy(), "answers": 1,
            "seconds": np.where(np.isfinite(claimed), claimed, durations), "record": records,
            "rated": False, "constant": False}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=SCREEN_COLUMNS)


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)


def _rating_screens(ratings: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in ("worker_id", "assignment_id", "conversation_id", "turn_index") if c in ratings.columns]
    ids = ratings.groupby(keys, dropna=False, sort=False).ngroup().to_numpy()
    table = pd.DataFrame({"id": ids, "value": _numbers(ratings, "value"), "low": _numbers(ratings, "scale_min"),
                          "high": _numbers(ratings, "scale_max"), "duration": _numbers(ratings, "duration")})
    agg = table.groupby("id", sort=True).agg(answers=("value", "size"), vmin=("value", "min"), vmax=("value", "max"),
                                             low=("low", "first"), high=("high", "first"), total=("duration", "sum"),
                                             each=("duration", "first"), kinds=("duration", "nunique"),
                                             timed=("duration", "count"))
    first = np.unique(ids, return_index=True)[1]
    records: list = [None] * len(agg)
    if "provenance" in ratings.columns:
        values = ratings["provenance"].to_numpy(dtype=object)
        for row in np.flatnonzero(ratings["provenance"].notna().to_numpy()):
            if records[ids[row]] is None and isinstance(values[row], dict):
                records[ids[row]] = values[row]
    # a screen's ratings each hold the whole screen's time (live chat) or a share of it (scale designs)
    duration = np.where(agg["timed"] == 0, np.nan, np.where(agg["kinds"] > 1, agg["total"], agg["each"]))
    claimed = np.array([r.get("seconds", np.nan) if r else np.nan for r in records], dtype=float)
    rated = ((agg["answers"] >= 3) & ((agg["high"] - agg["low"]) > 1)).to_numpy()
    return pd.DataFrame({
        "worker_id": ratings["worker_id"].to_numpy()[first],
        "assignment_id": (ratings["assignment_id"].to_numpy()[first] if "assignment_id" in ratings.columns
                          else None),
        "screen": ratings["conversation_id"].astype(str).to_numpy()[first], "answers": agg["answers"].to_numpy(),
        "seconds": np.where(np.isfinite(claimed), claimed, duration), "record": records,
        "rated": rated, "constant": rated & (agg["vmin"] == agg["vmax"]).to_numpy()})


def _text_stats(texts: pd.DataFrame, settings: AnswerSettings) -> pd.DataFrame:
    """Per text: recorded, long, characters seen, pasted characters, pasted, key interval, away, doubted (texts
    without a record take defaults without a loop: a big old export holds millions of them)."""
    n = len(texts)
    length = texts["text"].astype(str).str.len().to_numpy()
    out = {"recorded": np.zeros(n, bool), "long": length >= settings.min_text_chars, "chars": np.zeros(n, int),
           "pasted_chars": np.zeros(n, int), "pasted": np.zeros(n, bool), "key_ms": np.full(n, np.nan),
           "away": np.zeros(n, bool), "doubted": np.zeros(n, bool)}
    records = texts["record"].to_numpy(dtype=object)
    for i in np.flatnonzero(texts["record"].notna().to_numpy()):
        record = records[i]
        if not isinstance(record, dict):
            continue
        pasted = int(record.get("pasted", 0)) + int(record.get("dropped", 0))
        chars = int(record.get("typed", 0)) + pasted
        out["recorded"][i], out["chars"][i], out["pasted_chars"][i] = True, chars, pasted
        out["pasted"][i] = out["long"][i] and chars > 0 and pasted >= settings.pasted_share * max(chars, length[i])
        if int(record.get("keys", 0)) >= settings.min_keys and record.get("key_interval_ms") is not None:
            out["key_ms"][i] = float(record["key_interval_ms"])
        out["away"][i], out["doubted"][i] = int(record.get("away", 0)) > 0, bool(record.get("doubts"))
    return pd.DataFrame(out, index=texts.index)


def worker_answers(texts: pd.DataFrame, screens: pd.DataFrame,
                   settings: AnswerSettings = AnswerSettings()) -> pd.DataFrame:
    """Per worker: counts and shares of how their answers were made, and each signal's reason in words
    (``why_<signal>`` for ``pasted``, ``typing``, ``away``, ``unrecorded``, ``doubted``, ``fast``, ``constant``; empty
    where it did not fire). ``unrecorded`` runs only where some answer of the data has a
    record (the pages of this release keep them; older exports have none)."""
    text_stats = _text_stats(texts, settings).assign(worker_id=texts["worker_id"].to_numpy())
    screen_stats = pd.DataFrame({
        "worker_id": screens["worker_id"].to_numpy(),
        "recorded": [isinstance(r, dict) for r in screens["record"]],
        "away": [int(r.get("away", 0)) > 0 if isinstance(r, dict) else False for r in screens["record"]],
        "doubted": [bool(r.get("doubts")) if isinstance(r, dict) else False for r in screens["record"]],
        "seconds": pd.to_numeric(screens["seconds"], errors="coerce").to_numpy(dtype=float),
        "fast": (pd.to_numeric(screens["seconds"], errors="coerce")
                 < settings.seconds_per_answer * screens["answers"]).to_numpy(),
        # several ratings on a scale wider than yes/no (one value to all of SM-Turn's three boxes is an answer)
        "constant": screens["constant"].astype(bool).to_numpy(),
        "rated": screens["rated"].astype(bool).to_numpy(),
    })
    any_record = bool(text_stats["recorded"].any() or screen_stats["recorded"].any())
    workers = sorted(set(text_stats["worker_id"].astype(str)) | set(screen_stats["worker_id"].astype(str)))
    # each worker's counts in one groupby per table (a pandas reduction per worker took 36 s for 25,000 workers)
    timed = np.isfinite(screen_stats["seconds"].to_numpy())
    by_text = text_stats.assign(unrecorded=~text_stats["recorded"]).groupby(
        text_stats["worker_id"].astype(str)).agg(
        texts=("chars", "size"), chars=("chars", "sum"), pasted_chars=("pasted_chars", "sum"),
        long_texts=("long", "sum"), pasted=("pasted", "sum"), key_ms=("key_ms", "median"), away=("away", "sum"),
        unrecorded=("unrecorded", "sum"), doubted=("doubted", "sum")).reindex(workers)
    by_screen = screen_stats.assign(unrecorded=~screen_stats["recorded"], timed=timed,
                                    fast=screen_stats["fast"] & timed).groupby(
        screen_stats["worker_id"].astype(str)).agg(
        screens=("seconds", "size"), away=("away", "sum"), unrecorded=("unrecorded", "sum"),
        doubted=("doubted", "sum"), timed=("timed", "sum"), fast=("fast", "sum"), median_seconds=("seconds", "median"),
        rated=("rated", "sum"), constant=("constant", "sum")).reindex(workers)
    counts = by_text.drop(columns="key_ms").fillna(0).astype(int).join(
        by_screen.drop(columns="median_seconds").fillna(0).astype(int), suffixes=("", "_screens"))
    counts = counts.assign(key_ms=by_text["key_ms"], median_seconds=by_screen["median_seconds"])
    return pd.DataFrame([_row(worker, row, any_record, settings)
                         for worker, row in zip(workers, counts.to_dict("records"))])


def _row(worker, c: dict, any_record: bool, settings: AnswerSettings) -> dict:
    """One worker's row from their counts ``c`` (worker_answers): shares, and each signal's reason in words."""
    chars, pasted_chars, long_texts, pasted = c["chars"], c["pasted_chars"], c["long_texts"], c["pasted"]
    key_ms = float(c["key_ms"])
    answers = c["texts"] + c["screens"]
    away = c["away"] + c["away_screens"]
    unrecorded = c["unrecorded"] + c["unrecorded_screens"] if any_record else 0
    doubted = c["doubted"] + c["doubted_screens"]
    timed, fast, rated, constant = c["timed"], c["fast"], c["rated"], c["constant"]
    out = {"worker_id": worker, "texts": c["texts"], "pasted_texts": pasted,
           "pasted_share": pasted_chars / chars if chars else np.nan, "typing_ms": key_ms, "answers": answers,
           "away_answers": away, "unrecorded": unrecorded, "doubted": doubted, "screens": c["screens"],
           "median_seconds": float(c["median_seconds"]) if timed else np.nan,
           "fast_share": fast / timed if timed else np.nan,
           "constant_share": constant / rated if rated else np.nan}
    why = {
        "pasted": pasted and f"pasted {pasted} of {long_texts} texts of {settings.min_text_chars}+ characters "
                             f"({pasted_chars} of {chars} characters pasted or dropped)",
        "typing": np.isfinite(key_ms) and key_ms < settings.key_interval_ms
        and f"typed with a median of {key_ms:.0f} ms between characters (under {settings.key_interval_ms:g} ms: "
            "faster than people type)",
        "away": away >= 2 and away >= settings.away_share * answers
        and f"left the page (another tab or window) while working on {away} of {answers} answers",
        "unrecorded": answers and unrecorded >= 2 and unrecorded >= settings.unrecorded_share * answers
        and f"{unrecorded} of {answers} answers came without the page's record of how they were made (not our "
            "page, or a script)",
        "doubted": doubted and f"the server doubted the page's record of {doubted} answers (times beyond its own "
                               "clock, or text the record does not account for)",
        "fast": timed >= settings.min_screens and fast >= settings.fast_share * timed
        and f"answered {fast} of {timed} judgment screens in under {settings.seconds_per_answer:g} s per answer "
            f"(median {out['median_seconds']:.1f} s a screen)",
        "constant": rated >= settings.min_screens and constant >= settings.constant_share * rated
        and f"gave one value to every rating of {constant} of {rated} rating screens",
    }
    for name, reason in why.items():
        out[f"why_{name}"] = reason if reason else ""
    return out
