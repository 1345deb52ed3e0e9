"""Asking a judge every item: pairwise items in both orders, a cache keyed by (judge, prompt), bounded
concurrency, and canonical records (``worker_id`` ``judge:<name>``) so every analysis reads the output.

An item answered with the same model in both orders gets that choice; a judge that picks the same
position in both orders (or a tie in one order only) gets a tie, flagged in ``meta`` and counted.
A reply that cannot be read (``parse_reply``'s reasons) leaves its item without a record, counted by
reason: nothing is guessed.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm.auto import tqdm

from parlai_dialeval.atomic import FILE_MODE, make_folder
from parlai_dialeval.judge.items import options, parse_reply, prompt

SCALES = {"likert": "likert", "binary": "binary", "continuous": "continuous"}


class AnswerCache:
    """Replies by sha256(judge name, prompt), appended as JSON Lines; a line cut short by a kill is
    ignored, so an interrupted run resumes and asks only what it has no reply for."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path else None
        self.entries: dict[str, dict] = {}
        self.lock = threading.Lock()
        if self.path and self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self.entries[entry["key"]] = entry
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # the last line of a killed run
        # Replies from before this run: only these are "from the cache"; a reply given earlier in this
        # run to an identical prompt is a repeat.
        self.loaded = frozenset(self.entries)
        if self.path:
            make_folder(self.path.parent)

    @staticmethod
    def key(judge: str, text: str) -> str:
        return hashlib.sha256(f"{judge}\0{text}".encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        return self.entries.get(key)

    def put(self, entry: dict) -> None:
        with self.lock:
            self.entries[entry["key"]] = entry
            if self.path:
                # One write of one line on an O_APPEND file: ranks sharing the file do not interleave.
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)  # prompts: people's words
                try:
                    os.write(fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode())
                finally:
                    os.close(fd)


def _ask_all(judge, questions: list[tuple[str, list[str]]], cache: AnswerCache, usage: dict) -> list[str]:
    """Reply texts for (prompt, options) pairs, from the cache or the judge (``concurrency`` at once)."""
    keys = [AnswerCache.key(judge.name, text) for text, _ in questions]

    def store(index, reply):
        cache.put({"key": keys[index], "judge": judge.name, "reply": reply.text,
                   "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens})

    def one(index):
        store(index, judge.ask(*questions[index]))

    todo = list({key: i for i, key in reversed(list(enumerate(keys))) if cache.get(key) is None}.values())
    cached = sum(key in cache.loaded for key in keys)
    usage["cached"] += cached
    usage["asked"] += len(todo)
    usage["repeated"] += len(keys) - cached - len(todo)
    with tqdm(total=len(todo), desc=f"judge {judge.name}", unit="prompt", disable=not todo) as bar:
        if hasattr(judge, "ask_batch") and len(todo) > 1:
            # Local judges: chunks of prompts batched on one model; each chunk cached as it ends. In text
            # order, so the prompts that share their start (one conversation's items) share a chunk.
            todo.sort(key=lambda i: questions[i][0])
            step = max(64, 4 * (judge.batch_size or 16))
            for begin in range(0, len(todo), step):
                chunk = todo[begin:begin + step]
                for i, reply in zip(chunk, judge.ask_batch([questions[i] for i in chunk])):
                    store(i, reply)
                bar.update(len(chunk))
        elif judge.concurrency > 1 and len(todo) > 1:
            with ThreadPoolExecutor(max_workers=judge.concurrency) as pool:
                for _ in pool.map(one, todo):
                    bar.update()
        else:
            for i in todo:
                one(i)
                bar.update()
    # what the replies cost, each distinct prompt once, and what this run paid (the prompts it asked)
    for key in dict.fromkeys(keys):
        for kind in ("prompt_tokens", "completion_tokens"):
            usage[kind] += cache.get(key).get(kind) or 0
    for i in todo:
        for kind in ("prompt_tokens", "completion_tokens"):
            usage[f"asked_{kind}"] += cache.get(keys[i]).get(kind) or 0
    return [cache.get(key)["reply"] for key in keys]


def judge_part(items: list[dict], judge, cache: AnswerCache) -> list[dict]:
    """One row per item: ``{"record": canonical record or None, "bad": [...], "usage": {...},
    "order": "agree" | "flip" | "one tie" (pairwise)}``. Usage counts each item's prompts."""
    questions, spans = [], []
    for item in items:
        start = len(questions)
        orders = (0, 1) if item["pairwise"] else (0,)
        questions += [(prompt(item, first), options(item)) for first in orders]
        spans.append((start, len(questions)))
    usage = {"asked": 0, "cached": 0, "repeated": 0, "prompt_tokens": 0, "completion_tokens": 0,
             "asked_prompt_tokens": 0, "asked_completion_tokens": 0}
    replies = _ask_all(judge, questions, cache, usage)
    rows = []
    for item, (start, end) in zip(items, spans):
        row = {"key": item["key"], "record": None, "bad": []}
        answers = []
        for order, text in enumerate(replies[start:end]):
            answer, reason = parse_reply(item, text)
            if reason:
                row["bad"].append({"reason": reason, "order": order, "reply": text})
            answers.append(answer)
        if not row["bad"]:
            row.update(_pairwise(item, answers, judge.name) if item["pairwise"] else
                       {"record": _rating(item, answers[0], replies[start], judge.name)})
        rows.append(row)
    rows[0]["usage"] = usage if rows else None  # a part's totals ride on its first row
    return rows


def _pairwise(item: dict, answers: list[str], name: str) -> dict:
    # answers[0]: candidate a shown first; answers[1]: candidate b shown first. As models:
    picked = [{"A": "a", "B": "b"}.get(answers[0], "tie"), {"A": "b", "B": "a"}.get(answers[1], "tie")]
    if picked[0] == picked[1]:
        choice, order = picked[0], "agree"
    else:
        choice = "tie"
        order = "flip" if "tie" not in picked else "one tie"
    record = {"type": "comparison", "item_id": item["item_id"], "worker_id": f"judge:{name}",
              "model_a": item["model_a"], "model_b": item["model_b"], "choice": choice,
              "question": item["question"],
              "meta": {"protocol": item["protocol"], "criterion": item["criterion"],
                       "answers": {"a_first": answers[0], "b_first": answers[1]}, "order": order}}
    for field in ("turn_index", "study", "conversation_a", "conversation_b", "response_a", "response_b"):
        if item.get(field) is not None:
            record[field] = item[field]
    if item.get("context_raw") is not None:
        record["context"] = item["context_raw"]
    return {"record": record, "order": order}


def _rating(item: dict, value: float, reply: str, name: str) -> dict:
    low, high = item["scale"]
    record = {"type": "rating", "conversation_id": item["conversation_id"], "worker_id": f"judge:{name}",
              "model": item["model"], "criterion": item["criterion"], "scale": SCALES[item["kind"]],
              "scale_min": low, "scale_max": high, "value": value,
              "meta": {"protocol": item["protocol"], "reply": reply}}
    for field in ("turn_index", "study"):
        if item.get(field) is not None:
            record[field] = item[field]
    return record
