"""Live-chat direct assessment (Ji et al. 2022): continuous ratings of live conversations to system scores.

Pure statistics, DataFrames in and out, no I/O; ``scripts/analyze_live_chat.py`` writes the files and
the report. Every step follows the paper unless ``LiveChatConfig`` says otherwise:

1. reverse negatively worded statements: ``min + max - x`` (``100 - x`` on 0-100), from the study's
   criteria (``positive: false``) or ``negative=[...]``;
2. z-standardise per worker over all of that worker's ratings in the study (all statements, all
   conversations, quality-control ones included): ``(x - mean) / (SD(ddof=1) + 1e-6)``;
3. worker quality control: a one-sided Mann-Whitney U test that the worker rated the quality-control
   bot lower than the genuine models on the positive statements, pooled over all the worker's HITs;
   pass when ``p < 0.05``; a worker whose ratings are all equal gets ``p = 1``; failing workers are
   removed whole;
4. system scores over passing workers: mean z (and mean reversed raw score) per statement, overall =
   mean of the statements, ``n`` = number of ratings; models ordered by overall;
5. pairwise significance: one-sided Mann-Whitney U on per-conversation overall z (mean of its
   statements), model a over model b, for every ordered pair;
6. correlation between statements across systems (Pearson above the diagonal, Spearman below);
7. rater agreement (Figure 2): Pearson r between the per-conversation overall z of two workers' HITs
   that held the same set of models, for passing and for failing workers;
8. descriptive tables: counts and pass rates, durations (Table 1), opening-topic attitudes (Table 2),
   characters and words of worker inputs (Table 12).

The Mann-Whitney tests reproduce ``scipy.stats.mannwhitneyu(method="auto")`` called once per worker
(exact p without ties when either sample has at most 8 values, else the normal approximation with
continuity and tie corrections), but run batched: workers are grouped by sample sizes and by whether
their samples hold ties, and each group is one vectorised call.
"""
from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from parlai_dialeval.errors import DialevalError

QC_TESTS = ("mannwhitney", "ttest", "none")
SIG_TESTS = ("mannwhitney", "ttest")
CORRECTIONS = ("none", "bonferroni", "holm", "sidak", "holm-sidak", "fdr_bh", "fdr_by")
AGREEMENT_BY = ("models", "hit")
HUMAN = "human"


@dataclass
class LiveChatConfig:
    """Every step of the analysis; the defaults are Ji et al. (2022)'s method."""

    study: str | None = None               # which study to analyse when the data hold several
    criteria: list[str] | None = None      # statements to analyse (default: all the study declares)
    negative: list[str] | None = None      # negatively worded statements (default: study metadata)
    scale_min: float | None = None         # scale bounds for reversal (default: metadata / ratings)
    scale_max: float | None = None
    reverse: bool = True                   # reverse negative statements before anything else
    standardise: bool = True               # per-worker z scores (False: analyse reversed raw values)
    ddof: int = 1                          # SD degrees of freedom for z
    epsilon: float = 1e-6                  # added to the SD (the authors' code)
    qc_models: list[str] | None = None     # quality-control bots (default: study's qc_models)
    qc_test: str = "mannwhitney"           # mannwhitney | ttest (Welch) | none (everyone passes)
    qc_alpha: float = 0.05                 # a worker passes when p < qc_alpha
    qc_criteria: list[str] | None = None   # statements the QC test uses (default: the positive ones)
    sig_test: str = "mannwhitney"          # pairwise test between models: mannwhitney | ttest (Welch)
    correction: str = "none"               # multiple-comparison correction over all ordered pairs
    order: list[str] | None = None         # fixed model order (the paper's run 2 used run 1's)
    agreement_by: str = "models"           # HITs are "the same" when they held the same models, or hit_id
    agreement_max_pairs: int = 2_000_000   # above this many pairs, a seeded random sample is used
    seed: int = 0

    def check(self) -> None:
        for name, value, allowed in (("qc_test", self.qc_test, QC_TESTS), ("sig_test", self.sig_test, SIG_TESTS),
                                     ("correction", self.correction, CORRECTIONS),
                                     ("agreement_by", self.agreement_by, AGREEMENT_BY)):
            if value not in allowed:
                raise DialevalError(f"--{name} must be one of {', '.join(allowed)}, not '{value}'")
        if not 0 < self.qc_alpha < 1:
            raise DialevalError(f"--qc_alpha must lie between 0 and 1, not {self.qc_alpha}")


@dataclass
class Settings:
    """The configuration resolved against the data: what was actually done."""

    study: str | None
    criteria: list[str]
    negative: list[str]
    bounds: dict[str, tuple[float, float]]
    qc_models: list[str]
    qc_criteria: list[str]
    labels: dict[str, str]
    config: LiveChatConfig

    def as_dict(self) -> dict:
        return {"study": self.study, "criteria": self.criteria, "negative": self.negative,
                "scale": {c: list(b) for c, b in self.bounds.items()}, "qc_models": self.qc_models,
                "qc_criteria": self.qc_criteria, **{k: v for k, v in asdict(self.config).items()
                                                     if k not in ("study", "criteria", "negative", "qc_models",
                                                                  "qc_criteria")}}


@dataclass
class LiveChatResult:
    settings: Settings
    ratings: pd.DataFrame          # per analysed rating: worker_id, conversation_id, model, criterion, value, x, z
    conversations: pd.DataFrame    # one row per rated conversation: overall z / raw, passed, qc
    workers: pd.DataFrame          # worker_id, n_hits, n_ratings, p_value, passed (+ note)
    system_scores: pd.DataFrame    # model, n, overall, <criteria> (z)
    system_scores_raw: pd.DataFrame
    significance: pd.DataFrame     # model_a, model_b, p_value (+ p_adjusted)
    correlations: pd.DataFrame     # Table 8 (z); Pearson above the diagonal, Spearman below
    correlations_raw: pd.DataFrame
    agreement: dict                # {"passed": r array, "failed": r array, "stats": DataFrame, ...}
    table1: pd.DataFrame
    durations: pd.DataFrame
    topics: pd.DataFrame | None
    inputs: pd.DataFrame | None
    summary: dict
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------
# Settings and data preparation
# ------------------------------------------------------------------------------------------------

def _study_names(data) -> list[str]:
    names = [s["name"] for s in data.studies]
    for frame in (data.ratings, data.conversations):
        if "study" in frame.columns:
            names += [n for n in frame["study"].dropna().unique().tolist() if n not in names]
    return list(dict.fromkeys(names))


def select_study(data, study: str | None):
    """The study's record (or None) and its conversations and ratings."""
    names = _study_names(data)
    if study is None:
        if len(names) > 1:
            raise DialevalError("the data hold several studies (" + ", ".join(names) + "); choose one with "
                                "--study NAME (z scores and quality control are per study)")
        study = names[0] if names else None
    elif study not in names:
        raise DialevalError(f"no study named '{study}' in the data; found: {', '.join(names) or 'none'}")
    record = next((s for s in data.studies if s["name"] == study), None)
    conversations, ratings = data.conversations, data.ratings
    if study is not None and len(names) > 1:
        conversations = conversations[conversations["study"].eq(study)]
        ratings = ratings[ratings["study"].eq(study)]
    return study, record, conversations, ratings


def _ordered_criteria(names: list[str], negative: set[str]) -> list[str]:
    """Positive statements first, then negative ones, each in declared order (the paper's tables)."""
    return [c for c in names if c not in negative] + [c for c in names if c in negative]


def resolve_settings(config: LiveChatConfig, study: str | None, record: dict | None,
                     ratings: pd.DataFrame) -> Settings:
    config.check()
    declared = {c["name"]: c for c in (record or {}).get("criteria") or []}
    present = list(dict.fromkeys(ratings["criterion"].tolist())) if len(ratings) else []
    names = list(config.criteria or declared or present)
    unknown = [c for c in names if c not in present]
    if unknown:
        raise DialevalError(f"no ratings of criteria {', '.join(unknown)}; the data rate: {', '.join(present)}")
    if config.negative is not None:
        negative = [c for c in config.negative if c]
        missing = [c for c in negative if c not in names]
        if missing:
            raise DialevalError(f"--negative names criteria that are not analysed: {', '.join(missing)}")
    else:
        negative = [c for c in names if declared.get(c, {}).get("positive") is False]
    negative_set = set(negative)
    names = _ordered_criteria(names, negative_set)
    bounds = {}
    for name in names:
        low = config.scale_min if config.scale_min is not None else declared.get(name, {}).get("min")
        high = config.scale_max if config.scale_max is not None else declared.get(name, {}).get("max")
        if low is None or high is None:
            rows = ratings[ratings["criterion"].eq(name)]
            if low is None and "scale_min" in rows and rows["scale_min"].notna().any():
                low = float(pd.to_numeric(rows["scale_min"]).min())
            if high is None and "scale_max" in rows and rows["scale_max"].notna().any():
                high = float(pd.to_numeric(rows["scale_max"]).max())
        if name in negative_set and config.reverse and (low is None or high is None):
            raise DialevalError(f"cannot reverse '{name}': its scale bounds are unknown (declare min and max "
                                "in the study's criteria, or give --scale_min and --scale_max)")
        bounds[name] = (float(low) if low is not None else math.nan, float(high) if high is not None else math.nan)
    qc_models = list(config.qc_models if config.qc_models is not None else (record or {}).get("qc_models") or [])
    if config.qc_criteria is not None:
        qc_criteria = [c for c in config.qc_criteria if c]
        missing = [c for c in qc_criteria if c not in names]
        if missing:
            raise DialevalError(f"--qc_criteria names criteria that are not analysed: {', '.join(missing)}")
    else:
        qc_criteria = [c for c in names if c not in negative_set]
    labels = dict(((record or {}).get("meta") or {}).get("model_labels") or {})
    return Settings(study, names, [c for c in names if c in negative_set], bounds, qc_models, qc_criteria,
                    labels, config)


def _complete(status: pd.Series) -> pd.Series:
    return status.isna() | status.eq("complete")


def prepare_ratings(conversations: pd.DataFrame, ratings: pd.DataFrame,
                    settings: Settings) -> tuple[pd.DataFrame, dict]:
    """The analysed ratings, with reversed value ``x``; and counts of what was left out and why."""
    left_out = {}
    frame = ratings
    if "turn_index" in frame.columns and frame["turn_index"].notna().any():
        per_turn = frame["turn_index"].notna()
        left_out["per-turn ratings (not part of this protocol)"] = int(per_turn.sum())
        frame = frame[~per_turn]
    keep = frame["criterion"].isin(settings.criteria)
    if (~keep).any():
        left_out["ratings of criteria not analysed"] = int((~keep).sum())
        frame = frame[keep]
    if len(conversations) and "status" in conversations.columns:
        bad = conversations.loc[~_complete(conversations["status"]), "id"]
        if len(bad):
            drop = frame["conversation_id"].isin(bad)
            if drop.any():
                left_out["ratings of conversations not complete (status)"] = int(drop.sum())
                frame = frame[~drop]
    columns = ["worker_id", "conversation_id", "model", "criterion", "value"]
    out = pd.DataFrame({c: frame[c].to_numpy() for c in columns})
    out["assignment_id"] = frame["assignment_id"].to_numpy() if "assignment_id" in frame else None
    out["value"] = pd.to_numeric(out["value"]).astype(float)
    for column in ("worker_id", "conversation_id", "model", "criterion"):
        out[column] = out[column].astype(str)
    # ratings carry assignment_id optionally; fill it from the conversation, else the conversation id
    missing = out["assignment_id"].isna()
    if missing.any() and len(conversations) and "assignment_id" in conversations.columns:
        lookup = pd.Series(conversations["assignment_id"].to_numpy(), index=conversations["id"].astype(str))
        lookup = lookup[~lookup.index.duplicated()]
        out.loc[missing, "assignment_id"] = out.loc[missing, "conversation_id"].map(lookup).to_numpy()
        missing = out["assignment_id"].isna()
    if missing.any():
        out.loc[missing, "assignment_id"] = out.loc[missing, "conversation_id"]
    out["assignment_id"] = out["assignment_id"].astype(str)
    out["x"] = reverse(out["value"].to_numpy(), out["criterion"].to_numpy(), settings)
    return out, left_out


def reverse(values: np.ndarray, criteria: np.ndarray, settings: Settings) -> np.ndarray:
    """``min + max - x`` for negatively worded statements (``100 - x`` on a 0-100 scale)."""
    x = np.asarray(values, dtype=float).copy()
    if not settings.config.reverse:
        return x
    for name in settings.negative:
        low, high = settings.bounds[name]
        rows = criteria == name
        x[rows] = low + high - x[rows]
    return x


def standardise(x: np.ndarray, groups: np.ndarray, ddof: int = 1, epsilon: float = 1e-6) -> np.ndarray:
    """Per-group z: (x - mean) / (SD(ddof) + epsilon); ``groups`` are integer codes."""
    groups = np.asarray(groups)
    n = np.bincount(groups)
    total = np.bincount(groups, weights=x)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        centred = x - mean[groups]
        sd = np.sqrt(np.bincount(groups, weights=centred ** 2) / (n - ddof))
        return centred / (sd[groups] + epsilon)


def group_sd(x: np.ndarray, groups: np.ndarray, ddof: int = 1) -> np.ndarray:
    n = np.bincount(groups)
    mean = np.bincount(groups, weights=x) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(np.bincount(groups, weights=(x - mean[groups]) ** 2) / (n - ddof))


# ------------------------------------------------------------------------------------------------
# Batched one-sided two-sample tests
# ------------------------------------------------------------------------------------------------

def _rows_have_ties(matrix: np.ndarray) -> np.ndarray:
    ordered = np.sort(matrix, axis=1)
    return (np.diff(ordered, axis=1) == 0).any(axis=1)


def grouped_test(values: np.ndarray, groups: np.ndarray, first: np.ndarray, n_groups: int,
                 test: str = "mannwhitney", alternative: str = "less") -> np.ndarray:
    """One-sided test per group that the ``first`` values are lower ('less') than the others.

    ``groups`` are integer codes 0..n_groups-1. Returns p per group (NaN when a side is empty).
    Groups with equal sample sizes run as one vectorised scipy call; for Mann-Whitney the exact or
    asymptotic method is chosen per group exactly as ``method="auto"`` would for that group alone.
    """
    p = np.full(n_groups, np.nan)
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups, dtype=np.int64)
    first = np.asarray(first, dtype=bool)
    order = np.lexsort((~first, groups))  # by group, "first" rows before the others
    g, f, v = groups[order], first[order], values[order]
    n1 = np.bincount(g[f], minlength=n_groups)
    n2 = np.bincount(g[~f], minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(n1 + n2)[:-1]])
    sizes = pd.DataFrame({"n1": n1, "n2": n2})
    sizes = sizes[(sizes["n1"] > 0) & (sizes["n2"] > 0)]
    for (a, b), members in sizes.groupby(["n1", "n2"]).groups.items():
        members = np.asarray(members)
        index = starts[members][:, None] + np.arange(a + b)[None, :]
        matrix = v[index]
        x, y = matrix[:, :a], matrix[:, a:]
        if test == "ttest":
            with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # constant samples: p is nan, said below
                result = stats.ttest_ind(x, y, axis=1, equal_var=False, alternative=alternative)
            p[members] = result.pvalue
            continue
        if a > 8 and b > 8:
            methods = {"asymptotic": np.ones(len(members), bool)}
        else:
            ties = _rows_have_ties(matrix)
            methods = {"asymptotic": ties, "exact": ~ties}
        for method, rows in methods.items():
            if rows.any():
                with np.errstate(invalid="ignore", divide="ignore"):
                    result = stats.mannwhitneyu(x[rows], y[rows], alternative=alternative, axis=1,
                                                method=method)
                p[members[rows]] = result.pvalue
    return p


def two_sample_p(a: np.ndarray, b: np.ndarray, test: str = "mannwhitney", alternative: str = "greater") -> float:
    if len(a) == 0 or len(b) == 0:
        return math.nan
    if test == "ttest":
        return float(stats.ttest_ind(a, b, equal_var=False, alternative=alternative).pvalue)
    return float(stats.mannwhitneyu(a, b, alternative=alternative, method="auto").pvalue)


# ------------------------------------------------------------------------------------------------
# The analysis steps
# ------------------------------------------------------------------------------------------------

def add_z(frame: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    codes, _ = pd.factorize(frame["worker_id"])
    if settings.config.standardise:
        frame["z"] = standardise(frame["x"].to_numpy(), codes, settings.config.ddof, settings.config.epsilon)
    else:
        frame["z"] = frame["x"].to_numpy()
    return frame


def conversation_scores(frame: pd.DataFrame, qc_models: list[str]) -> pd.DataFrame:
    """One row per conversation: worker, assignment, model, overall z and raw (mean of its statements)."""
    grouped = frame.groupby("conversation_id", sort=False)
    out = grouped.agg(worker_id=("worker_id", "first"), assignment_id=("assignment_id", "first"),
                      model=("model", "first"), overall_z=("z", "mean"), overall_raw=("x", "mean"),
                      n_ratings=("z", "size")).reset_index()
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
        note[:] = "quality control off"
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
                          correction: str = "none") -> pd.DataFrame:
    """p that model a's per-conversation overall z exceed model b's, for every ordered pair."""
    samples = {m: g.to_numpy() for m, g in conversations.groupby("model")["overall_z"]}
    rows = [(a, b, two_sample_p(samples.get(a, np.array([])), samples.get(b, np.array([])), test, "greater"))
            for a in models for b in models if a != b]
    out = pd.DataFrame(rows, columns=["model_a", "model_b", "p_value"])
    if correction != "none" and len(out):
        from statsmodels.stats.multitest import multipletests

        valid = out["p_value"].notna()
        adjusted = np.full(len(out), np.nan)
        if valid.any():
            adjusted[valid.to_numpy()] = multipletests(out.loc[valid, "p_value"], method=correction)[1]
        out["p_adjusted"] = adjusted
    return out


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
    hit["passed"] = hit["worker_id"].isin(passed_workers)
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


def durations(conversations: pd.DataFrame, passed_workers: set) -> pd.DataFrame:
    """Table 1 durations in minutes: per HIT (assignment_duration) and per conversation (the HIT's time
    divided by its conversations, as the paper does; and measured ``duration`` when recorded)."""
    frame = conversations
    rows = []
    if "assignment_duration" in frame.columns and frame["assignment_duration"].notna().any():
        per_hit = frame.groupby("assignment_id").agg(worker_id=("worker_id", "first"),
                                                     seconds=("assignment_duration", "first"),
                                                     conversations=("id", "size")).dropna(subset=["seconds"])
        per_hit["passed"] = per_hit["worker_id"].isin(passed_workers)
        per_hit["per_conversation"] = per_hit["seconds"] / per_hit["conversations"]
        for label, sub in (("passed", per_hit[per_hit["passed"]]), ("failed", per_hit[~per_hit["passed"]]),
                           ("all", per_hit)):
            rows.append({"workers": label, "hits": len(sub),
                         "mean_minutes_per_hit": sub["seconds"].mean() / 60 if len(sub) else np.nan,
                         "mean_minutes_per_conversation": sub["per_conversation"].mean() / 60 if len(sub) else np.nan})
    out = pd.DataFrame(rows)
    if "duration" in frame.columns and frame["duration"].notna().any():
        measured = frame.dropna(subset=["duration"])
        passed = measured["worker_id"].isin(passed_workers)
        values = {"passed": measured.loc[passed, "duration"], "failed": measured.loc[~passed, "duration"],
                  "all": measured["duration"]}
        column = {k: (v.astype(float).mean() / 60 if len(v) else np.nan) for k, v in values.items()}
        if out.empty:
            out = pd.DataFrame({"workers": list(values)})
        out["mean_minutes_per_conversation_measured"] = out["workers"].map(column)
    return out


def topic_attitudes(conversations: pd.DataFrame, passed_workers: set) -> pd.DataFrame | None:
    """Table 2: % of conversations whose opening topic the worker liked / was ambivalent about / disliked,
    for passing and failing workers (all conversations of the HIT, QC included, as the paper's numbers)."""
    if "topic_attitude" not in conversations.columns or conversations["topic_attitude"].isna().all():
        return None
    frame = conversations.dropna(subset=["topic_attitude"])
    outcome = np.where(frame["worker_id"].isin(passed_workers), "passed", "failed")
    table = pd.crosstab(frame["topic_attitude"], outcome, normalize="columns") * 100
    wanted = [a for a in ("like", "ambivalent", "dislike") if a in table.index]
    table = table.reindex(wanted + [a for a in table.index if a not in wanted])
    table = table.reindex(columns=[c for c in ("passed", "failed") if c in table.columns])
    counts = pd.Series(outcome).value_counts()
    table.loc["conversations"] = [counts.get(c, 0) for c in table.columns]
    table.index.name = "attitude"
    return table.reset_index()


def input_lengths(conversations: pd.DataFrame, passed_workers: set, speaker: str = HUMAN) -> pd.DataFrame | None:
    """Table 12: median characters and words (whitespace tokens) of worker inputs, per input and per
    conversation, for passing and failing workers."""
    if "turns" not in conversations.columns or conversations.empty:
        return None
    # turns are validated on load: a list of {speaker, text, ...}
    per_conversation = [[t["text"] for t in turns if t["speaker"] == speaker] if isinstance(turns, list) else []
                        for turns in conversations["turns"].tolist()]
    counts = np.fromiter(map(len, per_conversation), dtype=np.int64, count=len(per_conversation))
    texts = list(itertools.chain.from_iterable(per_conversation))
    if not texts:
        return None
    owner = np.repeat(np.arange(len(per_conversation)), counts)
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    words = np.fromiter(map(len, map(str.split, texts)), dtype=np.int64, count=len(texts))
    n = len(conversations)
    has_input = np.bincount(owner, minlength=n) > 0
    chars_conv = np.bincount(owner, weights=chars, minlength=n)
    words_conv = np.bincount(owner, weights=words, minlength=n)
    passed_conv = conversations["worker_id"].isin(passed_workers).to_numpy()
    rows = []
    for label, mask in (("passed", passed_conv), ("failed", ~passed_conv), ("all", np.ones(n, bool))):
        conv = mask & has_input
        inputs = mask[owner]
        rows.append({"workers": label, "conversations": int(conv.sum()), "inputs": int(inputs.sum()),
                     "median_chars_per_input": _median(chars[inputs]),
                     "median_chars_per_conversation": _median(chars_conv[conv]),
                     "median_words_per_input": _median(words[inputs]),
                     "median_words_per_conversation": _median(words_conv[conv])})
    return pd.DataFrame(rows)


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if len(values) else np.nan


# ------------------------------------------------------------------------------------------------
# The whole analysis
# ------------------------------------------------------------------------------------------------

def analyze(data, config: LiveChatConfig | None = None) -> LiveChatResult:
    config = config or LiveChatConfig()
    study, record, conversations, ratings = select_study(data, config.study)
    if ratings.empty:
        raise DialevalError("no ratings to analyse" + (f" in study '{study}'" if study else ""))
    settings = resolve_settings(config, study, record, ratings)
    notes: list[str] = []
    frame, left_out = prepare_ratings(conversations, ratings, settings)
    for why, count in left_out.items():
        notes.append(f"left out {count} {why}")
    if frame.empty:
        raise DialevalError("no ratings left to analyse after filtering: " + "; ".join(notes))
    if config.qc_test != "none":
        if not settings.qc_models:
            raise DialevalError("no quality-control model: the study declares no qc_models; name it with "
                                "--qc_models NAME, or turn quality control off with --qc_test none")
        if not frame["model"].isin(settings.qc_models).any():
            raise DialevalError(f"no ratings of the quality-control model(s) {', '.join(settings.qc_models)}; "
                                "name it with --qc_models NAME, or use --qc_test none")
    frame = add_z(frame, settings)
    conv = conversation_scores(frame, settings.qc_models)

    empty = list(((record or {}).get("meta") or {}).get("empty_submissions") or [])
    empty_hits: dict[str, int] = {}
    for item in empty:
        if item.get("worker_id"):
            empty_hits[item["worker_id"]] = empty_hits.get(item["worker_id"], 0) + 1
    workers = quality_control(frame, settings, empty_hits)
    passed_workers = set(workers.loc[workers["passed"], "worker_id"])
    frame["passed"] = frame["worker_id"].isin(passed_workers)
    conv["passed"] = conv["worker_id"].isin(passed_workers)

    genuine = frame[frame["passed"] & ~frame["model"].isin(settings.qc_models)]
    scores = system_scores(genuine, "z", settings.criteria, config.order)
    models = scores["model"].tolist()
    raw = system_scores(genuine, "x", settings.criteria)
    raw = raw.set_index("model").loc[models].reset_index() if models else raw
    conv_genuine_passed = conv[conv["passed"] & ~conv["qc"]]
    significance = pairwise_significance(conv_genuine_passed, models, config.sig_test, config.correction)
    columns = ["overall", *settings.criteria]
    correlations = criteria_correlations(scores, columns)
    correlations_raw = criteria_correlations(raw, columns)

    conv_meta = _conversation_meta(conversations, conv)
    hits = conv_meta.groupby("assignment_id")["hit_id"].first() if "hit_id" in conv_meta else None
    agreement = rater_agreement(conv, passed_workers, config.agreement_by, config.agreement_max_pairs,
                                config.seed, hits)
    if agreement["sampled"]:
        notes.append(f"rater agreement: more than {config.agreement_max_pairs:,} candidate pairs, so a seeded "
                     "random sample of pairs was used")
    table_durations = durations(conv_meta, passed_workers)
    topics = topic_attitudes(conv_meta, passed_workers)
    inputs = input_lengths(conv_meta, passed_workers)

    summary = _summary(settings, frame, conv, workers, empty, notes)
    table1 = _table1(summary, table_durations)
    return LiveChatResult(settings, frame, conv, workers, scores, raw, significance, correlations, correlations_raw,
                          agreement, table1, table_durations, topics, inputs, summary, notes)


def _conversation_meta(conversations: pd.DataFrame, conv: pd.DataFrame) -> pd.DataFrame:
    """The rated conversations with their canonical fields (turns, durations, topic attitude, hit_id)."""
    wanted = [c for c in ("id", "hit_id", "assignment_duration", "duration", "topic_attitude", "turns")
              if c in conversations.columns]
    base = conv[["conversation_id", "worker_id", "assignment_id", "model", "qc", "passed"]].rename(
        columns={"conversation_id": "id"})
    if not len(conversations) or "id" not in wanted:
        return base
    extra = conversations[wanted].copy()
    extra["id"] = extra["id"].astype(str)
    extra = extra.drop_duplicates("id")
    return base.merge(extra, on="id", how="left")


def _summary(settings: Settings, frame: pd.DataFrame, conv: pd.DataFrame, workers: pd.DataFrame, empty: list[dict],
             notes: list[str]) -> dict:
    qc = set(settings.qc_models)
    genuine = conv[~conv["qc"]]
    empty_genuine = sum(sum(1 for m in item.get("models") or [] if m not in qc) for item in empty)
    n_assignments_rated = int(conv["assignment_id"].nunique())
    passed_assignments = int(conv.loc[conv["passed"], "assignment_id"].nunique())
    n_workers = int(len(workers))
    n_passed = int(workers["passed"].sum())
    summary = {
        "study": settings.study,
        "n_assignments": n_assignments_rated + len(empty),
        "n_assignments_rated": n_assignments_rated,
        "n_assignments_empty": len(empty),
        "n_assignments_passed": passed_assignments,
        "n_workers": n_workers,
        "n_workers_passed": n_passed,
        "worker_pass_rate": n_passed / n_workers if n_workers else None,
        "n_dialogues": int(len(genuine)),
        "n_dialogues_passed": int(genuine["passed"].sum()),
        "dialogue_pass_rate": float(genuine["passed"].mean()) if len(genuine) else None,
        "n_dialogues_incl_empty_submissions": int(len(genuine)) + empty_genuine,
        "n_qc_dialogues": int(conv["qc"].sum()),
        "n_ratings": int(len(frame)),
        "n_ratings_passed_genuine": int((frame["passed"] & ~frame["model"].isin(qc)).sum()),
        "models": sorted(genuine["model"].unique().tolist()),
        "settings": settings.as_dict(),
    }
    notes.append("n_dialogues counts the genuine-model (non-QC) conversations that were held and rated; "
                 "n_workers counts every worker who submitted an assignment, empty submissions included.")
    if empty:
        notes.append(f"{len(empty)} empty submission(s) (no conversation or rating) were skipped by the importer; "
                     "their workers count in n_workers (as failing: nothing to test) and the submissions in "
                     f"n_assignments. The paper's Table 1 'Dialogues Total' also counts the {empty_genuine} "
                     "genuine-model slot(s) of those submissions: n_dialogues_incl_empty_submissions = "
                     f"{summary['n_dialogues_incl_empty_submissions']}.")
    summary["notes"] = notes
    return summary


def _table1(summary: dict, table_durations: pd.DataFrame) -> pd.DataFrame:
    rows = [("workers", summary["n_workers"], summary["n_workers_passed"], summary["worker_pass_rate"]),
            ("assignments (HITs)", summary["n_assignments"], summary["n_assignments_passed"],
             summary["n_assignments_passed"] / summary["n_assignments"] if summary["n_assignments"] else None),
            ("dialogues (genuine models, rated)", summary["n_dialogues"], summary["n_dialogues_passed"],
             summary["dialogue_pass_rate"])]
    if summary["n_assignments_empty"]:
        total = summary["n_dialogues_incl_empty_submissions"]
        rows.append(("dialogues incl. empty submissions (paper's count)", total, summary["n_dialogues_passed"],
                     summary["n_dialogues_passed"] / total if total else None))
    return pd.DataFrame(rows, columns=["", "total", "passed", "pass_rate"])
