"""Agreement while a study runs and per worker, as pure functions (the dashboard's integrity page and the evidence
table read them; analysis/agreement.py holds the paper-level statistics of the reports).

- Ratings: Krippendorff's alpha (interval, ``interval_alpha``) per criterion over the units rated by two
  or more workers, and per worker the alpha between them and the mean of the others on the units they share. A
  unit is a rated item (the same conversation or item, turn, response and criterion) where workers share items
  (scale designs, SM-Turn over shared conversations); where each worker rates their own conversations (live
  chat) it is a model and criterion, each worker's value their mean rating of that model.
- Pairwise votes: per worker the share of decided votes that go with the majority of the other workers on the same
  item and question (leave-one-worker-out, ties and even splits left out), overall the same share and
  Krippendorff's alpha (nominal) per question.
- Gold items: per worker how many of their silent gold items (``check.kind`` gold) they got right.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

MIN_UNITS = 3  # shared units below which a worker's alpha says nothing


def interval_alpha(matrix: np.ndarray) -> float:
    """Krippendorff's alpha with the interval metric of a raters x units matrix (NaN: not rated), NaN where it is
    undefined (fewer than two units rated twice, or one value everywhere). Equal to the ``krippendorff`` package's
    (tests/test_rater_integrity.py), in closed form: with the distance (c - k)^2 the coincidences reduce to each
    unit's sum and sum of squares, where the package builds a values x values table per unit, as large as the
    number of distinct values (minutes on a study of 25,000 workers' mean ratings)."""
    if matrix.ndim != 2:
        return np.nan
    present = np.isfinite(matrix)
    rated = present.sum(axis=0)
    pairable = rated >= 2
    if pairable.sum() < 2:
        return np.nan
    values = matrix[:, pairable]
    kept = present[:, pairable]
    values = np.where(kept, values - values[kept].mean(), 0.0)  # centred: the sums of squares below lose no digits
    m, sums, squares = rated[pairable], values.sum(axis=0), (values ** 2).sum(axis=0)
    n = m.sum()
    within = (2 * (m * squares - sums ** 2) / (m - 1)).sum()  # sum over units of (v_i - v_j)^2 / (m_u - 1), i != j
    total = 2 * (n * squares.sum() - sums.sum() ** 2)  # (v_c - v_k)^2 over every ordered pair of pairable values
    if not total > 0:
        return np.nan  # one value everywhere: agreement is undefined, not perfect
    return float(1 - (n - 1) * within / total)


def rating_units(ratings: pd.DataFrame) -> pd.DataFrame:
    """The ratings as (worker_id, criterion, unit, value): per item where items are shared by workers, else per
    model (each worker's mean), as the module docstring says."""
    if ratings.empty:
        return pd.DataFrame(columns=["worker_id", "criterion", "unit", "value"])
    frame = ratings.assign(value=pd.to_numeric(ratings["value"], errors="coerce"))
    frame = frame[np.isfinite(frame["value"])]
    item = [c for c in ("conversation_id", "turn_index", "model", "criterion") if c in frame.columns]
    units = frame[item[0]].astype(str)
    for column in item[1:]:  # vectorised: a big study holds millions of ratings
        units = units + "|" + frame[column].astype(str)
    shared = frame.assign(unit=units).groupby("unit")["worker_id"].nunique()
    if (shared >= 2).sum() >= MIN_UNITS:
        return frame.assign(unit=units)[["worker_id", "criterion", "unit", "value"]]
    means = frame.groupby(["worker_id", "model", "criterion"], as_index=False)["value"].mean()
    return means.assign(unit=means["model"].astype(str) + "|" + means["criterion"].astype(str))[
        ["worker_id", "criterion", "unit", "value"]]


def rating_agreement(ratings: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per criterion: units rated by two or more workers, workers, alpha; per worker: units shared with others,
    alpha with the others' mean)."""
    units = rating_units(ratings)
    if units.empty:
        return (pd.DataFrame(columns=["criterion", "units", "workers", "alpha"]),
                pd.DataFrame(columns=["worker_id", "shared_units", "rating_alpha"]))
    overall = []
    for criterion, part in units.groupby("criterion", sort=True):
        matrix = part.pivot_table(index="worker_id", columns="unit", values="value", aggfunc="mean")
        shared = int((matrix.notna().sum() >= 2).sum())
        overall.append({"criterion": criterion, "units": shared, "workers": int(matrix.shape[0]),
                        "alpha": interval_alpha(matrix.to_numpy(dtype=float)) if shared else np.nan})
    keyed = units.assign(key=units["criterion"].astype(str) + "|" + units["unit"].astype(str))
    matrix = keyed.pivot_table(index="worker_id", columns="key", values="value", aggfunc="mean")
    values = matrix.to_numpy(dtype=float)
    present = np.isfinite(values)
    totals, counts = np.nansum(values, axis=0), present.sum(axis=0)
    per_worker = []
    for i, worker in enumerate(matrix.index):
        with np.errstate(invalid="ignore", divide="ignore"):
            others = (totals - np.where(present[i], values[i], 0)) / (counts - present[i])
        both = present[i] & np.isfinite(others)
        alpha = interval_alpha(np.vstack([values[i, both], others[both]])) if both.sum() >= MIN_UNITS else np.nan
        per_worker.append({"worker_id": worker, "shared_units": int(both.sum()), "rating_alpha": alpha})
    return (pd.DataFrame(overall, columns=["criterion", "units", "workers", "alpha"]),
            pd.DataFrame(per_worker, columns=["worker_id", "shared_units", "rating_alpha"]))


def majority_agreement(comparisons: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per question: decided votes with a leave-one-out majority, their share with it, Krippendorff's alpha;
    per worker: those votes and their share with the majority)."""
    from parlai_dialeval.analysis.agreement import item_keys, nominal_alpha, worker_votes

    columns = (["question", "votes", "with_majority", "alpha"], ["worker_id", "majority_votes", "with_majority"])
    if comparisons.empty:
        return pd.DataFrame(columns=columns[0]), pd.DataFrame(columns=columns[1])
    votes = worker_votes(comparisons)
    votes = votes.assign(question=votes["question"].fillna("") if "question" in votes else "")
    keys = ["question"] + item_keys(votes)
    side = votes["choice"].map({"a": 1, "b": -1, "tie": 0}).astype(float)
    frame = votes.assign(side=side, item=votes.groupby(keys, dropna=False, sort=False).ngroup())
    # each worker once per item: the sign of their votes' sum there
    per = frame.groupby(["item", "worker_id"], sort=False)["side"].sum().apply(np.sign).rename("own").reset_index()
    total = per.groupby("item")["own"].sum()
    per["others"] = np.sign(per["item"].map(total) - per["own"])
    decided = per[(per["own"] != 0) & (per["others"] != 0)]
    decided = decided.assign(agree=(decided["own"] == decided["others"]).astype(float))
    worker = decided.groupby("worker_id")["agree"].agg(["size", "mean"]).reset_index()
    worker.columns = columns[1]
    question = frame.groupby("item")["question"].first()
    overall = []
    for name, part in decided.assign(question=decided["item"].map(question)).groupby("question", sort=True):
        overall.append({"question": name, "votes": int(len(part)), "with_majority": float(part["agree"].mean()),
                        "alpha": nominal_alpha(comparisons[comparisons.get("question", pd.Series("", index=comparisons.index))
                                                           .fillna("") == name])})
    return pd.DataFrame(overall, columns=columns[0]), worker


def gold_accuracy(checks: pd.DataFrame) -> pd.DataFrame:
    """Per worker: gold items answered and right (a rating screen's records of one item count once)."""
    return _items(checks, "gold")


def attention_results(checks: pd.DataFrame) -> pd.DataFrame:
    """Per worker: attention checks answered and passed (one item's records count once)."""
    return _items(checks, "attention")


def _items(checks: pd.DataFrame, kind: str) -> pd.DataFrame:
    columns = ["worker_id", f"{kind}_items", f"{kind}_right"]
    if checks.empty or "check" not in checks.columns:
        return pd.DataFrame(columns=columns)
    def column(name: str) -> list:
        if name not in checks.columns:
            return [None] * len(checks)
        return [None if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in checks[name]]

    rows = []
    for record, worker, assignment, item, conversation, turn in zip(
            checks["check"], checks["worker_id"], column("assignment_id"), column("item_id"),
            column("conversation_id"), column("turn_index")):
        if isinstance(record, dict) and record.get("kind") == kind:
            key = (worker, str(assignment), str(record.get("item") or item or conversation), str(turn))
            rows.append((key, worker, bool(record.get("passed"))))
    if not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows, columns=["key", "worker_id", "passed"]).drop_duplicates("key")
    out = frame.groupby("worker_id")["passed"].agg(["size", "sum"]).reset_index()
    out.columns = columns
    return out.astype({columns[1]: int, columns[2]: int})
