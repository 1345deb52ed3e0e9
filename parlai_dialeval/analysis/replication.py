"""Self-replication of a live-chat evaluation (Ji et al. 2022, section 4.2): how well two independent runs
agree, at the system level (Pearson, Spearman, Kendall per statement and overall) and in their pairwise
significance conclusions. Pure functions over the tables ``analyze_live_chat`` writes."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from parlai_dialeval.errors import DialevalError

LEVELS = (0.05, 0.1)


def common_models(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """Models scored in both runs, in run A's order."""
    in_b = set(b["model"])
    return [m for m in a["model"] if m in in_b]


def score_correlations(a: pd.DataFrame, b: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per column (overall and each statement): Pearson, Spearman and Kendall between the runs' system
    scores over the models both runs scored."""
    models = common_models(a, b)
    if len(models) < 3:
        raise DialevalError(f"the runs share {len(models)} model(s) ({', '.join(models) or 'none'}); "
                            "correlation needs at least 3")
    left, right = a.set_index("model").loc[models], b.set_index("model").loc[models]
    rows = []
    for column in columns:
        if column not in left.columns or column not in right.columns:
            continue
        x, y = left[column].to_numpy(float), right[column].to_numpy(float)
        with warnings.catch_warnings():  # a constant run's correlation is nan, and the report says why in words
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            rows.append({"score": column, "n_models": len(models), "pearson": stats.pearsonr(x, y).statistic,
                         "spearman": stats.spearmanr(x, y).statistic, "kendall": stats.kendalltau(x, y).statistic})
    return pd.DataFrame(rows)


def conclusions(significance: pd.DataFrame, models: list[str], level: float, column: str = "p_value") -> dict:
    """For each unordered pair (a, b): 'a' if a beat b at p < level, 'b' if b beat a, else 'none'."""
    p = significance.set_index(["model_a", "model_b"])[column]
    out = {}
    for a, b in itertools.combinations(models, 2):
        ab, ba = p.get((a, b), np.nan), p.get((b, a), np.nan)
        out[(a, b)] = a if ab < level else b if ba < level else "none"
    return out


def significance_agreement(sig_a: pd.DataFrame, sig_b: pd.DataFrame, models: list[str],
                           levels=LEVELS, column: str = "p_value") -> pd.DataFrame:
    """Share of model pairs for which both runs draw the same conclusion (a > b, b > a, or no
    significant difference), per significance level: the paper's 82% (p < 0.05) and 84% (p < 0.1)."""
    rows = []
    for level in levels:
        left, right = conclusions(sig_a, models, level, column), conclusions(sig_b, models, level, column)
        same = sum(left[pair] == right[pair] for pair in left)
        opposite = sum(left[pair] != "none" and right[pair] != "none" and left[pair] != right[pair] for pair in left)
        rows.append({"level": level, "pairs": len(left), "same_conclusion": same,
                     "share": same / len(left) if left else np.nan,
                     "significant_in_a": sum(v != "none" for v in left.values()),
                     "significant_in_b": sum(v != "none" for v in right.values()),
                     "opposite_conclusions": opposite})
    return pd.DataFrame(rows)


def pair_table(sig_a: pd.DataFrame, sig_b: pd.DataFrame, models: list[str], level: float,
               column: str = "p_value") -> pd.DataFrame:
    left, right = conclusions(sig_a, models, level, column), conclusions(sig_b, models, level, column)
    return pd.DataFrame([{"model_1": a, "model_2": b, "run_a": left[(a, b)], "run_b": right[(a, b)],
                          "same": left[(a, b)] == right[(a, b)]} for a, b in left])
