"""How fragile a pairwise result is: the fewest votes (and workers) whose removal reverses it.

- A pair's win rate (``pair_fragility``): the leader (more decided wins; ties left out, as in the win rates)
  loses its lead, strictly, once its margin plus one of its wins are dropped, and dropping its wins is the
  best any removal can do: the greedy answer is exact. Workers likewise: dropping those with the largest
  net margin for the leader first is exact (a worker's removal subtracts their own net margin).
- A Bradley-Terry order (``bt_fragility``: the top model, and each model over the next one down): the
  approximate maximum influence perturbation of Huang, Shen, Wei and Broderick (arXiv 2508.11847, "dropping
  0.003% of votes flips the top model"): each vote's first-order effect on the strength gap (the influence
  function, from the Fisher information of the fit), the most gap-narrowing votes taken first until the
  linear estimate crosses zero, then confirmed by refitting: the fewest removals in that order whose refit
  reverses the order (doubling from the estimate, then bisecting). Votes of one kind (same pair and
  outcome) are interchangeable, so everything runs on counts of kinds (and of workers x kinds), never on
  votes x pairs. ``exact_bt_votes`` searches every removal smaller than that figure on small data.
Strengths maximise the Bradley-Terry likelihood (analysis.bradley_terry.fit: ties half a win each way,
PSEUDO_VOTES per pair each way), by Newton's method from the full data's fit after each removal, in the largest
connected part of each section's comparison graph.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.special import expit

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.analysis.keys import first_seen_codes
from parlai_dialeval.analysis.pairwise import SECTION, oriented
from parlai_dialeval.analysis.rankings import RANK_TOLERANCE

PAIR_COLUMNS = SECTION + ["leader", "trailer", "wins_leader", "wins_trailer", "votes", "votes_to_reverse",
                          "share", "workers", "workers_to_reverse", "sentence"]
BT_COLUMNS = SECTION + ["order", "model", "over", "gap", "votes", "votes_to_reverse", "votes_exact",
                        "first_order_estimate", "share", "workers", "workers_to_reverse", "workers_exact", "sentence"]
CHALLENGERS = 5  # the top model's nearest challengers in strength whose first-order estimates are compared
PSEUDO_VOTES = 1e-3  # each way per model pair: a finite fit where a removal leaves a model without a loss
NEWTON_STEPS = 50  # at most; a fit from the full data's strengths converges in a few
TOLERANCE = 1e-9  # the largest step of the last iteration
BISECTIONS = 40  # refits of the bisection at most: enough for 2^40 removals
# y is above x after a removal only where its log-strength exceeds x's by more than this: Newton's steps stop
# below 1e-9, and two models level after a removal (equal counts both ways) differ by rounding alone
TOLERANCE = 1e-6
MAX_FITS = 1000  # refits an exhaustive search may take: beyond it a count stays approximate (the influence order's)


def pair_fragility(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Per question, unit and model pair (``comparisons`` with sections, as analyze_pairwise passes them):
    the fewest decided votes and workers whose removal puts the trailer ahead; nan where it cannot be done
    (the trailer never won a vote, or the two are level)."""
    votes = oriented(comparisons[~comparisons["automatic"].eq(True)] if "automatic" in comparisons else comparisons,
                     SECTION)
    votes = votes[votes["score"] != 0]
    if votes.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    keys = SECTION + ["first", "second"]
    pair = _codes(votes, keys)
    worker = pd.factorize(votes["worker_id"].astype(str).to_numpy(dtype=object))[0]
    net = pd.DataFrame({"pair": pair, "worker": worker, "score": votes["score"].to_numpy()}).groupby(
        ["pair", "worker"], sort=False)["score"].agg(["sum", "size"]).reset_index()
    pairs = votes[keys].iloc[np.unique(pair, return_index=True)[1]].reset_index(drop=True)  # pair codes 0, 1, ...
    pairs["margin"] = np.bincount(net["pair"], weights=net["sum"]).astype(int)
    pairs["votes"] = np.bincount(net["pair"], weights=net["size"]).astype(int)
    pairs["workers"] = np.bincount(net["pair"])
    wins_first = (pairs["votes"] + pairs["margin"]) // 2
    flip = pairs["margin"] < 0
    pairs["leader"] = np.where(flip, pairs["second"], pairs["first"])
    pairs["trailer"] = np.where(flip, pairs["first"], pairs["second"])
    pairs["wins_leader"] = np.where(flip, pairs["votes"] - wins_first, wins_first)
    pairs["wins_trailer"] = pairs["votes"] - pairs["wins_leader"]
    lead = pairs["margin"].abs()
    pairs["votes_to_reverse"] = np.where((lead > 0) & (pairs["wins_trailer"] > 0), lead + 1, np.nan)
    pairs["workers_to_reverse"] = _workers_to_reverse(net, pairs["margin"].to_numpy())
    pairs["share"] = pairs["votes_to_reverse"] / pairs["votes"]
    pairs["sentence"] = [_pair_sentence(row) for row in pairs.itertuples(index=False)]
    return pairs[PAIR_COLUMNS]


def _codes(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """One integer per distinct combination of ``keys`` read as text, numbered in first-seen order (grouping by
    the strings was most of the time on a million votes)."""
    return first_seen_codes([frame[key].astype(str).to_numpy(dtype=object) for key in keys])


def _workers_to_reverse(net: pd.DataFrame, margin: np.ndarray) -> np.ndarray:
    """Fewest workers whose removal leaves the leader's margin below zero: the leader's best workers first."""
    pair = net["pair"].to_numpy()
    for_leader = np.sign(margin[pair]) * net["sum"].to_numpy()
    order = np.lexsort((-for_leader, pair))
    pair, for_leader = pair[order], for_leader[order]
    starts = np.searchsorted(pair, pair)  # sorted by pair: each row's group start
    removed = np.cumsum(for_leader) - np.concatenate([[0], np.cumsum(for_leader)])[starts]
    rank = np.arange(len(pair)) - starts + 1
    enough = (removed > np.abs(margin[pair])) & (margin[pair] != 0)
    fewest = np.full(len(margin), np.inf)
    np.minimum.at(fewest, pair[enough], rank[enough])
    return np.where(np.isfinite(fewest), fewest, np.nan)


def _count(n: float, total: int, what: str) -> str:
    return f"{int(n):,} of {total:,} {what} ({100 * n / total:.2g}%)"


def _pair_sentence(row) -> str:
    if not row.wins_leader - row.wins_trailer:
        return f"{row.leader} and {row.trailer} are level ({row.wins_leader} wins each): no order to reverse"
    if np.isnan(row.votes_to_reverse):
        return f"{row.leader} over {row.trailer} cannot be reversed by dropping votes: {row.trailer} won none"
    workers = ("" if np.isnan(row.workers_to_reverse)
               else f", or the votes of {_count(row.workers_to_reverse, row.workers, 'workers')}")
    return (f"{row.leader} over {row.trailer} reverses if {_count(row.votes_to_reverse, row.votes, 'decided votes')} "
            f"are dropped{workers}")


class _Section:
    """One section's largest connected part as counts of vote kinds (canonical pair, outcome) and of
    workers x kinds: what the Bradley-Terry fits and removals work on."""

    def __init__(self, comparisons: pd.DataFrame):
        votes = comparisons[~comparisons["automatic"].eq(True)] if "automatic" in comparisons else comparisons
        encoded = bt.encode(votes, clusters=False)
        self.models = []
        if len(encoded.models) < 2:  # every vote an automatic tie, or one model only
            return
        part, _, keep = encoded.largest_part()
        a, b, outcome = part.first, part.second, part.outcome
        self.models = part.models
        n = len(self.models)
        swap = a > b
        low, high = np.where(swap, b, a), np.where(swap, a, b)
        outcome = np.where(swap, 1 - outcome, outcome)  # the lower-numbered model's result
        keys, kind = np.unique((low * n + high) * 3 + np.rint(outcome * 2).astype(np.int64), return_inverse=True)
        self.rows = np.column_stack([keys // 3 // n, keys // 3 % n, keys % 3 / 2])
        self.counts = np.bincount(kind, minlength=len(keys)).astype(float)
        self.kinds = bt.Votes(self.models, self.rows[:, 0].astype(np.int64), self.rows[:, 1].astype(np.int64),
                              self.rows[:, 2])
        worker = pd.factorize(votes["worker_id"].astype(str).to_numpy(dtype=object)[keep])[0]
        self.by_worker = csr_matrix((np.ones(len(kind)), (worker, kind)), shape=(worker.max() + 1, len(keys)))
        self.full = bt.fit(self.kinds, weights=self.counts, prior=PSEUDO_VOTES, covariance=False, max_iter=NEWTON_STEPS,
                           tol=TOLERANCE)
        self.theta, self.inverse = self.full.strengths, self.full.inverse_information

    def fit(self, counts: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
        """Bradley-Terry log-strengths (mean 0) with PSEUDO_VOTES each way per pair, after a removal (``counts``
        of each kind), from ``start`` (default: the full data's fit); the first steps use the full data's
        inverse information (a matrix product, no solve)."""
        return bt.fit(self.kinds, weights=counts, prior=PSEUDO_VOTES, start=self.theta if start is None else start,
                      inverse=self.full.bread, covariance=False, max_iter=NEWTON_STEPS, tol=TOLERANCE).strengths

    def influence(self, x: int, y: int) -> np.ndarray:
        """First-order change of theta_x - theta_y when one vote of each kind is removed: -(o - p) (u_lo - u_hi),
        u = J^-1 (e_x - e_y), J the Fisher information of the full data's fit."""
        u = self.inverse[:, x] - self.inverse[:, y]
        low, high, outcome = self.rows[:, 0].astype(int), self.rows[:, 1].astype(int), self.rows[:, 2]
        return -(outcome - expit(self.theta[low] - self.theta[high])) * (u[low] - u[high])


def _greedy(gap: float, delta: np.ndarray, available: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Atoms that narrow the gap, most first, with their cumulative removals, and the first-order estimate:
    the removals after which the linear estimate of the gap falls below zero (inf where it never does)."""
    order = np.argsort(delta, kind="stable")
    order = order[(delta[order] < 0) & (available[order] > 0)]
    reach = np.cumsum(available[order])
    after = gap + np.cumsum(delta[order] * available[order])
    stop = int(np.searchsorted(-after, 0, side="right"))  # first atom after which the estimate is below 0
    if stop >= len(order):
        return order, reach, np.inf
    before = after[stop - 1] if stop else gap
    done = reach[stop - 1] if stop else 0.0
    return order, reach, float(done + min(available[order[stop]], np.floor(before / -delta[order[stop]]) + 1))


def _prefix(order: np.ndarray, reach: np.ndarray, available: np.ndarray, k: float) -> np.ndarray:
    """The first ``k`` removals in greedy order, per atom."""
    taken = np.zeros_like(available)
    full = int(np.searchsorted(reach, k, side="right"))
    taken[order[:full]] = available[order[:full]]
    if full < len(order):
        taken[order[full]] = k - (reach[full - 1] if full else 0.0)
    return taken


def _reverse(section: _Section, x: int, y: int, workers: bool) -> tuple[float, float]:
    """(the fewest removals, in the influence order, that reverse x over y on refitting, or nan; the
    first-order estimate): votes, or workers when ``workers``. From the estimate, the removal doubles until a
    refit reverses, then bisects (the linear estimate overshoots or falls short when removals are large)."""
    available = np.ones(section.by_worker.shape[0]) if workers else section.counts
    delta = section.influence(x, y)
    order, reach, estimate = _greedy(section.theta[x] - section.theta[y],
                                     section.by_worker @ delta if workers else delta, available)
    if not len(order):
        return np.nan, estimate

    def reversed_after(k: float) -> bool:
        taken = _prefix(order, reach, available, k)
        theta = section.fit(section.counts - (section.by_worker.T @ taken if workers else taken))
        return _above(theta, y, x)

    low, high = 0.0, float(min(estimate, reach[-1]))
    while not reversed_after(high):
        if high >= reach[-1]:
            return np.nan, estimate
        low, high = high, float(min(2 * high, reach[-1]))
    for _ in range(BISECTIONS):
        if high - low <= 1:
            break
        middle = float(np.floor((low + high) / 2))
        low, high = (low, middle) if reversed_after(middle) else (middle, high)
    return high, estimate


def _above(theta: np.ndarray, y: int, x: int) -> bool:
    return bool(theta[y] - theta[x] > TOLERANCE)


def exact_bt_votes(section: _Section, x: int, y: int, upper: float, max_fits: int = MAX_FITS) -> float:
    """The fewest votes whose removal puts y above x, every removal of fewer than ``upper`` votes tried (every
    removal at all where ``upper`` is nan: none found), or nan where that would take more than ``max_fits``
    refits (counted before any is made: removals of each size, as multisets of vote kinds)."""
    kinds = len(section.counts)
    total = int(section.counts.sum())
    top = total if not np.isfinite(upper) else min(int(upper) - 1, total)
    if sum(_multisets(kinds, size) for size in range(1, top + 1)) > max_fits:
        return np.nan
    for size in range(1, top + 1):
        for chosen in itertools.combinations_with_replacement(range(kinds), size):
            drop = np.bincount(np.asarray(chosen), minlength=kinds)
            if (drop <= section.counts).all() and _above(section.fit(section.counts - drop), y, x):
                return float(size)
    return float(upper) if np.isfinite(upper) else np.inf


def exact_bt_workers(section: _Section, x: int, y: int, upper: float, max_fits: int = MAX_FITS) -> float:
    """The fewest workers whose votes' removal puts y above x, every set of fewer than ``upper`` workers tried
    (every set where ``upper`` is nan), or nan where that would take more than ``max_fits`` refits."""
    workers = section.by_worker.shape[0]
    top = workers if not np.isfinite(upper) else min(int(upper) - 1, workers)
    if sum(math.comb(workers, size) for size in range(1, top + 1)) > max_fits:
        return np.nan
    for size in range(1, top + 1):
        for chosen in itertools.combinations(range(workers), size):
            drop = np.asarray(section.by_worker[list(chosen)].sum(axis=0)).ravel()
            if _above(section.fit(section.counts - drop), y, x):
                return float(size)
    return float(upper) if np.isfinite(upper) else np.inf


def _multisets(kinds: int, size: int) -> int:
    return math.comb(kinds + size - 1, size)


def _exact(approximate: float, exact: float) -> tuple[float, bool]:
    """(the count, whether it is exact): the exhaustive search's where it ran (inf: nothing reverses it),
    else the influence order's."""
    if np.isnan(exact):
        return approximate, False
    return (np.nan if np.isinf(exact) else exact), True


def bt_fragility(comparisons: pd.DataFrame, pairs: int = 10) -> pd.DataFrame:
    """Per question and unit (``comparisons`` with sections): the top model against the challenger (of the
    CHALLENGERS nearest in strength) with the smallest first-order estimate (the top changes), and each of the first ``pairs`` models in
    Bradley-Terry order over the next one down."""
    rows = []
    for (question, unit), part in comparisons.groupby(SECTION, sort=False, dropna=False):
        section = _Section(part)
        if len(section.models) < 2:
            continue
        order = np.argsort(-section.theta, kind="stable")
        total, n_workers = int(section.counts.sum()), section.by_worker.shape[0]
        top = order[0]
        nearest = order[1:1 + CHALLENGERS]
        top_level = [section.models[k] for k in order if _level(section.theta, top, k)]
        # a shared first place (rankings.py's shared rank) has no top model, so no challenger to look for
        challenger = order[1] if len(top_level) > 1 else min(nearest, key=lambda c: _first_guess(section, top, c))
        checks = [("top", top, challenger)]
        checks += [("adjacent", order[i], order[i + 1]) for i in range(min(pairs, len(order) - 1))]
        for kind, x, y in checks:
            level = _level(section.theta, x, y)
            if level:  # level models have no order a removal could reverse: none searched
                votes = estimate = workers = np.nan
                votes_exact = workers_exact = False
            else:
                votes, estimate = _reverse(section, x, y, workers=False)
                votes, votes_exact = _exact(votes, exact_bt_votes(section, x, y, votes))
                workers, _ = _reverse(section, x, y, workers=True)
                workers, workers_exact = _exact(workers, exact_bt_workers(section, x, y, workers))
            row = {"question": question, "unit": unit, "order": kind, "model": section.models[x],
                   "over": section.models[y], "gap": float(section.theta[x] - section.theta[y]), "votes": total,
                   "votes_to_reverse": votes, "votes_exact": votes_exact, "first_order_estimate": estimate,
                   "share": votes / total, "workers": n_workers, "workers_to_reverse": workers,
                   "workers_exact": workers_exact}
            row["sentence"] = _bt_sentence(row, top_level if kind == "top" else
                                           [row["model"], row["over"]] if level else [])
            rows.append(row)
    return pd.DataFrame(rows, columns=BT_COLUMNS)


def _first_guess(section: _Section, x: int, y: int) -> float:
    """The first-order estimate alone (no refits): which challenger of the top model to confirm."""
    delta = section.influence(x, y)
    return _greedy(section.theta[x] - section.theta[y], delta, section.counts)[2]


def _level(theta: np.ndarray, x: int, y: int) -> bool:
    """Whether two models' strengths are equal as the rankings read them (they share a rank there)."""
    return bool(abs(theta[x] - theta[y]) <= RANK_TOLERANCE)


def _bt_sentence(row: dict, level: list[str]) -> str:
    """``level``: the models level with one another (at the top for the top row), where more than one."""
    if len(level) > 1:
        names = ", ".join(level[:-1]) + f" and {level[-1]}"
        return (f"{names} share the top place (equal Bradley-Terry strengths): no model is top, so none to overtake"
                if row["order"] == "top" else f"{names} are level in Bradley-Terry strength: no order to reverse")
    subject = (f"{row['model']} is top; {row['over']} overtakes it" if row["order"] == "top"
               else f"{row['model']} over {row['over']} (Bradley-Terry) reverses")
    head = subject.split(";")[0] if row["order"] == "top" else f"{row['model']} over {row['over']} (Bradley-Terry)"
    if np.isnan(row["votes_to_reverse"]):
        return (f"{head}: no removal of votes reverses it (every removal tried)" if row["votes_exact"] else
                f"{head}: no removal of votes found that reverses it (an approximate search: trying every "
                f"removal would take more than {MAX_FITS:,} refits)")
    votes = _count(row["votes_to_reverse"], row["votes"], "votes")
    votes = votes if row["votes_exact"] else f"at most {votes}"
    workers = ("" if np.isnan(row["workers_to_reverse"]) else ", or the votes of " + (
        "" if row["workers_exact"] else "at most ") + _count(row["workers_to_reverse"], row["workers"], "workers"))
    exact = [name for name, flag in (("votes", row["votes_exact"]), ("workers", row["workers_exact"])) if flag]
    how = ("exact: every smaller removal tried" if len(exact) == 2 or (exact == ["votes"] and not workers) else
           f"exact for {exact[0]} (every smaller removal tried), approximate for the other" if exact else
           "approximate: found in the order of the votes' influence; trying every smaller removal would take "
           f"more than {MAX_FITS:,} refits")
    return f"{subject} if {votes} are dropped{workers} ({how})"
