"""Rating-scale designs (Santhanam et al. 2020): Likert, rank-based and biased magnitude estimation
(RME, BME) and best-worst scaling (BWS); scores, ICC consistency / agreement and Spearman between
criteria. Record conventions: docs/single_model_analysis.md.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats

from parlai_dialeval.analysis.intervals import t_interval

DESIGN_SCALES = ("likert", "magnitude", "best_worst")
PRIOR_EXPERIENCE_KEYS = ("prior_experience_evaluating", "prior_experience_agents")
# A rated target is one model's response to one item (context): several models answer the same item.
TARGET = ["conversation_id", "model"]


def design_name(ratings: pd.DataFrame) -> str:
    """Likert, RME (every magnitude rating's reference is 100), BME (any other reference) or BWS."""
    scales = set(ratings["scale"])
    if len(scales) != 1 or not scales <= set(DESIGN_SCALES):
        raise ValueError(f"a design holds one scale out of {DESIGN_SCALES}, got {sorted(scales)}")
    scale = scales.pop()
    if scale == "magnitude":
        return "RME" if (ratings["reference_value"] == 100).all() else "BME"
    return {"likert": "Likert", "best_worst": "BWS"}[scale]


def log_normalise(value, reference) -> np.ndarray:
    """Magnitude estimates on a log scale relative to the reference (Bard et al. 1996, as Santhanam
    et al. do): log10((value + 1) / (reference + 1)); the +1 keeps the scale's allowed 0 finite."""
    value, reference = np.asarray(value, float), np.asarray(reference, float)
    if np.any(np.isnan(reference)) or np.any(reference <= -1):
        raise ValueError("magnitude ratings need a reference_value above -1 for log normalisation")
    return np.log10((value + 1) / (reference + 1))


def normalised(ratings: pd.DataFrame) -> pd.DataFrame:
    """Ratings with ``score``: the value, log-normalised for magnitude estimation."""
    frame = ratings.copy()
    frame["score"] = frame["value"].astype(float)
    magnitude = (frame["scale"] == "magnitude").to_numpy()
    if magnitude.any():
        frame.loc[magnitude, "score"] = log_normalise(frame.loc[magnitude, "value"],
                                                      frame.loc[magnitude, "reference_value"])
    return frame


def bws_scores(ratings: pd.DataFrame, by=("conversation_id", "model", "criterion")) -> pd.DataFrame:
    """Best-worst counting scores (Kiritchenko and Mohammad 2017): (#best - #worst) / #appearances."""
    frame = ratings.assign(best=ratings["value"] == 1, worst=ratings["value"] == -1)
    counts = frame.groupby(list(by)).agg(best=("best", "sum"), worst=("worst", "sum"), appearances=("value", "size"))
    counts["score"] = (counts["best"] - counts["worst"]) / counts["appearances"]
    return counts.reset_index()


def item_scores(ratings: pd.DataFrame, by=("conversation_id", "model", "criterion")) -> pd.DataFrame:
    """Per rated response (or per model) and criterion: mean normalised score (Likert, ME) or counting score (BWS)."""
    if (ratings["scale"] == "best_worst").all():
        return bws_scores(ratings, by)[list(by) + ["score", "appearances"]].rename(columns={"appearances": "n"})
    frame = normalised(ratings)
    return frame.groupby(list(by))["score"].agg(score="mean", sd="std", n="size").reset_index()


def model_scores(ratings: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per model and criterion: the score over all its ratings (``item_scores`` by model), plus the unit
    of analysis, the rated response (one model's answer to one item: its ratings by several workers are
    not independent), its count and a Student t interval of the mean over responses."""
    pooled = item_scores(ratings, by=("model", "criterion"))
    per_response = item_scores(ratings)
    spread = (per_response.groupby(["model", "criterion"])["score"]
              .agg(n_responses="size", ci=lambda v: t_interval(v, alpha)).reset_index())
    spread["ci_low"], spread["ci_high"] = spread["ci"].str[0], spread["ci"].str[1]
    return pooled.merge(spread.drop(columns="ci"), on=["model", "criterion"], how="left")


def icc(ratings: pd.DataFrame) -> dict:
    """ICC over rated responses (targets: item and model) and workers (raters): agreement = ICC(A)
    (two-way random, absolute; Shrout-Fleiss ICC2), single-rater and average-of-raters forms; consistency =
    ICC(C) (two-way mixed; ICC3); p of the F test of no target variance (MSR/MSE).

    The formulas need a complete items x workers table, so items some worker did not rate are left out;
    ``n_items`` and ``n_items_dropped`` say how many.
    """
    frame = normalised(ratings)
    frame["_target"] = frame.groupby(TARGET, dropna=False).ngroup()
    table = frame.pivot_table(index="_target", columns="worker_id", values="score", aggfunc="mean")
    complete = table.dropna()
    result = {"n_items": len(complete), "n_items_dropped": len(table) - len(complete), "n_raters": table.shape[1]}
    if len(complete) < 2 or table.shape[1] < 2:
        return result | {k: np.nan for k in ("icc_c", "icc_c_p", "icc_a", "icc_a_p", "icc_ck", "icc_ak")}
    return result | two_way_icc(complete.to_numpy(float))


def two_way_icc(table: np.ndarray) -> dict:
    """Shrout and Fleiss (1979) ICC(2,1), ICC(3,1), ICC(2,k), ICC(3,k) of a complete targets x raters table
    from its two-way ANOVA mean squares (McGraw and Wong 1996's A and C forms). Hand-written: six lines of
    formulas instead of pingouin and its seaborn/xarray dependencies for this one call."""
    n, k = table.shape
    grand = table.mean()
    rows, cols = table.mean(axis=1, keepdims=True), table.mean(axis=0, keepdims=True)
    ms_rows = k * ((rows - grand) ** 2).sum() / (n - 1)
    ms_cols = n * ((cols - grand) ** 2).sum() / (k - 1)
    ms_err = ((table - rows - cols + grand) ** 2).sum() / ((n - 1) * (k - 1))
    p = float(stats.f.sf(ms_rows / ms_err, n - 1, (n - 1) * (k - 1))) if ms_err > 0 else np.nan

    def ratio(top: float, bottom: float) -> float:  # no ICC where the responses do not differ at all: not -inf
        return float(top / bottom) if bottom > 0 else np.nan

    return {"icc_c": ratio(ms_rows - ms_err, ms_rows + (k - 1) * ms_err), "icc_c_p": p,
            "icc_a": ratio(ms_rows - ms_err, ms_rows + (k - 1) * ms_err + k * (ms_cols - ms_err) / n), "icc_a_p": p,
            "icc_ck": ratio(ms_rows - ms_err, ms_rows), "icc_ak": ratio(ms_rows - ms_err, ms_rows + (ms_cols - ms_err) / n)}


def criteria_spearman(ratings: pd.DataFrame) -> pd.DataFrame:
    """Spearman rho between every two criteria, over each worker's ratings of the same response (Santhanam
    Table 9) and over the responses' mean scores."""
    frame = normalised(ratings)
    per_rating = frame.pivot_table(index=TARGET + ["worker_id"], columns="criterion", values="score",
                                   aggfunc="mean")
    per_item = frame.pivot_table(index=TARGET, columns="criterion", values="score", aggfunc="mean")
    rows = []
    for a, b in itertools.combinations(sorted(per_rating.columns), 2):
        for level, table in (("rating", per_rating), ("item", per_item)):
            pair = table[[a, b]].dropna()
            rho, p = stats.spearmanr(pair[a], pair[b]) if len(pair) > 2 else (np.nan, np.nan)
            rows.append({"criterion_a": a, "criterion_b": b, "level": level, "rho": rho, "p": p, "n": len(pair)})
    return pd.DataFrame(rows, columns=["criterion_a", "criterion_b", "level", "rho", "p", "n"])


def worker_groups(ratings: pd.DataFrame) -> pd.DataFrame:
    """One row per worker: total time (sum of rating durations, else meta.task_duration), whether it is
    above the design's average (blank where the time is unknown), and the prior-experience answers found in
    rating meta."""
    frame = ratings.copy()
    meta = frame["meta"].map(lambda m: m if isinstance(m, dict) else {})
    # seconds, or unknown (NaN) where a record has none or not a number: a float column, so that it fills time_s
    frame["_task_duration"] = pd.to_numeric(meta.map(lambda m: m.get("task_duration")), errors="coerce")
    for key in PRIOR_EXPERIENCE_KEYS:
        frame[key] = meta.map(lambda m, k=key: m.get(k))
    grouped = frame.groupby("worker_id")
    out = pd.DataFrame({"time_s": grouped["duration"].sum(min_count=1)})
    out["time_s"] = out["time_s"].fillna(grouped["_task_duration"].max())
    if out["time_s"].notna().any():
        # a worker whose time is unknown is in neither group (NaN > mean would put it among the fast ones)
        above = out["time_s"] > out["time_s"].mean()
        out["above_average_time"] = above.astype(object).where(out["time_s"].notna())
    for key in PRIOR_EXPERIENCE_KEYS:
        answers = grouped[key].first()
        if answers.notna().any():
            out[key] = answers
    return out.reset_index()
