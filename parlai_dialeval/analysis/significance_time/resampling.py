"""The resampling engine: power and worker cost of growing bootstrap samples, the time at which power
reaches a target, win rates per chunk of worker time and the PW combo pool. Arrays in, numbers out;
it knows nothing of protocols (``samples`` turns canonical data into its ``Units``)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats


@dataclass
class Units:
    """Resampling units of one model (t-test) or one model pair (binomial).

    values: outcomes (binomial: 1 first model wins, 0 second wins, NaN tie; t-test: scores);
    cost: seconds each unit took (NaN when unknown); worker: integer worker codes;
    onboarding: seconds of onboarding per worker code (charged once per distinct worker in a sample);
    ids: the worker id of each code (``build`` sets it), so that a t-test's two models' units can tell a
    worker who rated both (onboarded once); None: no worker is shared with another Units.
    """

    values: np.ndarray
    cost: np.ndarray
    worker: np.ndarray
    onboarding: np.ndarray
    ids: np.ndarray | None = None

    def __post_init__(self):
        self.values = np.asarray(self.values, float)
        self.cost = np.asarray(self.cost, float)
        self.worker = np.asarray(self.worker, int)
        self.onboarding = np.asarray(self.onboarding, float)
        if self.ids is not None:
            self.ids = np.asarray(self.ids, dtype=object)
        if not (len(self.values) == len(self.cost) == len(self.worker)):
            raise ValueError("values, cost and worker must have the same length")

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def build(cls, values, cost, workers, onboarding: float | tuple[dict, float] = 0.0) -> "Units":
        """From worker ids (any hashable) and onboarding seconds: one number for every worker, or
        (seconds per worker id, seconds for workers not listed)."""
        codes, uniques = pd.factorize(pd.Series(list(workers), dtype=object))
        per_worker, default = onboarding if isinstance(onboarding, tuple) else ({}, onboarding)
        return cls(values, cost, codes, [float(per_worker.get(w, default)) for w in uniques],
                   np.asarray(uniques, object))


def binomial_p(wins, decided) -> np.ndarray:
    """Two-sided binomial test p-values against 0.5, vectorised (scipy's binomtest takes one count at a
    time, too slow for thousands of resamples); at p = 0.5 the distribution is symmetric, so the
    two-sided p-value is twice the smaller tail, as binomtest computes it. No decided trials: p = 1."""
    wins, decided = np.asarray(wins), np.asarray(decided)
    tail = np.minimum(stats.binom.cdf(wins, decided, 0.5), stats.binom.sf(wins - 1, decided, 0.5))
    return np.where(decided > 0, np.minimum(1.0, 2 * tail), 1.0)


_BATCH_CELLS = 4_000_000  # draws held in memory at once (about 32 MB of indices)


def _draw(units: Units, n: int, trials: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap draws (with replacement, so sizes beyond the collected data extrapolate) and their cost."""
    idx = rng.integers(0, len(units), (trials, n))
    return idx, units.cost[idx].sum(axis=1) + _onboarding_cost(units.worker[idx], units.onboarding)


def _onboarding_cost(workers: np.ndarray, onboarding: np.ndarray):
    """Onboarding seconds of the distinct workers of each row of worker codes (one row per resample)."""
    if not onboarding.any():
        return 0.0
    workers = np.sort(workers, axis=1)
    first = np.ones_like(workers, bool)  # first occurrence of each worker in a sorted row
    first[:, 1:] = workers[:, 1:] != workers[:, :-1]
    return (onboarding[workers] * first).sum(axis=1)


def _joint_workers(a: Units, b: Units) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a's and b's worker codes in one coding, and onboarding seconds per joint code: a worker who rated
    both models is one worker. Without ids the two sets of workers are taken as disjoint."""
    if a.ids is None or b.ids is None:
        return a.worker, b.worker + len(a.onboarding), np.concatenate([a.onboarding, b.onboarding])
    codes, uniques = pd.factorize(pd.Series(np.concatenate([a.ids, b.ids]), dtype=object))
    onboarding = np.zeros(len(uniques))
    onboarding[codes] = np.concatenate([a.onboarding, b.onboarding])
    return codes[:len(a.ids)][a.worker], codes[len(a.ids):][b.worker], onboarding


def _batches(trials: int, n: int):
    size = max(1, min(trials, _BATCH_CELLS // max(n, 1)))
    for start in range(0, trials, size):
        yield min(size, trials - start)


def binomial_power(units: Units, n: int, trials: int, alpha: float, rng) -> tuple[float, float]:
    """Power and mean cost of n comparisons: two-sided binomial test of wins among decided (non-tie) ones."""
    significant, costs = [], []
    for batch in _batches(trials, n):
        idx, cost = _draw(units, n, batch, rng)
        drawn = units.values[idx]
        p = binomial_p(np.nansum(drawn, axis=1).astype(int), np.sum(~np.isnan(drawn), axis=1))
        significant.append(p < alpha)
        costs.append(cost)
    return float(np.concatenate(significant).mean()), float(np.concatenate(costs).mean())


def ttest_power(a: Units, b: Units, n: int, trials: int, alpha: float, rng,
                joint: tuple | None = None) -> tuple[float, float]:
    """Power and mean cost of n units from each model: two-sided independent t-test; a worker in both
    models' draws is onboarded once (``joint``: ``_joint_workers(a, b)``, computed once by a caller of many n)."""
    significant, costs = [], []
    worker_a, worker_b, onboarding = joint or _joint_workers(a, b)
    for batch in _batches(trials, 2 * n):
        idx_a = rng.integers(0, len(a), (batch, n))
        idx_b = rng.integers(0, len(b), (batch, n))
        x, y = a.values[idx_a], b.values[idx_b]
        # Small resamples of binary ratings are often constant; scipy warns, and NaN p-values are handled below.
        # Student's test from the rows' means and SDs: ttest_ind's wrapper took 3 ms a call, most of a power curve
        # (its p-values differ from these by 5e-16 at most, and only p < alpha is read)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            p = stats.ttest_ind_from_stats(x.mean(axis=1), x.std(axis=1, ddof=1), n,
                                           y.mean(axis=1), y.std(axis=1, ddof=1), n).pvalue
        p = np.where(np.isnan(p), 1.0, p)  # both samples constant and equal: no evidence of a difference
        significant.append(p < alpha)
        costs.append(a.cost[idx_a].sum(axis=1) + b.cost[idx_b].sum(axis=1)
                     + _onboarding_cost(np.concatenate([worker_a[idx_a], worker_b[idx_b]], axis=1), onboarding))
    return float(np.concatenate(significant).mean()), float(np.concatenate(costs).mean())


def size_grid(available: int, max_multiple: float = 4.0, points: int = 24, min_n: int = 4) -> np.ndarray:
    top = max(min_n + 1, int(np.ceil(available * max_multiple)))
    return np.unique(np.round(np.geomspace(min_n, top, points)).astype(int))


def power_curve(a: Units, b: Units | None = None, sizes=None, trials: int = 400, alpha: float = 0.05,
                seed: int = 0, max_multiple: float = 4.0, progress=None, target: float | None = None) -> pd.DataFrame:
    """Power and mean worker time (seconds) per sample size: binomial when b is None, else t-test
    (n per model). ``extrapolated`` marks sizes beyond the collected data.

    With ``target``, the sizes between the last one whose power is below the target and the first that
    reaches it (down to size 1 when the first size already reaches it) are evaluated too (``refined``),
    so that ``time_to_significance`` finds the first size reaching the target to one unit instead of
    interpolating across a coarse grid."""
    rng = np.random.default_rng(seed)
    available = len(a) if b is None else min(len(a), len(b))
    sizes = size_grid(available, max_multiple) if sizes is None else np.asarray(sizes, int)

    joint = None if b is None else _joint_workers(a, b)

    def row(n: int, refined: bool) -> dict:
        power, cost = (binomial_power(a, n, trials, alpha, rng) if b is None
                       else ttest_power(a, b, n, trials, alpha, rng, joint))
        return {"n": int(n), "power": power, "time_s": cost, "extrapolated": bool(n > available),
                "refined": refined}

    rows = [row(n, False) for n in (progress(sizes) if progress else sizes)]
    if target is not None and rows:
        rows += _refine(rows, target, lambda n: row(n, True))
    return pd.DataFrame(rows).sort_values("n", kind="stable").reset_index(drop=True)


_SCAN = 16  # bisect a bracket down to this many sizes, then evaluate each (power is saw-toothed in n)


def _refine(rows: list[dict], target: float, evaluate) -> list[dict]:
    """Rows for the sizes inside the bracket where the running maximum of the power first reaches ``target``."""
    reached = np.maximum.accumulate([r["power"] for r in rows])
    hits = np.flatnonzero(reached >= target)
    if len(hits) == 0:
        return []
    low = rows[hits[0] - 1]["n"] if hits[0] > 0 else 0  # power below target at low (nothing at 0)
    high = rows[hits[0]]["n"]
    added = []
    while high - low > _SCAN:
        middle = evaluate((low + high) // 2)
        added.append(middle)
        low, high = (low, middle["n"]) if middle["power"] >= target else (middle["n"], high)
    return added + [evaluate(n) for n in range(low + 1, high)]


def time_to_significance(curve: pd.DataFrame, power: float = 0.8) -> dict:
    """Sample size and worker time at which the (running maximum of the) power first reaches ``power``.

    ``bound`` says what the figure is: "exact" when the size before it was evaluated too (a refined
    curve), "interpolated" when it is interpolated linearly between two grid sizes around the crossing,
    "upper" when the smallest size tried already reaches the target (the first such size may be smaller),
    "above N" when the target is never reached up to the largest size N (n and time are NaN)."""
    reached = np.maximum.accumulate(curve["power"].to_numpy())
    hits = np.flatnonzero(reached >= power)
    n, t = curve["n"].to_numpy(float), curve["time_s"].to_numpy(float)
    if len(hits) == 0:
        return {"n": np.nan, "time_s": np.nan, "reached": False, "extrapolated": False,
                "bound": f"above {int(n[-1])}" if len(n) else "no sizes"}
    i = hits[0]
    extrapolated = bool(curve["extrapolated"].iloc[i])
    if i == 0 or n[i] - n[i - 1] == 1:
        exact = i > 0 or n[0] == 1
        return {"n": n[i], "time_s": t[i], "reached": True, "extrapolated": extrapolated,
                "bound": "exact" if exact else "upper"}
    frac = (power - reached[i - 1]) / (reached[i] - reached[i - 1])
    return {"n": n[i - 1] + frac * (n[i] - n[i - 1]), "time_s": t[i - 1] + frac * (t[i] - t[i - 1]),
            "reached": True, "extrapolated": extrapolated, "bound": "interpolated"}


def chunk_win_rates(frame: pd.DataFrame, chunk_seconds: float = 45 * 60,
                    win_rate=None, order: str = "order") -> pd.DataFrame:
    """Smith App. E: split time-ordered units into chunks of ``chunk_seconds`` of worker time (cumulative
    ``cost``) and compute a win rate per chunk.

    ``frame`` has columns ``order`` (time order), ``cost`` and whatever ``win_rate(chunk) -> float`` needs
    (default: mean of ``value`` ignoring NaN ties, the binomial win rate). Units without a cost cannot be
    chunked and raise ValueError.
    """
    if frame["cost"].isna().any():
        raise ValueError("chunking by worker time needs a duration for every unit")
    frame = frame.sort_values(order, kind="stable")
    chunk = (frame["cost"].cumsum().to_numpy() - 1e-9) // chunk_seconds
    win_rate = win_rate or (lambda c: float(np.nanmean(c["value"])) if c["value"].notna().any() else np.nan)
    rows = [{"chunk": int(k), "n": len(part), "time_s": float(part["cost"].sum()), "win_rate": win_rate(part)}
            for k, part in frame.groupby(chunk, sort=True)]
    return pd.DataFrame(rows, columns=["chunk", "n", "time_s", "win_rate"])


def combo_units(turn: Units, dialog: Units, ratio: tuple[int, int] = (1, 5), size: int | None = None,
                seed: int = 0) -> Units:
    """Smith Table 3 "PW combo": a pool drawing PW-Turn and PW-Dialog comparisons at ``ratio``
    (turn : dialog), built by resampling each technique to its share of ``size`` units."""
    rng = np.random.default_rng(seed)
    size = size or (len(turn) + len(dialog))
    k_turn = int(round(size * ratio[0] / sum(ratio)))
    parts = []
    offset = 0
    for units, k in ((turn, k_turn), (dialog, size - k_turn)):
        if k == 0:
            continue
        idx = rng.integers(0, len(units), k)
        parts.append((units.values[idx], units.cost[idx], units.worker[idx] + offset, units.onboarding))
        offset += len(units.onboarding)
    return Units(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                 np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts]))
