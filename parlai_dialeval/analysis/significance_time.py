"""Crowdsourcing time needed for a significant result (Smith et al. 2022, 4.4.3 and Appendices E-G).

Collected ratings (with the seconds each took) are resampled at growing sample sizes; at each size we
test every resample (two-sided binomial test for pairwise techniques, two-sided independent t-test for
single-model ones, alpha 0.05) and record the fraction that is significant (the power) and the mean
worker time the resample cost, onboarding included once per distinct worker. The time needed is the
time at which the power first reaches the target (0.8 by default), interpolated between sample sizes.
Smith et al. do not state their stopping criterion; a power target makes the estimate comparable with a
power calculation (statsmodels), which the tests check.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
import numpy as np
import pandas as pd
from scipy import stats

from parlai_dialeval.protocols import criterion_of


@dataclass
class Units:
    """Resampling units of one model (t-test) or one model pair (binomial).

    values: outcomes (binomial: 1 first model wins, 0 second wins, NaN tie; t-test: scores);
    cost: seconds each unit took (NaN when unknown); worker: integer worker codes;
    onboarding: seconds of onboarding per worker code (charged once per distinct worker in a sample).
    """

    values: np.ndarray
    cost: np.ndarray
    worker: np.ndarray
    onboarding: np.ndarray

    def __post_init__(self):
        self.values = np.asarray(self.values, float)
        self.cost = np.asarray(self.cost, float)
        self.worker = np.asarray(self.worker, int)
        self.onboarding = np.asarray(self.onboarding, float)
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
        return cls(values, cost, codes, [float(per_worker.get(w, default)) for w in uniques])


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
    cost = units.cost[idx].sum(axis=1)
    if units.onboarding.any():
        workers = np.sort(units.worker[idx], axis=1)
        first = np.ones_like(workers, bool)  # first occurrence of each worker in a sorted row
        first[:, 1:] = workers[:, 1:] != workers[:, :-1]
        cost = cost + (units.onboarding[workers] * first).sum(axis=1)
    return idx, cost


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


def ttest_power(a: Units, b: Units, n: int, trials: int, alpha: float, rng) -> tuple[float, float]:
    """Power and mean cost of n units from each model: two-sided independent t-test."""
    significant, costs = [], []
    for batch in _batches(trials, 2 * n):
        idx_a, cost_a = _draw(a, n, batch, rng)
        idx_b, cost_b = _draw(b, n, batch, rng)
        # Small resamples of binary ratings are often constant; scipy warns, and NaN p-values are handled below.
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            p = stats.ttest_ind(a.values[idx_a], b.values[idx_b], axis=1).pvalue
        p = np.where(np.isnan(p), 1.0, p)  # both samples constant and equal: no evidence of a difference
        significant.append(p < alpha)
        costs.append(cost_a + cost_b)
    return float(np.concatenate(significant).mean()), float(np.concatenate(costs).mean())


def size_grid(available: int, max_multiple: float = 4.0, points: int = 24, min_n: int = 4) -> np.ndarray:
    top = max(min_n + 1, int(np.ceil(available * max_multiple)))
    return np.unique(np.round(np.geomspace(min_n, top, points)).astype(int))


def power_curve(a: Units, b: Units | None = None, sizes=None, trials: int = 400, alpha: float = 0.05,
                seed: int = 0, max_multiple: float = 4.0, progress=None) -> pd.DataFrame:
    """Power and mean worker time (seconds) per sample size: binomial when b is None, else t-test
    (n per model). ``extrapolated`` marks sizes beyond the collected data."""
    rng = np.random.default_rng(seed)
    available = len(a) if b is None else min(len(a), len(b))
    sizes = size_grid(available, max_multiple) if sizes is None else np.asarray(sizes, int)
    rows = []
    for n in (progress(sizes) if progress else sizes):
        power, cost = (binomial_power(a, n, trials, alpha, rng) if b is None
                       else ttest_power(a, b, n, trials, alpha, rng))
        rows.append({"n": int(n), "power": power, "time_s": cost, "extrapolated": bool(n > available)})
    return pd.DataFrame(rows)


def time_to_significance(curve: pd.DataFrame, power: float = 0.8) -> dict:
    """Sample size and worker time at which the (running maximum of the) power first reaches ``power``,
    linearly interpolated between the two sizes around the crossing; NaN when never reached."""
    reached = np.maximum.accumulate(curve["power"].to_numpy())
    hits = np.flatnonzero(reached >= power)
    if len(hits) == 0:
        return {"n": np.nan, "time_s": np.nan, "reached": False, "extrapolated": False}
    i = hits[0]
    n, t = curve["n"].to_numpy(float), curve["time_s"].to_numpy(float)
    if i == 0:
        return {"n": n[0], "time_s": t[0], "reached": True, "extrapolated": bool(curve["extrapolated"].iloc[0])}
    frac = (power - reached[i - 1]) / (reached[i] - reached[i - 1])
    return {"n": n[i - 1] + frac * (n[i] - n[i - 1]), "time_s": t[i - 1] + frac * (t[i] - t[i - 1]),
            "reached": True, "extrapolated": bool(curve["extrapolated"].iloc[i])}


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


# ---------------------------------------------------------------- from canonical data to resampling units

SMITH_PAIRWISE = ("pw_turn", "pw_dialog")  # protocols whose wordings name a metric
TECHNIQUES = ("pw_turn", "pw_dialog", "pw_dialog_self", "sm_turn", "sm_dialog")


@dataclass
class Sample:
    """One technique, metric and model pair, ready for resampling (b is None for binomial tests)."""

    technique: str
    metric: str
    model_a: str
    model_b: str
    a: Units
    b: Units | None
    chunks: pd.DataFrame  # order, cost, value (and model for single-model techniques)

    @property
    def test(self) -> str:
        return "binomial" if self.b is None else "t-test"


def comparison_metric(comparisons: pd.DataFrame) -> pd.Series:
    """meta.criterion, else the criterion of the Smith PW-Turn / PW-Dialog question (wordings from
    parlai_dialeval.protocols), else the question text as its own metric ('overall' without one)."""
    named = comparisons["meta"].map(lambda m: m.get("criterion") if isinstance(m, dict) else None)
    question = comparisons["question"].fillna("")
    mapped = question.map(lambda q: criterion_of(q, SMITH_PAIRWISE) or q.strip() or "overall")
    return named.where(named.notna(), mapped).astype(str)


def _meta(value, key):
    return value.get(key) if isinstance(value, dict) else None


def onboarding_seconds(data, technique: str, default: float = 0.0) -> tuple[dict, float]:
    """(worker id -> onboarding seconds from records' meta.onboarding_duration, seconds for other workers:
    the study's meta.onboarding_duration (seconds, or an object keyed by technique), else ``default``)."""
    study_value = default
    for study in data.studies:
        value = _meta(study.get("meta"), "onboarding_duration")
        if isinstance(value, dict):
            value = value.get(technique)
        if value is not None:
            study_value = float(value)
    seconds: dict = {}
    for frame, worker in ((data.conversations, "worker_id"), (data.comparisons, "worker_id")):
        for w, meta in zip(frame[worker], frame["meta"]):
            value = _meta(meta, "onboarding_duration")
            if w is not None and value is not None:
                seconds[w] = float(value)
    return seconds, study_value


def _spread(frame: pd.DataFrame, conversation_seconds: pd.Series, key: str, group: list[str]) -> np.ndarray:
    """Each record's own duration, else its conversation's duration shared among the records of ``group``."""
    share = frame.groupby(group)[key].transform("size").to_numpy(float)
    spread = frame[key].map(conversation_seconds).to_numpy(float) / share
    own = pd.to_numeric(frame["duration"], errors="coerce").to_numpy(float)
    return np.where(np.isnan(own), spread, own)


def pairwise_samples(data, turns: tuple[int, int] | None = (2, 6), onboarding_default: float = 0.0) -> list[Sample]:
    """PW-Turn (Bot Speaker turns ``turns``), PW-Dialog and self-chat PW-Dialog, per metric and model pair:
    outcome 1 when the pair's first model (sorted by name) wins, 0 when it loses, NaN for worker ties.
    Automatic ties and onboarding items are left out (no worker time bought a judgement)."""
    from parlai_dialeval.analysis.pairwise import split_onboarding, turn_numbers

    comparisons, _ = split_onboarding(data.comparisons)
    comparisons = comparisons[~comparisons["automatic"].eq(True)].copy()
    if comparisons.empty:
        return []
    conv = data.conversations.set_index("id") if len(data.conversations) else None
    seconds = conv["duration"] if conv is not None else pd.Series(dtype=float)
    comparisons["metric"] = comparison_metric(comparisons).to_numpy()
    comparisons["_order"] = np.arange(len(comparisons))
    per_turn = comparisons[comparisons["turn_index"].notna()].copy()
    if len(per_turn):
        per_turn["turn_number"] = turn_numbers(per_turn)
        if turns is not None:
            per_turn = per_turn[per_turn["turn_number"].between(*turns)]
        per_turn["cost"] = _spread(per_turn, seconds, "item_id", ["item_id", "metric"])
        per_turn["technique"] = "pw_turn"
    dialog = comparisons[comparisons["turn_index"].isna()].copy()
    if len(dialog):
        flagged = dialog["meta"].map(lambda m: bool(_meta(m, "self_chat"))).to_numpy(bool)
        both_self = np.zeros(len(dialog), bool)
        if conv is not None:
            is_self = (conv["task"].eq("self_chat") | conv["worker_id"].isna())
            both_self = np.logical_and.reduce([dialog[c].map(is_self).fillna(False).to_numpy(bool)
                                               for c in ("conversation_a", "conversation_b")])
        self_chat = flagged | both_self
        dialog["technique"] = np.where(self_chat, "pw_dialog_self", "pw_dialog")
        own = pd.to_numeric(dialog["duration"], errors="coerce").to_numpy(float)
        # Human-model conversations are bought too (Smith App. F): amortise each over the comparisons using it.
        collect = np.zeros(len(dialog))
        for column in ("conversation_a", "conversation_b"):
            uses = dialog.groupby(column)[column].transform("size").to_numpy(float)
            collect += np.nan_to_num(dialog[column].map(seconds).to_numpy(float)) / uses
        dialog["cost"] = own + np.where(self_chat, 0.0, collect)
    samples = []
    for frame in (f for f in (per_turn, dialog) if len(f)):
        for (technique, metric), group in frame.groupby(["technique", "metric"], sort=True):
            onboarding = onboarding_seconds(data, technique, onboarding_default)
            pairs = group.apply(lambda r: tuple(sorted((r["model_a"], r["model_b"]))), axis=1)
            for (first, second), part in group.groupby(pairs, sort=True):
                winner = np.where(part["choice"] == "a", part["model_a"],
                                  np.where(part["choice"] == "b", part["model_b"], None))
                value = np.where(winner == first, 1.0, np.where(winner == second, 0.0, np.nan))
                units = Units.build(value, part["cost"], part["worker_id"], onboarding)
                chunks = pd.DataFrame({"order": part["_order"].to_numpy(), "cost": part["cost"].to_numpy(float),
                                       "value": value})
                samples.append(Sample(technique, metric, first, second, units, None, chunks))
    return samples


def single_model_samples(data, turns: tuple[int, int] | None = (3, 6), onboarding_default: float = 0.0,
                         pairs=None) -> list[Sample]:
    """SM-Turn (each binary rating of Bot Speaker turns ``turns``, App. F) and SM-Dialog (each Likert
    score), per criterion and model pair, for two-sided independent t-tests."""
    from parlai_dialeval.analysis import single_model as sm

    conv_seconds = (data.conversations.set_index("id")["duration"] if len(data.conversations)
                    else pd.Series(dtype=float))
    ratings = data.ratings.assign(_order=np.arange(len(data.ratings)))
    turn = sm.select_turns(sm.sm_turn_ratings(ratings), turns)
    turn = turn.assign(cost=_spread(turn, conv_seconds, "conversation_id", ["conversation_id", "criterion"]))
    dialog = sm.sm_dialog_ratings(ratings)
    dialog = dialog.assign(cost=_spread(dialog, conv_seconds, "conversation_id", ["conversation_id", "criterion"]))
    samples = []
    for technique, frame in (("sm_turn", turn), ("sm_dialog", dialog)):
        onboarding = onboarding_seconds(data, technique, onboarding_default)
        for criterion, group in frame.groupby("criterion", sort=True):
            samples += _ttest_samples(technique, criterion, group, onboarding,
                                      pairs or sm.model_pairs(group["model"]))
    return samples


def _ttest_samples(technique, metric, frame, onboarding, pairs) -> list[Sample]:
    out = []
    for first, second in pairs:
        a, b = frame[frame["model"] == first], frame[frame["model"] == second]
        if len(a) < 2 or len(b) < 2:
            continue
        build = lambda part: Units.build(part["value"], part["cost"], part["worker_id"], onboarding)  # noqa: E731
        both = pd.concat([a, b])
        chunks = pd.DataFrame({"order": both["_order"].to_numpy(), "cost": both["cost"].to_numpy(float),
                               "value": both["value"].to_numpy(float), "model": both["model"].to_numpy()})
        out.append(Sample(technique, metric, first, second, build(a), build(b), chunks))
    return out


def combination_samples(data, weights, turns: tuple[int, int] | None = (3, 6), onboarding_default: float = 0.0,
                        pairs=None) -> list[Sample]:
    """Smith App. G: per conversation, the weighted SM-Turn WTA + rescaled SM-Dialog score, one sample per
    weighting (technique ``sm_combo w_turn:w_dialog``); cost = the conversation's duration."""
    from parlai_dialeval.analysis import single_model as sm

    ratings = data.ratings.assign(_order=np.arange(len(data.ratings)))
    turn = sm.select_turns(sm.sm_turn_ratings(ratings), turns)
    dialog = sm.sm_dialog_ratings(ratings)
    if turn.empty or dialog.empty:
        return []
    conv = data.conversations.set_index("id") if len(data.conversations) else None
    onboarding = onboarding_seconds(data, "sm_turn", onboarding_default)
    order = dialog.groupby("conversation_id")["_order"].min()
    samples = []
    for w_turn, w_dialog in weights:
        scores = sm.combined_scores(turn, dialog, w_turn, w_dialog)
        scores["_order"] = scores["conversation_id"].map(order).to_numpy()
        scores["cost"] = (scores["conversation_id"].map(conv["duration"]).to_numpy(float) if conv is not None
                          else np.full(len(scores), np.nan))
        workers = dialog.groupby("conversation_id")["worker_id"].first()
        scores["worker_id"] = scores["conversation_id"].map(workers).to_numpy()
        for criterion, group in scores.groupby("criterion", sort=True):
            samples += _ttest_samples(f"sm_combo {w_turn:g}:{w_dialog:g}", criterion, group, onboarding,
                                      pairs or sm.model_pairs(group["model"]))
    return samples
