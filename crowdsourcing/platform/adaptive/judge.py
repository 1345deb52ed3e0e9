"""The LLM judge in adaptive collection (``adaptive=true adaptive_judge=F.jsonl``; docs/ppi.md): which
design items people judge next, and the evidence that certifies the ranking.

A `dialeval judge` output answers the fixed design's items (matched by item id and model pair: an ACUTE
``pair_id``, an A/B ``item_id``); per model pair its answered items are the pool, and the judge's mean
answer over them is known. Items for people are drawn from the pool with replacement, with probabilities
that grow with the judge's uncertainty and never fall below ``floor``/N (adaptive/ppi_sequential.py);
each drawn judgment carries its item's probability in the HIT's server-side data and the batch's record
in the state. Each human judgment then feeds its pair's anytime-valid PPI e-process with that probability,
and a claim is certified when that e-process reaches K(K-1)/alpha. Judgments drawn independently with
replacement are independent given the pool (a repeated item is a fresh draw), so each judgment is one
draw, not a cluster. Design items the judge did not answer are never drawn (counted in ``missing``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive.ledger import Ledger
from parlai_dialeval.adaptive.ppi_sequential import RectifiedBetting, selection_probabilities

SCORE = {"a": 1.0, "b": 0.0, "tie": 0.5}


def pair_key(a: str, b: str) -> str:
    return "|".join(sorted((a, b)))


def item_id(judgment: dict) -> str:
    return str(judgment.get("pair_id", judgment.get("item_id")))


def first_model_score(record: dict) -> tuple[str, float]:
    """(pair key, the outcome for the pair's first model by name) of one canonical comparison."""
    a, b = record["model_a"], record["model_b"]
    score = SCORE[record["choice"]]
    return pair_key(a, b), score if a == min(a, b) else 1 - score


class JudgePools:
    """Per model pair: the design items the judge answered, its mean answer f on each (for the pair's
    first model by name; a flip across the two orders is 1/2) and their draw probabilities.

    ``compared`` / ``judge_fields`` (the task's StaticPairwise): an answer whose record names what it compared
    (two conversation ids, two responses) counts only for a design item that compares the same two; an item
    answered about something else under its id (the conversations or items file changed after `dialeval
    judge --design`) is not drawn and counted in ``mismatched``: the judge's answer would say nothing of it."""

    def __init__(self, pools: dict[str, list[dict]], judge: pd.DataFrame, floor: float, compared=None,
                 judge_fields: tuple[str, str] | None = None):
        judge = judge[~judge.get("automatic", pd.Series(False, index=judge.index)).eq(True)]
        fields = [f for f in judge_fields or () if f in judge]
        answers: dict[tuple[str, str], list[float]] = {}
        named: dict[tuple[str, str], set] = {}  # what the answers of an item compared, where they say
        for record in judge[["model_a", "model_b", "choice", "item_id", *fields]].to_dict("records"):
            key, score = first_model_score(record)
            at = (key, str(record["item_id"]))
            answers.setdefault(at, []).append(score)
            if len(fields) == 2 and all(isinstance(record[f], str) for f in fields):
                named.setdefault(at, set()).add(frozenset(record[f] for f in fields))
        self.index: dict[str, np.ndarray] = {}  # pair -> positions in its design pool that the judge answered
        self.f: dict[str, np.ndarray] = {}
        self.p: dict[str, np.ndarray] = {}
        self.position: dict[tuple[str, str], int] = {}  # (pair, item) -> its place in the judge's pool
        self.missing = self.mismatched = 0
        for key, pool in pools.items():
            ids = [(key, item_id(j)) for j in pool]
            answered = [i for i, at in enumerate(ids) if at in answers]
            same = [i for i in answered if compared is None or ids[i] not in named
                    or named[ids[i]] == {compared(pool[i])}]
            self.missing += len(pool) - len(answered)
            self.mismatched += len(answered) - len(same)
            if not same:
                continue
            self.index[key] = np.array(same)
            self.f[key] = np.array([float(np.mean(answers[ids[i]])) for i in same])
            self.p[key] = selection_probabilities(self.f[key], floor)
            for place, i in enumerate(same):
                self.position[ids[i]] = place
        if not self.index:
            raise ValueError("the judge answered none of the design's items (matched by item id and model pair"
                             + (f"; {self.mismatched} answered under their id compare other things" if self.mismatched
                                else "") + ")")

    def draw(self, key: str, rng: np.random.Generator) -> tuple[int, dict]:
        """(position in the pair's design pool, the draw's fields that the judgment and its export carry:
        data/schema.py's DRAW_FIELDS) of one draw."""
        p = self.p[key]
        place = int(rng.choice(len(p), p=p))
        return int(self.index[key][place]), {"draw_probability": float(p[place]), "draw_pool_size": len(p),
                                             "draw_floor": float(len(p) * p.min())}

    def answer(self, key: str, item: str) -> tuple[float, float] | None:
        """(the judge's f, N p) of an item of the pair's pool, or None when it is not in the pool."""
        place = self.position.get((key, item))
        if place is None:
            return None
        return float(self.f[key][place]), float(len(self.p[key]) * self.p[key][place])


class JudgedLedger(Ledger):
    """The study's ledger with the judge: people's outcomes still enter the human-only e-processes (and
    the ranking), but a claim is certified by the pair's PPI e-process (``processes``)."""

    pools: JudgePools
    processes: dict[str, RectifiedBetting]

    def attach(self, pools: JudgePools, saved: dict) -> "JudgedLedger":
        self.pools = pools
        self.processes = {key: RectifiedBetting.from_json(saved[key]) if key in saved else
                          RectifiedBetting(pool_mean=float(pools.f[key].mean()),
                                           min_scaled=float(len(pools.p[key]) * pools.p[key].min()))
                          for key in pools.f}
        return self

    def add_draw(self, record: dict) -> bool:
        """One human comparison on a drawn item into its pair's PPI e-process; False if the item is not
        in the judge's pool (not evidence here)."""
        key, score = first_model_score(record)
        found = self.pools.answer(key, str(record["item_id"]))
        if found is None or key not in self.processes:
            return False
        self.processes[key].add(score, *found)
        return True

    def evidence(self, a: str, b: str) -> float:
        """The PPI e-process's largest wealth for "a beats b"; people's alone for a pair the judge has no
        pool for (each pair is certified by the one e-process fixed before collection)."""
        process = self.processes.get(pair_key(a, b))
        if process is None:
            return super().evidence(a, b)
        return process.best_above if a == min(a, b) else process.best_below

    def processes_json(self) -> dict:
        return {key: process.to_json() for key, process in self.processes.items()}
