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
from parlai_dialeval.errors import DialevalError

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
    """Keep Bot Speaker turns first..last (inclusive); None keeps all. A range that no conversation
    reaches is an error: it would drop every SM-Turn result without a word."""
    if turns is None:
        return turn_ratings
    first, last = turns
    subset = turn_ratings[turn_ratings["bot_turn"].between(first, last)]
    if subset.empty and len(turn_ratings):
        raise DialevalError(f"--sm-turns {first}-{last}: no conversation has Bot Speaker turns {first}-{last} "
                            f"(at most {int(turn_ratings['bot_turn'].max())}); give a range within them or 'all'")
    return subset


def per_conversation_success(turn_ratings: pd.DataFrame) -> pd.DataFrame:
    """One row per conversation and criterion: success fraction over its turns and the WTA outcome
    (1 when at least half of the model's responses were marked successful, Smith Table 2)."""
    grouped = turn_ratings.groupby(["model", "conversation_id", "criterion"], sort=True)
    frame = grouped["value"].agg(success="mean", n_turns="size").reset_index()
    frame["wta"] = (frame["success"] >= 0.5).astype(float)
    return frame.assign(worker_id=_first_worker(grouped, turn_ratings))


def _first_worker(grouped, ratings: pd.DataFrame) -> np.ndarray:
    """Each group's worker (its first rating's), or None where the data names no workers."""
    if "worker_id" not in ratings:
        return np.full(grouped.ngroups, None, dtype=object)
    return grouped["worker_id"].first().to_numpy(dtype=object)


def per_conversation_likert(dialog_ratings: pd.DataFrame) -> pd.DataFrame:
    """One row per model, conversation and criterion: ``value``, the mean of its SM-Dialog scores
    (several raters of one conversation are one unit), ``n_ratings`` and the first rater's ``worker_id``."""
    grouped = dialog_ratings.groupby(["model", "conversation_id", "criterion"], sort=True)
    frame = grouped["value"].agg(value="mean", n_ratings="size").reset_index()
    return frame.assign(worker_id=_first_worker(grouped, dialog_ratings))


def mean_interval(values: pd.Series, workers: pd.Series, alpha: float) -> tuple[float, float]:
    """Interval of a mean over conversations: Student t, or clustered by worker where a worker rated
    several of them (cluster_robust.workers_repeat)."""
    from parlai_dialeval.analysis.cluster_robust import worker_robust_mean_interval, workers_repeat

    if workers_repeat(workers):
        return worker_robust_mean_interval(values, workers, alpha)
    return t_interval(values, alpha)


def independence(workers: pd.Series) -> str:
    """The unit of independence of these conversations: ``worker`` where a worker rated several."""
    from parlai_dialeval.analysis.cluster_robust import workers_repeat

    return "worker" if workers_repeat(workers) else "conversation"


def success_rates(turn_ratings: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per model and criterion: linear success rate (all responses pooled) with an interval over the
    conversations' success fractions (the conversation is the unit: its turns are not independent; the
    worker where a worker rated several conversations, ``unit_of_independence``), and the WTA rate over
    conversations with a Wilson interval (by worker, as the linear one, where workers repeat);
    ``icc_within_conversation``: how far the turn ratings of one conversation move together (why every
    test here is by conversation), ``design_effect`` what that costs a per-turn count, and
    ``icc_within_worker`` the same for the conversations of one worker."""
    from statsmodels.stats.proportion import proportion_confint  # here: commands' --help stays fast

    from parlai_dialeval.analysis.cluster_robust import design_effect, icc_oneway, weighted_size

    linear = turn_ratings.groupby(["model", "criterion"])["value"].agg(lin="mean", n_ratings="size")
    per_conv = per_conversation_success(turn_ratings)
    rows = []
    for (model, criterion), part in per_conv.groupby(["model", "criterion"]):
        unit = independence(part["worker_id"])
        if unit == "worker":
            wta_low, wta_high = mean_interval(part["wta"], part["worker_id"], alpha)
        else:
            wta_low, wta_high = proportion_confint(part["wta"].sum(), len(part), alpha=alpha, method="wilson")
        turns = turn_ratings[(turn_ratings["model"] == model) & (turn_ratings["criterion"] == criterion)]
        icc = icc_oneway(turns["value"].to_numpy(), turns["conversation_id"].to_numpy())
        lin_low, lin_high = mean_interval(part["success"], part["worker_id"], alpha)
        rows.append({"model": model, "criterion": criterion, "lin_ci_low": lin_low, "lin_ci_high": lin_high,
                     "wta": part["wta"].mean(), "wta_ci_low": wta_low, "wta_ci_high": wta_high,
                     "n_conversations": len(part), "unit_of_independence": unit,
                     "workers": part["worker_id"].nunique(), "icc_within_conversation": icc,
                     "design_effect": design_effect(max(icc, 0.0), weighted_size(part["n_turns"])),
                     "icc_within_worker": icc_oneway(part["success"].to_numpy(), part["worker_id"].to_numpy())
                     if unit == "worker" else np.nan})
    columns = ["model", "criterion", "lin", "lin_ci_low", "lin_ci_high", "n_ratings", "wta", "wta_ci_low",
               "wta_ci_high", "n_conversations", "unit_of_independence", "workers", "icc_within_conversation",
               "design_effect", "icc_within_worker"]
    if not rows:  # no SM-Turn ratings (a study of SM-Dialog alone): the table is empty, not an error
        return pd.DataFrame(columns=columns)
    out = linear.join(pd.DataFrame(rows).set_index(["model", "criterion"])).reset_index()
    return out[columns]


def per_turn_table(turn_ratings: pd.DataFrame) -> pd.DataFrame:
    """Success rate (%) by Bot Speaker turn, one row per model and criterion (Smith Table 5)."""
    table = turn_ratings.pivot_table(index=["model", "criterion"], columns="bot_turn", values="value",
                                     aggfunc="mean") * 100
    table.columns = [f"turn_{c}" for c in table.columns]
    return table.reset_index()


def likert_summary(dialog_ratings: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per model and criterion: mean, SD (ddof=1), interval of the mean and count ``n`` of SM-Dialog
    Likert scores per conversation (several raters of one conversation: their mean; ``n_ratings``
    counts them), Student t over conversations, or clustered by worker where a worker rated several
    (``unit_of_independence``)."""
    rows = []
    for (model, criterion), part in per_conversation_likert(dialog_ratings).groupby(["model", "criterion"]):
        low, high = mean_interval(part["value"], part["worker_id"], alpha)
        rows.append({"model": model, "criterion": criterion, "mean": part["value"].mean(), "sd": part["value"].std(),
                     "ci_low": low, "ci_high": high, "n": len(part), "n_ratings": int(part["n_ratings"].sum()),
                     "unit_of_independence": independence(part["worker_id"]), "workers": part["worker_id"].nunique()})
    return pd.DataFrame(rows, columns=["model", "criterion", "mean", "sd", "ci_low", "ci_high", "n", "n_ratings",
                                       "unit_of_independence", "workers"])


def model_pairs(models, reference: str | None = None) -> list[tuple[str, str]]:
    """All unordered pairs in sorted order, or (reference, other) for each other model."""
    models = sorted(set(models))
    if reference is not None:
        return [(reference, m) for m in models if m != reference]
    return list(itertools.combinations(models, 2))


TTEST_COLUMNS = ["model_a", "model_b", "mean_a", "mean_b", "n_a", "n_b", "diff", "ci_low", "ci_high", "t", "p",
                 "note", "unit_of_independence", "workers", "icc_within_worker"]


def ttests(scores: pd.DataFrame, pairs, value: str = "value", group: str = "criterion",
           alpha: float = 0.05) -> pd.DataFrame:
    """Two-sided tests of ``value`` (one score per conversation) between the models of each pair, per
    group, with the interval of the difference of means: independent Student t-tests over
    conversations, or, where a worker rated several of the pair's conversations (``worker_id``), the
    difference's OLS estimate with a covariance clustered by worker (cluster_robust.worker_robust_fit).
    ``unit_of_independence`` says which; ``icc_within_worker`` how far one worker's scores move together.
    No test (t and p empty, ``note`` says why) where a model has fewer than two scores or both samples
    have zero variance (t would be infinite)."""
    from scipy import stats  # here: commands' --help stays fast

    from parlai_dialeval.analysis.cluster_robust import (effective_worker_inference, icc_oneway, worker_robust_fit,
                                                         workers_repeat)

    if "worker_id" not in scores:
        scores = scores.assign(worker_id=None)
    rows = []
    for (criterion, frame), (a, b) in itertools.product(scores.groupby(group), pairs):
        both = frame[frame["model"].isin((a, b))]
        x = both.loc[both["model"] == a, value].to_numpy(float)
        y = both.loc[both["model"] == b, value].to_numpy(float)
        if not len(x) or not len(y):
            continue
        by_worker = workers_repeat(both["worker_id"])
        row = {group: criterion, "model_a": a, "model_b": b, "mean_a": x.mean(), "mean_b": y.mean(), "n_a": len(x),
               "n_b": len(y), "diff": x.mean() - y.mean(), "ci_low": np.nan, "ci_high": np.nan, "t": np.nan,
               "p": np.nan, "note": "", "unit_of_independence": "worker" if by_worker else "conversation",
               "workers": both["worker_id"].nunique(),
               "icc_within_worker": icc_oneway(both[value].to_numpy(float), both["worker_id"].to_numpy())
               if by_worker else np.nan}
        if len(x) < 2 or len(y) < 2:
            row["note"] = "no test: fewer than two scores for a model"
        elif x.var() == 0 and y.var() == 0:
            row["note"] = "no test: every score is the same within each model (zero variance)"
        elif by_worker and row["workers"] < 3:
            row["note"] = "no test: a worker rated several conversations, and there are fewer than three workers"
        elif by_worker:
            design = np.column_stack([np.ones(len(both)), (both["model"] == a).to_numpy(float)])
            fit = worker_robust_fit(both[value].to_numpy(float), design, both["worker_id"])
            if np.isnan(fit.bse[1]):
                row["note"] = ("no test: one worker rated every conversation of a model (nothing measures how "
                               "workers differ)")
            else:
                p, low, high = effective_worker_inference(fit, both["worker_id"], alpha)
                row.update(t=fit.tvalues[1], p=p[1], ci_low=low[1], ci_high=high[1])
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
    SM-Dialog Likert score shifted and scaled to [0, 1] by its rating's ``scale_min``/``scale_max`` (where
    not recorded: ``likert_min``/``likert_max``, Smith's 1-5). Conversations lacking either part are left
    out (their count is visible by comparing with the inputs)."""
    wta = per_conversation_success(turn_ratings)[["model", "conversation_id", "criterion", "wta"]]
    low, high = (dialog_ratings[column].astype(float).fillna(default) if column in dialog_ratings else default
                 for column, default in (("scale_min", likert_min), ("scale_max", likert_max)))
    likert = (dialog_ratings.assign(likert01=(dialog_ratings["value"] - low) / (high - low))
              .groupby(["model", "conversation_id", "criterion"])["likert01"].mean().reset_index())
    merged = wta.merge(likert[["model", "conversation_id", "criterion", "likert01"]],
                       on=["model", "conversation_id", "criterion"], how="inner")
    merged["value"] = (w_turn * merged["wta"] + w_dialog * merged["likert01"]) / (w_turn + w_dialog)
    return merged.merge(per_conversation_success(turn_ratings)[["conversation_id", "criterion", "worker_id"]],
                        on=["conversation_id", "criterion"], how="left")
