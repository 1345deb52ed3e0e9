"""How few removals lose a settled pair's significance: the number a reader of "X is better than Y (p = 0.018)"
most needs (issue 50 item 6: 51-29 loses p < 0.05 after 4 removals, where reversing the winner takes 23).

The test is analyze_pairwise's own (analysis/pairwise.py): the exact two-sided sign test over the items
(clusters) each model won, an item won by more decided votes one way, with the table's correction over all
pairs (the other pairs' p-values as they are). Its significance is lost once the corrected p reaches alpha, or
the trailer leads.

- Votes, exact: removing a vote of the trailer never helps, and a vote of the leader matters only where it
  changes an item's outcome. An item the leader won by a margin of m decided votes becomes level after m
  removals (one item fewer won) and lost after m + 1 if the trailer has a vote on it; a level item becomes lost
  after one. So j items taken from the leader and i added to the trailer cost the j cheapest margins plus i,
  with at least i - (level items) of those j items holding a trailer vote; the cheapest such choice has a
  closed form (the margins sorted, prefix sums), and the fewest votes is the minimum over j of the cost at the
  fewest i that loses the test. Checked against brute force over every removal (tests/test_fragility.py).
- Workers: removing a worker removes their votes on both sides. The workers with the largest net margin for the
  leader are dropped first until the test is lost (an upper bound), then every smaller set of workers is tried
  where that takes at most MAX_WORKER_SETS tests; ``workers_exact`` says which.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from parlai_dialeval.analysis.cluster_robust import cluster_ids
from parlai_dialeval.analysis.pairwise import SECTION, binomial_ps, oriented

COLUMNS = SECTION + ["model_a", "model_b", "leader", "p_adjusted", "votes", "votes_to_lose_significance", "workers",
                     "workers_to_lose_significance", "workers_exact", "sentence"]
MAX_WORKER_SETS = 2000  # sets of workers tried by the exhaustive search at most, per pair


def significance_loss(comparisons: pd.DataFrame, rates: pd.DataFrame, alpha: float, correction: str) -> pd.DataFrame:
    """Per pair of ``rates`` (analyze_pairwise's win_rates table: SECTION, model_a, model_b, clusters won,
    p_value, p_adjusted) settled at ``alpha``, the fewest decided votes and workers of ``comparisons`` whose
    removal loses its significance."""
    settled = rates.index[(rates["p_adjusted"] < alpha).to_numpy()]
    if not len(settled):
        return pd.DataFrame(columns=COLUMNS)
    frame = oriented(comparisons, SECTION)
    frame = frame[~frame["auto"] & (frame["score"] != 0)]
    groups = frame.groupby(SECTION + ["first", "second"], sort=False, dropna=False).indices
    # codes for the whole frame once: a pair's are factorized again from these (the same order as its strings')
    all_scores, all_clusters = frame["score"].to_numpy(), pd.factorize(cluster_ids(frame))[0]
    all_workers = pd.factorize(frame["worker_id"].astype(str))[0]
    p_values = rates["p_value"].to_numpy(dtype=float)
    sign_tests = SignTests()
    rows = []
    # each settled row as a dict (a label lookup per pair was a fifth of the search on a million votes)
    for position, rate in zip(rates.index.get_indexer(settled), rates.loc[settled].to_dict("records")):
        key = tuple(rate[c] for c in SECTION) + (rate["model_a"], rate["model_b"])
        votes = groups[key]
        leader_is_a = rate["clusters_won_a"] > rate["clusters_won_b"]
        score = all_scores[votes] * (1 if leader_is_a else -1)  # +1: a vote for the leader
        test = corrected(p_values, position, correction), alpha, sign_tests
        cluster = pd.factorize(all_clusters[votes])[0]
        worker = pd.factorize(all_workers[votes])[0]
        fewest_workers, exact = _workers_to_lose(score, cluster, worker, test)
        rows.append({**{c: rate[c] for c in SECTION}, "model_a": rate["model_a"], "model_b": rate["model_b"],
                     "leader": rate["model_a"] if leader_is_a else rate["model_b"],
                     "p_adjusted": rate["p_adjusted"], "votes": len(votes),
                     "votes_to_lose_significance": _votes_to_lose(score, cluster, test),
                     "workers": int(worker.max(initial=-1) + 1), "workers_to_lose_significance": fewest_workers,
                     "workers_exact": exact})
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["sentence"] = [_sentence(row, alpha) for row in table.itertuples(index=False)]
    return table


def _sentence(row, alpha: float) -> str:
    trailer = row.model_b if row.leader == row.model_a else row.model_a
    head = f"{row.leader} over {trailer} (p_adjusted {row.p_adjusted:.2g}) "
    if np.isnan(row.votes_to_lose_significance):
        return head + f"stays significant at {alpha:g} whatever votes are removed short of all"
    workers = ("" if np.isnan(row.workers_to_lose_significance) else
               f", or the votes of {'' if row.workers_exact else 'at most '}{int(row.workers_to_lose_significance):,} "
               f"of {row.workers:,} workers" + ("" if row.workers_exact else " (approximate: the workers most for "
                                                 f"{row.leader} dropped first)"))
    return (head + f"is no longer significant at {alpha:g} if {int(row.votes_to_lose_significance):,} of "
            f"{row.votes:,} decided votes are removed{workers}")


def corrected(p_values: np.ndarray, k: int, correction: str):
    """The corrected p of test ``k`` as a function of its raw p (arrays), the other tests' p as they are: what
    statsmodels' multipletests gives it (analysis/multiple_testing.adjust), in closed form. Step-down
    corrections (holm, holm-sidak) take the running maximum of f_j(p_(j)) over the sorted p, step-up ones
    (fdr_bh, fdr_by) the running minimum from the top of c m p_(j) / j; a tie ranks as those methods'
    accumulation makes it count (first among equals for step-down, last for step-up)."""
    others = np.delete(p_values, k)
    others = np.sort(others[np.isfinite(others)])
    m = len(others) + 1
    rank = np.arange(1, m + 1)
    if correction == "none":
        return lambda p: np.asarray(p, dtype=float)
    if correction == "bonferroni":
        return lambda p: np.minimum(1.0, m * np.asarray(p, dtype=float))
    if correction == "sidak":
        return lambda p: -np.expm1(m * _log1m(p))
    if correction in ("holm", "holm-sidak"):
        step = ((lambda j, p: (m - j + 1) * p) if correction == "holm"
                else (lambda j, p: -np.expm1((m - j + 1) * _log1m(p))))
        before = np.concatenate([[-np.inf], np.maximum.accumulate(step(rank[:-1], others))])  # the others ranked 1..s

        def down(p):
            p = np.asarray(p, dtype=float)
            s = np.searchsorted(others, p, side="left")  # others strictly below: p ranks s + 1
            return np.minimum(1.0, np.maximum(before[s], step(s + 1, p)))
        return down
    if correction in ("fdr_bh", "fdr_by"):
        c = np.sum(1.0 / rank) if correction == "fdr_by" else 1.0
        # the others ranked s + 2 .. m behind a test at s + 1: their c m q / rank, the smallest from the top
        after = np.concatenate([np.minimum.accumulate((c * m * others / rank[1:])[::-1])[::-1], [np.inf]])

        def up(p):
            p = np.asarray(p, dtype=float)
            s = np.searchsorted(others, p, side="right")  # others at or below: p ranks s + 1
            return np.minimum(1.0, np.minimum(c * m * p / (s + 1), after[s]))
        return up
    raise ValueError(f"unknown correction {correction!r}")


def _log1m(p) -> np.ndarray:
    """log(1 - p), -inf at p = 1 without a warning (the Sidak forms are 1 there, as statsmodels')."""
    with np.errstate(divide="ignore"):
        return np.log1p(-np.asarray(p, dtype=float))


class SignTests:
    """binomial_ps of (won, lost) counts, each computed once (the search asks for the same counts across pairs
    and bisection steps: 26,000 calls of scipy's binomial functions for 3,236 pairs of a million votes)."""

    def __init__(self):
        self.known: dict = {}

    def __call__(self, won: np.ndarray, lost: np.ndarray) -> np.ndarray:
        won, lost = np.asarray(won, dtype=np.int64), np.asarray(lost, dtype=np.int64)
        keys = (won << 32 | lost).tolist()  # one int per count pair: tuples were most of each call's time
        missing = [key for key in dict.fromkeys(keys) if key not in self.known]
        if missing:
            counts = np.array(missing, dtype=np.int64)
            self.known.update(zip(missing, binomial_ps(counts >> 32, counts & 0xFFFFFFFF).tolist()))
        return np.array([self.known[key] for key in keys], dtype=float)


def _lost(won, lost, test) -> np.ndarray:
    """Items won and lost by the leader (arrays) after which the claim is not significant in its favour;
    ``test``: the corrected p of a raw p, alpha, and the sign tests (``SignTests``)."""
    won, lost = np.atleast_1d(np.asarray(won)), np.atleast_1d(np.asarray(lost))
    correct, alpha, sign_tests = test
    return (won <= lost) | (correct(sign_tests(won, lost)) >= alpha)


def _outcomes(score: np.ndarray, cluster: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the leader's and the trailer's decided votes."""
    n = int(cluster.max(initial=-1)) + 1
    return np.bincount(cluster, score > 0, n), np.bincount(cluster, score < 0, n)


def _votes_to_lose(score: np.ndarray, cluster: np.ndarray, test) -> float:
    """The fewest of the pair's decided votes whose removal loses the test (the module's docstring)."""
    lead, trail = _outcomes(score, cluster)
    won, level = lead > trail, (lead == trail) & (lead > 0)
    W, L, ties = int(won.sum()), int((lead < trail).sum()), int(level.sum())
    margins = (lead - trail)[won]
    with_trailer = trail[won] > 0
    g1, g0 = np.sort(margins[with_trailer]), np.sort(margins[~with_trailer])  # items that can / cannot be lost
    p1, p0 = np.concatenate([[0], np.cumsum(g1)]), np.concatenate([[0], np.cumsum(g0)])
    # of the cheapest j margins overall (ties going to items that can be lost), how many can be lost
    order = np.lexsort((np.concatenate([np.zeros(len(g1)), np.ones(len(g0))]), np.concatenate([g1, g0])))
    from_g1 = np.concatenate([[0], np.cumsum(order < len(g1))])
    j = np.arange(W + 1)
    more = _fewest_more_lost(W - j, L, test)  # items the trailer must gain once j are taken from the leader
    need = np.maximum(0, more - ties)  # of them, items that were the leader's
    a = np.maximum.reduce([need, from_g1, j - len(g0)])  # items taken that can be lost: the cheapest choice
    feasible = a <= np.minimum(j, len(g1))
    if not feasible.any():
        return np.nan
    a, j, more = a[feasible], j[feasible], more[feasible]
    return float((p1[a] + p0[j - a] + more).min())


def _fewest_more_lost(won: np.ndarray, lost: int, test) -> np.ndarray:
    """Per count of items won, the fewest items i added to the trailer's for (won, lost + i) to lose the test:
    bisection over i, all counts at once (the two-sided p rises with the trailer's count up to a level split,
    where p = 1)."""
    low = np.full(len(won), -1)
    high = np.maximum(0, won - lost)  # lost there (level, or the trailer ahead)
    while (open_ := high - low > 1).any():
        middle = (low + high) // 2
        done = _lost(won, lost + np.maximum(middle, 0), test) & open_
        high = np.where(done, middle, high)
        low = np.where(open_ & ~done, middle, low)
    return high


def _workers_to_lose(score: np.ndarray, cluster: np.ndarray, worker: np.ndarray, test) -> tuple[float, bool]:
    """(the fewest workers whose removal loses the test, whether every smaller set was tried)."""
    n = int(worker.max(initial=-1)) + 1
    lead, trail = _outcomes(score, cluster)
    won, lost = int((lead > trail).sum()), int((lead < trail).sum())

    def lost_without(drop) -> bool:
        keep = ~np.isin(worker, list(drop))
        lead, trail = _outcomes(score[keep], cluster[keep])
        return bool(_lost((lead > trail).sum(), (lead < trail).sum(), test)[0])

    order = np.argsort(-np.bincount(worker, score, n), kind="stable")  # the leader's strongest workers first
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    # the items won and lost once the first k of ``order`` are gone, every k at once (each vote leaves with its
    # worker, at k = its worker's rank + 1), and once each worker alone is gone: the same tests as dropping
    # them one set at a time, in one pass over the votes
    won_k, lost_k = _outcomes_as_workers_leave(score, cluster, rank[worker] + 1, n + 1, lead, trail)
    losing = np.flatnonzero(_lost(won + won_k[1:], lost + lost_k[1:], test))
    bound = int(losing[0]) + 1 if len(losing) else None
    limit = n if bound is None else bound - 1  # sets smaller than the bound are what is left to try
    if _sets_beyond(n, limit, MAX_WORKER_SETS):
        return (np.nan if bound is None else float(bound)), False
    if limit >= 1:
        won_w, lost_w = _outcomes_as_workers_leave(score, cluster, worker, n, lead, trail, cumulative=False)
        if _lost(won + won_w, lost + lost_w, test).any():
            return 1.0, True
    for size in range(2, limit + 1):
        if any(lost_without(drop) for drop in itertools.combinations(range(n), size)):
            return float(size), True
    return (np.nan if bound is None else float(bound)), True


def _sets_beyond(n: int, largest: int, most: int) -> bool:
    """Whether the sets of 1 .. ``largest`` of ``n`` workers number more than ``most`` (summed until they do:
    the whole sum for a pair of 200 workers was thousands of binomial coefficients of hundreds of digits)."""
    total = 0
    for k in range(1, largest + 1):
        total += math.comb(n, k)
        if total > most:
            return True
    return False


def _outcomes_as_workers_leave(score: np.ndarray, cluster: np.ndarray, leaves: np.ndarray, times: int,
                               lead: np.ndarray, trail: np.ndarray, cumulative: bool = True):
    """(change in items won, in items lost) by the leader, per time t < ``times``: with ``cumulative``, once every
    vote whose ``leaves`` is at most t has gone; else once the votes whose ``leaves`` is t alone have gone.
    ``lead``, ``trail``: each item's votes before. An item changes only where its own votes go, so each run of
    an item's votes leaving at one time is one change (hand-written: no library groups removals this way)."""
    order = np.lexsort((leaves, cluster))
    item, when, sign = cluster[order], leaves[order], score[order]
    # np.concatenate, not np.r_: its indexing machinery was a tenth of the search (three thousand pairs)
    item_changes = item[1:] != item[:-1]
    new_run = np.concatenate([[True], item_changes | (when[1:] != when[:-1])])
    new_item = np.concatenate([[True], item_changes])
    run_ends = np.flatnonzero(np.concatenate([new_run[1:], [True]]))

    def gone(values: np.ndarray) -> np.ndarray:  # the item's votes of this side gone by each of its votes
        total = np.cumsum(values)
        starts = np.flatnonzero(new_item)
        return total - np.repeat(np.concatenate([[0], total[starts[1:] - 1]]),
                                 np.diff(np.concatenate([starts, [len(total)]])))

    if cumulative:
        lead_after, trail_after = lead[item] - gone(sign > 0), trail[item] - gone(sign < 0)
    else:  # only this run's votes gone: the run's own votes, not the item's earlier runs'
        run_of = np.cumsum(new_run) - 1
        run_lead = np.bincount(run_of, sign > 0)[run_of]
        run_trail = np.bincount(run_of, sign < 0)[run_of]
        lead_after, trail_after = lead[item] - run_lead, trail[item] - run_trail
    won_after = (lead_after > trail_after)[run_ends]
    lost_after = (lead_after < trail_after)[run_ends]
    items = item[run_ends]
    won_before, lost_before = lead[items] > trail[items], lead[items] < trail[items]
    if cumulative:  # before this run: as the item's previous run left it
        previous = np.concatenate([[False], items[1:] == items[:-1]])
        won_before = np.where(previous, np.roll(won_after, 1), won_before)
        lost_before = np.where(previous, np.roll(lost_after, 1), lost_before)
    at = when[run_ends]
    won_change = np.bincount(at, won_after.astype(int) - won_before, times).astype(np.int64)
    lost_change = np.bincount(at, lost_after.astype(int) - lost_before, times).astype(np.int64)
    if cumulative:
        return np.cumsum(won_change), np.cumsum(lost_change)
    return won_change, lost_change
