"""Single-model evaluations (Smith et al. 2022): SM-Turn success rates and SM-Dialog Likert scores.

SM-Turn: binary engaging / humanlike / interesting ticks after every bot message (see
docs/single_model_analysis.md for the record conventions). SM-Dialog: 1-5 Likert ratings of the whole
conversation on the same three criteria. Pure functions: DataFrames in, DataFrames out.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from parlai_dialeval.analysis.intervals import t_interval

SM_CRITERIA = ("engaging", "humanlike", "interesting")
DEFAULT_SM_TURNS = (3, 6)  # Smith 4.4.1: Bot Speaker turns 3 to 6 for SM-Turn
# Appendix G weightings of SM-Turn : SM-Dialog, from SM-Turn only to SM-Dialog only.
DEFAULT_WEIGHTS = ((1, 0), (10, 1), (5, 1), (2, 1), (1, 1), (1, 2), (1, 5), (1, 10), (0, 1))


def sm_turn_ratings(ratings: pd.DataFrame) -> pd.DataFrame:
    """SM-Turn ratings with ``bot_turn``: the 1-based rank of turn_index among the conversation's
    rated bot messages (Smith's "Bot Speaker turn")."""
    mask = (ratings["scale"] == "binary") & ratings["turn_index"].notna() & ratings["criterion"].isin(SM_CRITERIA)
    frame = ratings.loc[mask].copy()
    frame["value"] = frame["value"].astype(float)
    frame["turn_index"] = frame["turn_index"].astype(int)
    frame["bot_turn"] = frame.groupby("conversation_id")["turn_index"].rank(method="dense").astype(int)
    return frame


def sm_dialog_ratings(ratings: pd.DataFrame) -> pd.DataFrame:
    mask = (ratings["scale"] == "likert") & ratings["turn_index"].isna() & ratings["criterion"].isin(SM_CRITERIA)
    frame = ratings.loc[mask].copy()
    frame["value"] = frame["value"].astype(float)
    return frame


def select_turns(turn_ratings: pd.DataFrame, turns: tuple[int, int] | None) -> pd.DataFrame:
    """Keep Bot Speaker turns first..last (inclusive); None keeps all."""
    if turns is None:
        return turn_ratings
    first, last = turns
    return turn_ratings[turn_ratings["bot_turn"].between(first, last)]


def per_conversation_success(turn_ratings: pd.DataFrame) -> pd.DataFrame:
    """One row per conversation and criterion: success fraction over its turns and the WTA outcome
    (1 when at least half of the model's responses were marked successful, Smith Table 2)."""
    grouped = turn_ratings.groupby(["model", "conversation_id", "criterion"], sort=True)["value"]
    frame = grouped.agg(success="mean", n_turns="size").reset_index()
    frame["wta"] = (frame["success"] >= 0.5).astype(float)
    return frame


def success_rates(turn_ratings: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per model and criterion: linear success rate (all responses pooled) with a t interval over the
    conversations' success fractions (the conversation is the unit: its turns are not independent), and
    the WTA rate over conversations with a Wilson interval; ``icc_within_conversation``: how far the
    turn ratings of one conversation move together (why every test here is by conversation)."""
    linear = turn_ratings.groupby(["model", "criterion"])["value"].agg(lin="mean", n_ratings="size")
    per_conv = per_conversation_success(turn_ratings)
    grouped = per_conv.groupby(["model", "criterion"])
    wta = grouped["wta"].agg(wta="mean", n_conversations="size")
    ci = grouped["success"].apply(lambda v: t_interval(v, alpha))
    wta["lin_ci_low"], wta["lin_ci_high"] = [c[0] for c in ci], [c[1] for c in ci]
    from statsmodels.stats.proportion import proportion_confint  # here: commands' --help stays fast

    low, high = proportion_confint(wta["wta"] * wta["n_conversations"], wta["n_conversations"], alpha=alpha,
                                   method="wilson")
    wta["wta_ci_low"], wta["wta_ci_high"] = low, high
    from parlai_dialeval.analysis.clustering import icc_oneway

    wta["icc_within_conversation"] = turn_ratings.groupby(["model", "criterion"]).apply(
        lambda part: icc_oneway(part["value"].to_numpy(), part["conversation_id"].to_numpy()), include_groups=False)
    out = linear.join(wta).reset_index()
    return out[["model", "criterion", "lin", "lin_ci_low", "lin_ci_high", "n_ratings", "wta", "wta_ci_low",
                "wta_ci_high", "n_conversations", "icc_within_conversation"]]


def per_turn_table(turn_ratings: pd.DataFrame) -> pd.DataFrame:
    """Success rate (%) by Bot Speaker turn, one row per model and criterion (Smith Table 5)."""
    table = turn_ratings.pivot_table(index=["model", "criterion"], columns="bot_turn", values="value",
                                     aggfunc="mean") * 100
    table.columns = [f"turn_{c}" for c in table.columns]
    return table.reset_index()


def likert_summary(dialog_ratings: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per model and criterion: mean, SD (ddof=1), Student t interval of the mean and count of SM-Dialog
    Likert scores (one per conversation: the conversation is the unit)."""
    grouped = dialog_ratings.groupby(["model", "criterion"])["value"]
    out = grouped.agg(mean="mean", sd="std", n="size")
    ci = grouped.apply(lambda v: t_interval(v, alpha))
    out["ci_low"], out["ci_high"] = [c[0] for c in ci], [c[1] for c in ci]
    return out.reset_index()[["model", "criterion", "mean", "sd", "ci_low", "ci_high", "n"]]


def model_pairs(models, reference: str | None = None) -> list[tuple[str, str]]:
    """All unordered pairs in sorted order, or (reference, other) for each other model."""
    models = sorted(set(models))
    if reference is not None:
        return [(reference, m) for m in models if m != reference]
    return list(itertools.combinations(models, 2))


TTEST_COLUMNS = ["model_a", "model_b", "mean_a", "mean_b", "n_a", "n_b", "diff", "ci_low", "ci_high", "t", "p",
                 "note"]


def ttests(scores: pd.DataFrame, pairs, value: str = "value", group: str = "criterion",
           alpha: float = 0.05) -> pd.DataFrame:
    """Two-sided independent (Student) t-tests of ``value`` between the models of each pair, per group,
    with the t interval of the difference of means. No test (t and p empty, ``note`` says why) where a
    model has fewer than two scores or both samples have zero variance (t would be infinite)."""
    from scipy import stats  # here: commands' --help stays fast

    rows = []
    for (criterion, frame), (a, b) in itertools.product(scores.groupby(group), pairs):
        x = frame.loc[frame["model"] == a, value].to_numpy(float)
        y = frame.loc[frame["model"] == b, value].to_numpy(float)
        if not len(x) or not len(y):
            continue
        row = {group: criterion, "model_a": a, "model_b": b, "mean_a": x.mean(), "mean_b": y.mean(), "n_a": len(x),
               "n_b": len(y), "diff": x.mean() - y.mean(), "ci_low": np.nan, "ci_high": np.nan, "t": np.nan,
               "p": np.nan, "note": ""}
        if len(x) < 2 or len(y) < 2:
            row["note"] = "no test: fewer than two scores for a model"
        elif x.var() == 0 and y.var() == 0:
            row["note"] = "no test: every score is the same within each model (zero variance)"
        else:
            result = stats.ttest_ind(x, y)
            ci = result.confidence_interval(1 - alpha)
            row.update(t=result.statistic, p=result.pvalue, ci_low=ci.low, ci_high=ci.high)
        rows.append(row)
    return pd.DataFrame(rows, columns=[group] + TTEST_COLUMNS)


def effective_win_rate(x: np.ndarray, y: np.ndarray, n_boot: int = 1000, rng=None) -> float:
    """Smith 4.4.1: how often the bootstrap mean of x exceeds that of y (ties count half)."""
    rng = np.random.default_rng(rng)
    x, y = np.asarray(x, float), np.asarray(y, float)
    mean_x = x[rng.integers(0, len(x), (n_boot, len(x)))].mean(axis=1)
    mean_y = y[rng.integers(0, len(y), (n_boot, len(y)))].mean(axis=1)
    return float(np.mean(mean_x > mean_y) + 0.5 * np.mean(mean_x == mean_y))


def effective_win_rates(scores: pd.DataFrame, pairs, value: str = "value", group: str = "criterion",
                        n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for (criterion, frame), (a, b) in itertools.product(scores.groupby(group), pairs):
        x = frame.loc[frame["model"] == a, value].to_numpy(float)
        y = frame.loc[frame["model"] == b, value].to_numpy(float)
        if len(x) and len(y):
            rows.append({group: criterion, "model_a": a, "model_b": b,
                         "win_rate_a": effective_win_rate(x, y, n_boot, rng), "n_a": len(x), "n_b": len(y)})
    return pd.DataFrame(rows, columns=[group, "model_a", "model_b", "win_rate_a", "n_a", "n_b"])


def combined_scores(turn_ratings: pd.DataFrame, dialog_ratings: pd.DataFrame, w_turn: float, w_dialog: float,
                    likert_min: float = 1, likert_max: float = 5) -> pd.DataFrame:
    """Smith App. G: per conversation and criterion, the weighted mean of the SM-Turn WTA outcome and the
    SM-Dialog Likert score shifted and scaled to [0, 1]. Conversations lacking either part are left out
    (their count is visible by comparing with the inputs)."""
    wta = per_conversation_success(turn_ratings)[["model", "conversation_id", "criterion", "wta"]]
    likert = (dialog_ratings.groupby(["model", "conversation_id", "criterion"])["value"].mean().reset_index())
    likert["likert01"] = (likert["value"] - likert_min) / (likert_max - likert_min)
    merged = wta.merge(likert[["model", "conversation_id", "criterion", "likert01"]],
                       on=["model", "conversation_id", "criterion"], how="inner")
    merged["value"] = (w_turn * merged["wta"] + w_dialog * merged["likert01"]) / (w_turn + w_dialog)
    return merged
