"""The running evidence of an adaptive study: per model pair, the betting wealth of "a beats b" and of
"b beats a", updated one outcome at a time, saved as JSON after every batch so a killed study resumes
where it stopped. Same e-process as ``sequential`` (its grid and aGRAPA bettors, evidence never expires).

One bet per item: an outcome given with its item's key (analysis.collection_order.record_outcomes) is bet only the first
time that item is read. Votes on an item read in a later batch (an item reused once the pair's items were
all shown, a late HIT) would bet again on the same item, whose votes move together (the false claims of
issue 25), so they are counted in ``repeats`` and not bet; `dialeval certify` on the export puts them in
the item's one cluster.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parlai_dialeval.adaptive.sequential import (BETS, NULL_WIN_RATE, agrapa_log_steps, certification_threshold,
                                                 combined_wealth)


@dataclass
class PairRecord:
    """Evidence on one unordered pair; outcomes are from ``first``'s side (1 win, 1/2 tie, 0 loss)."""

    first: str
    second: str
    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    log_wealth_first: np.ndarray = field(default_factory=lambda: np.zeros(len(BETS)))
    log_wealth_second: np.ndarray = field(default_factory=lambda: np.zeros(len(BETS)))
    log_agrapa_first: float = 0.0
    log_agrapa_second: float = 0.0
    best_first: float = 1.0
    best_second: float = 1.0
    items: list = field(default_factory=list)  # keys of the items bet on, in order
    repeats: int = 0  # outcomes of items already bet on: not bet again

    def add(self, outcome: float) -> None:
        step = BETS * (outcome - NULL_WIN_RATE)
        self.log_wealth_first = self.log_wealth_first + np.log1p(step)
        self.log_wealth_second = self.log_wealth_second + np.log1p(-step)
        above, below = agrapa_log_steps(self.n, self.total, self.squares, outcome)
        self.log_agrapa_first += above
        self.log_agrapa_second += below
        self.best_first = max(self.best_first, combined_wealth(self.log_wealth_first, self.log_agrapa_first))
        self.best_second = max(self.best_second, combined_wealth(self.log_wealth_second, self.log_agrapa_second))
        self.n += 1
        self.total += outcome
        self.squares += outcome * outcome

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else NULL_WIN_RATE


class Ledger:
    """Evidence on every pair of ``models``; a claim is certified at ``alpha`` over all K(K-1) claims."""

    def __init__(self, models: list[str], alpha: float = 0.05):
        self.models = list(models)
        self.alpha = alpha
        self.threshold = certification_threshold(len(self.models), alpha)
        self.pairs: dict[tuple[str, str], PairRecord] = {}
        self._seen: dict[tuple[str, str], set] = {}  # each pair's ``items`` as a set, for lookups

    def record(self, a: str, b: str) -> tuple[PairRecord, bool]:
        """The pair's record and whether ``a`` is its ``first``."""
        key = (a, b) if (a, b) in self.pairs or (b, a) not in self.pairs else (b, a)
        pair = self.pairs.setdefault(key, PairRecord(*key))
        return pair, pair.first == a

    def add(self, a: str, b: str, outcome: float, item: str | None = None) -> bool:
        """``outcome`` for ``a`` against ``b``: 1 a won, 0 b won, 1/2 a tie; an outcome of ``item`` (its
        cluster key) already bet on is counted as a repeat and not bet. Whether it was bet."""
        pair, forward = self.record(a, b)
        if item is not None:
            if item in self._bet_items(pair):
                pair.repeats += 1
                return False
            pair.items.append(item)
            self._seen[(pair.first, pair.second)].add(item)
        pair.add(outcome if forward else 1 - outcome)
        return True

    def _bet_items(self, pair: PairRecord) -> set:
        key = (pair.first, pair.second)
        if key not in self._seen:
            self._seen[key] = set(pair.items)
        return self._seen[key]

    def evidence(self, a: str, b: str) -> float:
        """Largest wealth so far of the claim "a beats b"."""
        pair, forward = self.record(a, b)
        return pair.best_first if forward else pair.best_second

    def beats(self, a: str, b: str) -> bool:
        return self.evidence(a, b) >= self.threshold

    def settled(self, a: str, b: str) -> bool:
        return self.beats(a, b) or self.beats(b, a)

    def win_matrix(self) -> np.ndarray:
        """wins[i, j]: outcomes won by models[i] against models[j] (a tie is half a win for each)."""
        index = {m: i for i, m in enumerate(self.models)}
        wins = np.zeros((len(index), len(index)))
        for pair in self.pairs.values():
            wins[index[pair.first], index[pair.second]] += pair.total
            wins[index[pair.second], index[pair.first]] += pair.n - pair.total
        return wins

    def to_json(self) -> dict:
        pairs = [{**vars(p), "log_wealth_first": p.log_wealth_first.tolist(),
                  "log_wealth_second": p.log_wealth_second.tolist()} for p in self.pairs.values()]
        return {"models": self.models, "alpha": self.alpha, "pairs": pairs}

    @classmethod
    def from_json(cls, state: dict) -> "Ledger":
        ledger = cls(state["models"], state["alpha"])
        for pair in state["pairs"]:
            record = PairRecord(**{**pair, "log_wealth_first": np.asarray(pair["log_wealth_first"]),
                                   "log_wealth_second": np.asarray(pair["log_wealth_second"])})
            ledger.pairs[(record.first, record.second)] = record
        return ledger
