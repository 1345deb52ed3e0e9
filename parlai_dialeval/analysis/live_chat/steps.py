"""The live-chat analysis steps after preparation: conversation scores, worker quality control, system
scores, pairwise significance, correlations between statements and rater agreement (Figure 2)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.analysis.intervals import mean_intervals
from parlai_dialeval.analysis.live_chat.two_sample_tests import grouped_test, two_sample_p
from parlai_dialeval.analysis.live_chat.prepare import group_sd, is_in
from parlai_dialeval.analysis.live_chat.settings import QC_OFF, Settings
from parlai_dialeval.analysis.multiple_testing import DEFAULT_CORRECTION, adjust
from parlai_dialeval.errors import DialevalError


def conversation_scores(frame: pd.DataFrame, qc_models: list[str]) -> pd.DataFrame:
    """One row per conversation: worker (the first rater's), assignment, model, overall z and raw (mean of its
    statements), and its number of raters (more than one where a panel rated each conversation, as in FED)."""
    grouped = frame.groupby("conversation_id", sort=False)
    out = grouped.agg(worker_id=("worker_id", "first"), assignment_id=("assignment_id", "first"),
                      model=("model", "first"), overall_z=("z", "mean"), overall_raw=("x", "mean"),
                      n_ratings=("z", "size"), raters=("worker_id", "nunique")).reset_index()
    out["qc"] = out["model"].isin(qc_models)
    return out


def quality_control(frame: pd.DataFrame, settings: Settings, extra_workers: dict | None = None) -> pd.DataFrame:
    """Per worker: n_hits, n_ratings, p_value, passed. ``extra_workers`` maps worker -> HITs with no
    ratings (empty submissions), who are listed as failing: there is nothing to test."""
    config = settings.config
    codes, workers = pd.factorize(frame["worker_id"])
    workers = np.asarray(workers, dtype=object)
    n = len(workers)
    n_ratings = np.bincount(codes, minlength=n)
    assignment_codes, _ = pd.factorize(frame["assignment_id"])
    first_of_hit = ~pd.Series(assignment_codes).duplicated().to_numpy()
    hits = np.bincount(codes[first_of_hit], minlength=n)
    note = np.array([""] * n, dtype=object)
    if config.qc_test == "none":
        p = np.full(n, np.nan)
        passed = np.ones(n, bool)
        note[:] = QC_OFF
    else:
        rows = frame["criterion"].isin(settings.qc_criteria).to_numpy()
        model = frame["model"].to_numpy()[rows]
        is_qc = np.isin(model, settings.qc_models)
        p = grouped_test(frame["x"].to_numpy()[rows], codes[rows], is_qc, n, test=config.qc_test,
                         alternative="less")
        constant = group_sd(frame["x"].to_numpy(), codes, config.ddof) == 0
        p[constant] = 1.0  # the authors' rule: a worker who gave every rating the same value fails
        note[constant] = "all ratings equal"
        qc_count = np.bincount(codes[rows][is_qc], minlength=n)
        genuine_count = np.bincount(codes[rows][~is_qc], minlength=n)
        note[(qc_count == 0) & ~constant] = "no quality-control conversation rated"
        note[(genuine_count == 0) & ~constant] = "no genuine-model conversation rated"
        passed = np.nan_to_num(p, nan=1.0) < config.qc_alpha
    out = pd.DataFrame({"worker_id": workers, "n_hits": hits.astype(int), "n_ratings": n_ratings.astype(int),
                        "p_value": p, "passed": passed, "note": note})
    if extra_workers:
        extra = {w: h for w, h in extra_workers.items()}
        known = out["worker_id"].isin(list(extra))
        out.loc[known, "n_hits"] += out.loc[known, "worker_id"].map(extra).astype(int)
        new = [w for w in extra if w not in set(out["worker_id"])]
        if new:
            out = pd.concat([out, pd.DataFrame({"worker_id": new, "n_hits": [extra[w] for w in new],
                                                "n_ratings": 0, "p_value": np.nan, "passed": False,
                                                "note": "empty submission only: nothing to test"})],
                            ignore_index=True)
    return out.sort_values("worker_id", kind="stable").reset_index(drop=True)


def system_scores(frame: pd.DataFrame, value: str, criteria: list[str], order: list[str] | None = None) -> pd.DataFrame:
    """model, n (ratings), overall (mean of the statements' means), one column per statement."""
    if frame.empty:
        return pd.DataFrame(columns=["model", "n", "overall", *criteria])
    table = frame.pivot_table(index="model", columns="criterion", values=value, aggfunc="mean", observed=True)
    table = table.reindex(columns=criteria)
    table.insert(0, "overall", table.mean(axis=1))
    table.insert(0, "n", frame.groupby("model").size().reindex(table.index).astype(int))
    table = table.sort_values("overall", ascending=False, kind="stable")
    if order:
        first = [m for m in order if m in table.index]
        table = table.loc[first + [m for m in table.index if m not in first]]
    table.columns.name = None
    return table.reset_index()


def pairwise_significance(conversations: pd.DataFrame, models: list[str], test: str = "mannwhitney",
                          correction: str = DEFAULT_CORRECTION) -> pd.DataFrame:
    """p that model a's per-conversation overall z exceed model b's, for every ordered pair, with
    ``p_adjusted`` over all ordered pairs (equal to p_value when the correction is ``none``)."""
    samples = {m: g.to_numpy() for m, g in conversations.groupby("model")["overall_z"]}
    rows = [(a, b, len(samples.get(a, [])), len(samples.get(b, [])),
             two_sample_p(samples.get(a, np.array([])), samples.get(b, np.array([])), test, "greater"))
            for a in models for b in models if a != b]
    out = pd.DataFrame(rows, columns=["model_a", "model_b", "n_a", "n_b", "p_value"])
    out["p_adjusted"] = adjust(out["p_value"], correction)
    return out


def overall_intervals(conversations: pd.DataFrame, models: list[str], alpha: float = 0.05) -> pd.DataFrame:
    """Per model, the unit of analysis (the conversation) and its count, with the mean per-conversation
    overall z and its t interval (valid for small n; the tests above use the same unit)."""
    table = mean_intervals(conversations, "model", "overall_z", alpha).rename(columns={"n": "n_conversations"})
    table = table.set_index("model").reindex(models).reset_index()
    table.insert(1, "unit", "conversation")
    return table


def significance_matrix(significance: pd.DataFrame, models: list[str], column: str = "p_value") -> pd.DataFrame:
    matrix = significance.pivot(index="model_a", columns="model_b", values=column)
    return matrix.reindex(index=models, columns=models)


def criteria_correlations(scores: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Table 8: correlation between columns across systems; Pearson above the diagonal, Spearman below."""
    values = scores[columns].astype(float)
    if len(values) < 3:
        return pd.DataFrame(np.nan, index=columns, columns=columns)
    pearson = values.corr(method="pearson").to_numpy()
    spearman = values.corr(method="spearman").to_numpy()
    upper = np.triu(np.ones_like(pearson, dtype=bool), 1)
    lower = np.tril(np.ones_like(pearson, dtype=bool), -1)
    out = np.where(upper, pearson, np.where(lower, spearman, np.nan))
    return pd.DataFrame(out, index=columns, columns=columns)


def rater_agreement(conversations: pd.DataFrame, passed_workers: set, by: str = "models",
                    max_pairs: int = 2_000_000, seed: int = 0, hits: pd.Series | None = None) -> dict:
    """Figure 2: Pearson r between the per-conversation overall z of pairs of HITs by different workers
    that held the same models (``by="models"``, the authors' grouping) or share a hit_id (``by="hit"``);
    conversations are matched by model. Pairs are formed among passing and among failing workers."""
    frame = conversations.sort_values(["assignment_id", "model", "conversation_id"], kind="stable")
    assignment, assignments = pd.factorize(frame["assignment_id"], sort=True)
    model, _ = pd.factorize(frame["model"], sort=True)
    width = np.bincount(assignment)
    offset = np.concatenate([[0], np.cumsum(width)[:-1]])
    # the key of a HIT: its sorted models (padded with -1), as one row of a matrix
    models = np.full((len(width), width.max()), -1, dtype=np.int64)
    position = np.arange(len(frame)) - offset[assignment]
    models[assignment, position] = model
    if by == "hit":
        if hits is None:
            raise DialevalError("--agreement_by hit needs hit_id on the conversations")
        hit_ids = hits.reindex(assignments)
        # a HIT without a hit_id is its own item
        own = "assignment:" + pd.Series(assignments, index=hit_ids.index).astype(str)
        hit_ids = hit_ids.where(hit_ids.notna(), own)
        hit_code, _ = pd.factorize(hit_ids.astype(str))
        models = np.column_stack([hit_code, models])
    _, key = np.unique(models, axis=0, return_inverse=True)
    worker = frame["worker_id"].to_numpy()[offset]
    hit = pd.DataFrame({"key": key.ravel(), "worker_id": worker, "width": width, "offset": offset},
                       index=assignments)
    hit["passed"] = is_in(hit["worker_id"], passed_workers)
    values = frame["overall_z"].to_numpy()
    result = {"by": by, "sampled": False}
    rng = np.random.default_rng(seed)
    for outcome, wanted in (("passed", True), ("failed", False)):
        subset = hit[hit["passed"] == wanted]
        blocks = []
        for members in subset.groupby("key", sort=True).indices.values():
            if len(members) < 2:
                continue
            rows = subset.iloc[members]
            width = int(rows["width"].iloc[0])
            index = rows["offset"].to_numpy()[:, None] + np.arange(width)[None, :]
            blocks.append((values[index], rows["worker_id"].to_numpy()))
        total = sum(len(m) * (len(m) - 1) // 2 for m, _ in blocks)
        fraction = 1.0 if total <= max_pairs else max_pairs / total
        result["sampled"] |= fraction < 1.0
        rs = [_pair_correlations(matrix, who, fraction, rng) for matrix, who in blocks]
        result[outcome] = np.concatenate(rs) if rs else np.array([], dtype=float)
        result[f"{outcome}_candidate_pairs"] = int(total)
    result["stats"] = pd.DataFrame([_r_stats(result[o], o) for o in ("passed", "failed")])
    return result


def _pair_correlations(matrix: np.ndarray, who: np.ndarray, fraction: float, rng) -> np.ndarray:
    # Pearson r of many row pairs at once (millions on the paper's data; scipy.stats.pearsonr takes one pair a call)
    centred = matrix - matrix.mean(axis=1, keepdims=True)
    norms = np.sqrt((centred ** 2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = centred / norms[:, None]
    k = len(matrix)
    if fraction >= 1.0:
        i, j = np.triu_indices(k, 1)
    else:
        count = max(1, int(round(fraction * k * (k - 1) / 2)))
        i = rng.integers(0, k, count)
        j = rng.integers(0, k - 1, count)
        j = j + (j >= i)
    r = (unit[i] * unit[j]).sum(axis=1)
    keep = (who[i] != who[j]) & np.isfinite(r)
    return np.clip(r[keep], -1.0, 1.0)


def _r_stats(r: np.ndarray, outcome: str) -> dict:
    if len(r) == 0:
        return {"workers": outcome, "pairs": 0, "mean_r": np.nan, "median_r": np.nan, "share_r_above_0.5": np.nan}
    return {"workers": outcome, "pairs": int(len(r)), "mean_r": float(np.mean(r)), "median_r": float(np.median(r)),
            "share_r_above_0.5": float(np.mean(r > 0.5))}
