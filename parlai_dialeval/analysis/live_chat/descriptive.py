"""Live-chat descriptive tables: durations (Table 1), opening-topic attitudes (Table 2), worker input
lengths (Table 12), the counts summary and Table 1 itself, and what became of each worker (passed or failed
quality control, or never submitted their HIT)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from parlai_dialeval.analysis.completeness import submitted
from parlai_dialeval.analysis.live_chat.prepare import is_in
from parlai_dialeval.analysis.live_chat.settings import HUMAN, QC_OFF, Settings


# the canonical ``submission`` of a HIT not handed in (data/schema.py SUBMISSIONS), in words
NOT_SUBMITTED = {"returned": "returned", "disconnected": "disconnected", "timed_out": "timed out",
                 "working": "still working"}


def unsubmitted_assignments(conversations: pd.DataFrame) -> pd.DataFrame:
    """One row per assignment (HIT) its worker did not submit: assignment_id, worker_id, submission, and its
    conversations and how many of them were rated (complete). None of it is analysed (completeness.py)."""
    columns = ["assignment_id", "worker_id", "submission", "conversations", "rated"]
    if conversations.empty or "submission" not in conversations.columns:
        return pd.DataFrame(columns=columns)
    frame = conversations[~submitted(conversations["submission"]).to_numpy()]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    hit = frame["assignment_id"] if "assignment_id" in frame else frame["id"]
    hit = hit.fillna(frame["id"]).astype(str)
    status = frame["status"] if "status" in frame else pd.Series("complete", index=frame.index)
    grouped = pd.DataFrame({"assignment_id": hit, "worker_id": frame["worker_id"].astype(str),
                            "submission": frame["submission"].astype(str),
                            "rated": status.fillna("complete").eq("complete")}).groupby("assignment_id", sort=True)
    return grouped.agg(worker_id=("worker_id", "first"), submission=("submission", "first"),
                       conversations=("rated", "size"), rated=("rated", "sum")).reset_index()[columns]


def worker_outcomes(workers: pd.DataFrame, unsubmitted: pd.DataFrame) -> pd.DataFrame:
    """workers.csv: every worker who submitted a HIT (quality control's table) and every worker who only
    started ones they did not submit, with ``outcome`` in words. A worker who submitted nothing has no
    quality-control result (``passed`` empty): they are not a failure of the check but someone who left."""
    left = unsubmitted.groupby("worker_id")["submission"].agg(
        lambda states: ", ".join(f"{n} {NOT_SUBMITTED.get(s, s)}" if n > 1 else NOT_SUBMITTED.get(s, s)
                                 for s, n in states.value_counts().sort_index().items()))
    counts = unsubmitted.groupby("worker_id").size()
    out = workers.copy()
    out.insert(2, "n_hits_not_submitted", out["worker_id"].map(counts).fillna(0).astype(int))
    out["passed"] = out["passed"].astype(object)
    out["outcome"] = np.where(out["passed"].astype(bool), "passed quality control", "failed quality control")
    noted = out["note"].fillna("").ne("") & ~out["passed"].astype(bool)
    out.loc[noted, "outcome"] = "failed quality control: " + out.loc[noted, "note"]
    out.loc[out["note"].eq(QC_OFF), "outcome"] = "not checked (quality control off)"
    only_left = [w for w in left.index if w not in set(out["worker_id"])]
    if only_left:
        out = pd.concat([out, pd.DataFrame({
            "worker_id": only_left, "n_hits": 0, "n_hits_not_submitted": [int(counts[w]) for w in only_left],
            "n_ratings": 0, "p_value": np.nan, "passed": None, "note": "",
            "outcome": ["did not submit: " + left[w] for w in only_left]})], ignore_index=True)
    return out.sort_values("worker_id", kind="stable").reset_index(drop=True)


def durations(conversations: pd.DataFrame, passed_workers: set) -> pd.DataFrame:
    """Table 1 durations in minutes: per HIT (assignment_duration) and per conversation (the HIT's time
    divided by its conversations, as the paper does; and measured ``duration`` when recorded)."""
    frame = conversations
    rows = []
    if "assignment_duration" in frame.columns and frame["assignment_duration"].notna().any():
        per_hit = frame.groupby("assignment_id").agg(worker_id=("worker_id", "first"),
                                                     seconds=("assignment_duration", "first"),
                                                     conversations=("id", "size")).dropna(subset=["seconds"])
        per_hit["passed"] = is_in(per_hit["worker_id"], passed_workers)
        per_hit["per_conversation"] = per_hit["seconds"] / per_hit["conversations"]
        for label, sub in (("passed", per_hit[per_hit["passed"]]), ("failed", per_hit[~per_hit["passed"]]),
                           ("all", per_hit)):
            rows.append({"workers": label, "hits": len(sub),
                         "mean_minutes_per_hit": sub["seconds"].mean() / 60 if len(sub) else np.nan,
                         "mean_minutes_per_conversation": sub["per_conversation"].mean() / 60 if len(sub) else np.nan})
    out = pd.DataFrame(rows)
    if "duration" in frame.columns and frame["duration"].notna().any():
        measured = frame.dropna(subset=["duration"])
        passed = is_in(measured["worker_id"], passed_workers)
        values = {"passed": measured.loc[passed, "duration"], "failed": measured.loc[~passed, "duration"],
                  "all": measured["duration"]}
        column = {k: (v.astype(float).mean() / 60 if len(v) else np.nan) for k, v in values.items()}
        if out.empty:
            out = pd.DataFrame({"workers": list(values)})
        out["mean_minutes_per_conversation_measured"] = out["workers"].map(column)
    return out


def topic_attitudes(conversations: pd.DataFrame, passed_workers: set) -> pd.DataFrame | None:
    """Table 2: % of conversations whose opening topic the worker liked / was ambivalent about / disliked,
    for passing and failing workers (all conversations of the HIT, QC included, as the paper's numbers):
    ``passed_pct`` and ``failed_pct`` beside the counts ``n_passed`` and ``n_failed``, then an ``all`` row."""
    if "topic_attitude" not in conversations.columns or conversations["topic_attitude"].isna().all():
        return None
    frame = conversations.dropna(subset=["topic_attitude"])
    outcome = pd.Series(np.where(is_in(frame["worker_id"], passed_workers), "passed", "failed"), index=frame.index,
                        name="workers")
    counts = pd.crosstab(frame["topic_attitude"], outcome, margins=True, margins_name="all")
    wanted = [a for a in ("like", "ambivalent", "dislike") if a in counts.index]
    counts = counts.reindex(wanted + [a for a in counts.index if a not in wanted and a != "all"] + ["all"])
    table = pd.DataFrame(index=counts.index)
    for column in ("passed", "failed"):
        if column in counts.columns:  # percentages and counts in columns of their own: a count never reads as a %
            table[f"{column}_pct"] = 100 * counts[column] / counts.loc["all", column]
            table[f"n_{column}"] = counts[column].astype(int)
    table.index.name = "attitude"
    return table.reset_index()


def input_lengths(conversations: pd.DataFrame, turns: pd.DataFrame, passed_workers: set,
                  speaker: str = HUMAN) -> pd.DataFrame | None:
    """Table 12: median characters and words (whitespace tokens) of worker inputs, per input and per
    conversation, for passing and failing workers. ``turns``: one row per turn (``EvalData.turns()``)
    of these conversations (matched by id) and perhaps others."""
    if conversations.empty:
        return None
    inputs = turns[(turns["speaker"] == speaker).to_numpy()]
    # a categorical conversation_id (EvalData.turns) is looked up once per conversation, not per turn
    owner = pd.Index(conversations["id"]).get_indexer(inputs["conversation_id"])
    texts = inputs["text"][owner >= 0]
    if not len(texts):
        return None
    owner = owner[owner >= 0]
    chars = texts.str.len().to_numpy(dtype=np.int64)  # code points, as Python's len
    words = word_counts(texts)
    n = len(conversations)
    has_input = np.bincount(owner, minlength=n) > 0
    chars_conv = np.bincount(owner, weights=chars, minlength=n)
    words_conv = np.bincount(owner, weights=words, minlength=n)
    passed_conv = is_in(conversations["worker_id"], passed_workers)
    rows = []
    for label, mask in (("passed", passed_conv), ("failed", ~passed_conv), ("all", np.ones(n, bool))):
        conv = mask & has_input
        inputs = mask[owner]
        rows.append({"workers": label, "conversations": int(conv.sum()), "inputs": int(inputs.sum()),
                     "median_chars_per_input": _median(chars[inputs]),
                     "median_chars_per_conversation": _median(chars_conv[conv]),
                     "median_words_per_input": _median(words[inputs]),
                     "median_words_per_conversation": _median(words_conv[conv])})
    return pd.DataFrame(rows)


# str.split's whitespace among the one-byte (ASCII) characters
_ASCII_SPACE = np.array([chr(byte).isspace() for byte in range(256)]) & (np.arange(256) < 128)
_SLICE = 1 << 20  # texts counted at a time: bounds the per-byte temporaries (about 80 MB)


def word_counts(texts: pd.Series) -> np.ndarray:
    """``len(text.split())`` for each text. ASCII texts are counted on their UTF-8 bytes with numpy (a word
    starts at a non-space byte that begins the text or follows a space); the others by ``str.split``
    itself (Unicode has more spaces). ``str.split`` on every text took 0.5 s for the benchmark's 1.8 M
    worker inputs; no library counts Python's whitespace tokens in bulk."""
    counts = []
    texts = pa.chunked_array(pa.array(texts.array, type=pa.large_string()))
    for chunk in texts.chunks:
        for begin in range(0, len(chunk), _SLICE):
            counts.append(_ascii_word_counts(chunk.slice(begin, _SLICE)))
    counts = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    other = np.flatnonzero(~pc.string_is_ascii(texts).to_numpy(zero_copy_only=False))
    counts[other] = [len(text.split()) for text in texts.take(pa.array(other)).to_pylist()]
    return counts


def _ascii_word_counts(chunk: pa.LargeStringArray) -> np.ndarray:
    offsets = np.frombuffer(chunk.buffers()[1], np.int64)[chunk.offset: chunk.offset + len(chunk) + 1]
    data = np.frombuffer(chunk.buffers()[2], np.uint8) if offsets[-1] > offsets[0] else np.zeros(0, np.uint8)
    space = _ASCII_SPACE[data[offsets[0]:offsets[-1]]]
    bounds = offsets - offsets[0]
    start = ~space
    start[1:] &= space[:-1]
    filled = bounds[:-1] < bounds[1:]
    firsts = bounds[:-1][filled]  # each non-empty text's first byte, whatever byte precedes it
    start[firsts] = ~space[firsts]
    counts = np.zeros(len(chunk), np.int64)
    if len(firsts):  # the non-empty texts lie end to end: one sum from each first byte to the next
        counts[filled] = np.add.reduceat(start, firsts, dtype=np.int64)
    return counts


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if len(values) else np.nan


def conversation_meta(conversations: pd.DataFrame, conv: pd.DataFrame) -> pd.DataFrame:
    """The rated conversations with their canonical fields (durations, topic attitude, hit_id)."""
    wanted = [c for c in ("id", "hit_id", "assignment_duration", "duration", "topic_attitude")
              if c in conversations.columns]
    base = conv[["conversation_id", "worker_id", "assignment_id", "model", "qc", "passed"]].rename(
        columns={"conversation_id": "id"})
    if not len(conversations) or "id" not in wanted:
        return base
    extra = conversations[wanted].copy()
    extra["id"] = extra["id"].astype(str)
    extra = extra.drop_duplicates("id")
    return base.merge(extra, on="id", how="left")


def summarise(settings: Settings, frame: pd.DataFrame, conv: pd.DataFrame, workers: pd.DataFrame, empty: list[dict],
             notes: list[str], unsubmitted: pd.DataFrame | None = None) -> dict:
    qc = set(settings.qc_models)
    genuine = conv[~conv["qc"]]
    empty_genuine = sum(sum(1 for m in item.get("models") or [] if m not in qc) for item in empty)
    n_assignments_rated = int(conv["assignment_id"].nunique())
    passed_assignments = int(conv.loc[conv["passed"], "assignment_id"].nunique())
    n_workers = int(len(workers))
    n_passed = int(workers["passed"].sum())
    summary = {
        "study": settings.study,
        "n_assignments": n_assignments_rated + len(empty),
        "n_assignments_rated": n_assignments_rated,
        "n_assignments_empty": len(empty),
        "n_assignments_passed": passed_assignments,
        # HITs started but never submitted, by what became of them; their workers are in no count above
        "assignments_not_submitted": {} if unsubmitted is None else
        {s: int(n) for s, n in unsubmitted["submission"].value_counts().sort_index().items()},
        "n_workers_not_submitted": 0 if unsubmitted is None else
        len(set(unsubmitted["worker_id"]) - set(workers["worker_id"])),
        "n_workers": n_workers,
        "n_workers_passed": n_passed,
        "worker_pass_rate": n_passed / n_workers if n_workers else None,
        "n_dialogues": int(len(genuine)),
        "n_dialogues_passed": int(genuine["passed"].sum()),
        "dialogue_pass_rate": float(genuine["passed"].mean()) if len(genuine) else None,
        "n_dialogues_incl_empty_submissions": int(len(genuine)) + empty_genuine,
        "n_qc_dialogues": int(conv["qc"].sum()),
        "n_ratings": int(len(frame)),
        "n_ratings_passed_genuine": int((frame["passed"] & ~frame["model"].isin(qc)).sum()),
        "models": sorted(genuine["model"].unique().tolist()),
        "settings": settings.as_dict(),
    }
    notes.append("n_dialogues counts the genuine-model (non-QC) conversations that were held and rated; "
                 "n_workers counts every worker who submitted an assignment, empty submissions included.")
    if summary["assignments_not_submitted"]:
        notes.append(f"{sum(summary['assignments_not_submitted'].values())} assignment(s) were started but not "
                     f"submitted ({_states(summary['assignments_not_submitted'])}): none of their ratings is "
                     f"analysed, and the {summary['n_workers_not_submitted']} worker(s) who submitted nothing else "
                     "are not counted as failing quality control (workers.csv lists them as 'did not submit').")
    if empty:
        notes.append(f"{len(empty)} empty submission(s) (no conversation or rating) were skipped by the importer; "
                     "their workers count in n_workers (as failing: nothing to test) and the submissions in "
                     f"n_assignments. The paper's Table 1 'Dialogues Total' also counts the {empty_genuine} "
                     "genuine-model slot(s) of those submissions: n_dialogues_incl_empty_submissions = "
                     f"{summary['n_dialogues_incl_empty_submissions']}.")
    summary["notes"] = notes
    return summary


def _states(counts: dict) -> str:
    return ", ".join(f"{n} {NOT_SUBMITTED.get(s, s)}" for s, n in counts.items())


def make_table1(summary: dict, table_durations: pd.DataFrame) -> pd.DataFrame:
    """Counts of submitted work and how much of it passed; HITs not submitted are rows of their own, with no
    pass count (there was no submission to check)."""
    rows = [("workers who submitted", summary["n_workers"], summary["n_workers_passed"], summary["worker_pass_rate"]),
            ("assignments (HITs) submitted", summary["n_assignments"], summary["n_assignments_passed"],
             summary["n_assignments_passed"] / summary["n_assignments"] if summary["n_assignments"] else None),
            *((f"assignments (HITs) not submitted: {NOT_SUBMITTED.get(s, s)}", n, None, None)
              for s, n in summary.get("assignments_not_submitted", {}).items()),
            *((("workers who submitted nothing", summary["n_workers_not_submitted"], None, None),)
              if summary.get("n_workers_not_submitted") else ()),
            ("dialogues (genuine models, rated)", summary["n_dialogues"], summary["n_dialogues_passed"],
             summary["dialogue_pass_rate"])]
    if summary["n_assignments_empty"]:
        total = summary["n_dialogues_incl_empty_submissions"]
        rows.append(("dialogues incl. empty submissions (paper's count)", total, summary["n_dialogues_passed"],
                     summary["n_dialogues_passed"] / total if total else None))
    # whole numbers, with no pass count where there was nothing to check
    return pd.DataFrame(rows, columns=["count", "total", "passed", "pass_rate"]).astype({"passed": "Int64"})
