"""Style control: Bradley-Terry rankings with and without style covariates, side by side, and what style
is worth at equal quality (LMArena's style control, blog.lmarena.ai 2024, for dialogue protocols).

The model: P(A wins) = expit(s_A - s_B + sum_j beta_j d_j), a logistic regression on pair indicators and
the style differences d_j of the two replies (a worker tie is half a win, as in rankings.py). Each count
feature enters as LMArena normalises it, (a - b) / (a + b + 1), divided by its standard deviation over the
votes; a user's covariate as a - b, divided by its standard deviation. Unlike LMArena the mean is not
subtracted: with no intercept it would act as a bonus for side A, and d = 0 must mean "equal style".
Strengths are log-odds with mean 0 in each section; intervals are cluster-robust (sandwich, CR1, t with
clusters - 1 degrees of freedom), clustered by the project's one rule (a model pair's votes on one item,
cluster_robust.cluster_ids), so raw and controlled intervals are comparable with each other.

Pure: DataFrames in, a StyleControlResult out. Entry points: ``pairwise_style_control`` (votes of A/B,
PW-Turn, ACUTE), ``live_chat_style_control`` (per-conversation scores), ``fit_bradley_terry`` (one fit).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from parlai_dialeval.metrics.style_features import FEATURES, PATTERNS, text_features

# A log-strength beyond this: the model never lost (or never won) in the fit's votes, no finite estimate.
SEPARATED = 15.0
RANKING_COLUMNS = ["model", "votes", "bt_raw", "raw_ci_low", "raw_ci_high", "rank_raw", "bt_style", "style_ci_low",
                   "style_ci_high", "rank_style", "rank_change", "note"]
COEFFICIENT_COLUMNS = ["covariate", "coefficient", "ci_low", "ci_high", "p_value", "contrast", "win_share",
                       "win_share_low", "win_share_high", "sentence"]
LIVE_CHAT_COLUMNS = ["model", "conversations", "score_raw", "raw_ci_low", "raw_ci_high", "rank_raw", "score_style",
                     "style_ci_low", "style_ci_high", "rank_style", "rank_change"]


@dataclass
class BTFit:
    """One logistic Bradley-Terry fit: log-strengths (mean 0) and covariate coefficients with their
    cluster-robust covariance."""

    models: list[str]
    strengths: np.ndarray
    strength_cov: np.ndarray
    coefficients: np.ndarray
    coefficient_cov: np.ndarray
    clusters: int
    converged: bool

    def intervals(self, alpha: float, which: str = "strengths") -> tuple[np.ndarray, np.ndarray]:
        from scipy import stats

        values, cov = (self.strengths, self.strength_cov) if which == "strengths" else (self.coefficients,
                                                                                        self.coefficient_cov)
        half = stats.t.ppf(1 - alpha / 2, max(self.clusters - 1, 1)) * np.sqrt(np.clip(np.diag(cov), 0, None))
        return values - half, values + half


@dataclass
class StyleControlResult:
    """``rankings``: per section and model, raw and style-controlled strength, interval and rank;
    ``coefficients``: per section and covariate, its coefficient and what it means in words; ``covariates``:
    the covariates used and what each counts; ``left_out``: votes without the covariates' texts, per reason."""

    rankings: pd.DataFrame
    coefficients: pd.DataFrame
    covariates: dict[str, str]
    left_out: dict[str, int] = field(default_factory=dict)
    sentences: list[str] = field(default_factory=list)


def fit_bradley_terry(first: np.ndarray, second: np.ndarray, outcome: np.ndarray, n_models: int,
                      covariates: np.ndarray | None = None, clusters: np.ndarray | None = None,
                      start: np.ndarray | None = None, max_iter: int = 50, weights: np.ndarray | None = None) -> BTFit:
    """Logistic Bradley-Terry with covariates by Newton's method, with the cluster-robust (CR1) sandwich
    covariance statsmodels' GLM gives with cov_type="cluster" (tests/test_style_control.py checks both against
    it). Hand-written because statsmodels' GLM and Logit need the dense design: a million votes by 200 models
    is 1.6 GB. ``first``/``second``: model indices per vote; ``outcome``: 1, 1/2, 0 for ``first``;
    ``covariates``: votes x k differences; ``clusters``: a label per vote (None: each vote its own), split by
    model pair where one spans several (as the project's rule never does); ``start``: log-strengths to start
    from (a raw fit's, for the controlled one); ``weights``: one per vote, multiplying its log-likelihood and its
    score in the sandwich (the arena's inverse sampling propensity)."""
    from threadpoolctl import threadpool_limits

    # one BLAS thread: on a busy 2-core machine OpenBLAS's threads made each 200 x 200 Cholesky 0.13 s, not 1 ms
    with threadpool_limits(1, user_api="blas"):
        return _fit(np.asarray(first, np.int64), np.asarray(second, np.int64), np.asarray(outcome, float),
                    n_models, np.zeros((len(outcome), 0)) if covariates is None else np.asarray(covariates, float),
                    clusters, start, max_iter, np.ones(len(outcome)) if weights is None else np.asarray(weights, float))


def _gram(low: np.ndarray, high: np.ndarray, pair_weights: np.ndarray, cross: np.ndarray, features: np.ndarray,
          n_models: int) -> np.ndarray:
    """sum_i t_i t_i' over rows t_i = [w_i (e_low - e_high), f_i] without model 0's column, from per-row pair
    weights w_i^2 (``pair_weights``), cross terms w_i f_i (``cross``) and features f_i: sums per model
    (np.bincount), never a rows x models matrix."""
    m = n_models
    pair = np.bincount(low * m + high, pair_weights, m * m).reshape(m, m)
    laplacian = np.diag(pair.sum(axis=0) + pair.sum(axis=1)) - pair - pair.T
    by_model = np.column_stack([(np.bincount(low, c, m) - np.bincount(high, c, m))[1:] for c in cross.T]) \
        if cross.shape[1] else np.zeros((m - 1, 0))
    return np.block([[laplacian[1:, 1:], by_model], [by_model.T, features.T @ features]])


def _fit(first, second, y, m: int, features, clusters, start, max_iter: int, weights: np.ndarray) -> BTFit:
    from scipy.special import expit

    n, k = len(y), features.shape[1]

    def linear(beta):
        strengths = np.concatenate([[0.0], beta[:m - 1]])
        return strengths[first] - strengths[second] + features @ beta[m - 1:]

    def loglik(eta):
        return float(np.sum(weights * (y * eta - np.logaddexp(0, eta))))

    def hessian(prob):
        w = weights * prob * (1 - prob)
        return _gram(first, second, w, w[:, None] * features, np.sqrt(w)[:, None] * features, m)

    beta = np.zeros(m - 1 + k)
    if start is not None:
        beta[:m - 1] = (start - start[0])[1:]
    eta = linear(beta)
    current, converged = loglik(eta), False
    for _ in range(max_iter):
        prob = expit(eta)
        residual = weights * (y - prob)
        gradient = np.concatenate([(np.bincount(first, residual, m) - np.bincount(second, residual, m))[1:],
                                   features.T @ residual])
        step = _solve(hessian(prob), gradient)
        scale = 1.0
        while True:  # halve the step until the likelihood does not fall
            trial = linear(beta + scale * step)
            value = loglik(trial)
            if value >= current - 1e-12 or scale < 1e-4:
                break
            scale /= 2
        beta, eta, current = beta + scale * step, trial, value
        if np.max(np.abs(scale * step)) < 1e-8:
            converged = True
            break
    prob = expit(eta)
    bread = _solve(hessian(prob), np.eye(len(beta)))
    # clusters nested in model pairs, so a cluster's score is R_g (e_low - e_high) over the models: the
    # meat is a _gram over clusters, like the Hessian over votes
    low, high = np.minimum(first, second), np.maximum(first, second)
    given = np.zeros(n, np.int64) if clusters is None else pd.factorize(np.asarray(clusters))[0]
    codes = np.arange(n) if clusters is None else pd.factorize(
        (low * m + high) * (int(given.max(initial=0)) + 1) + given)[0]
    groups = int(codes.max(initial=-1)) + 1
    residual = weights * (y - prob)
    signed = np.bincount(codes, np.where(first == low, residual, -residual), groups)
    sums = np.column_stack([np.bincount(codes, residual * f, groups) for f in features.T]) if k else \
        np.zeros((groups, 0))
    head = np.zeros(groups, np.int64)
    head[codes] = np.arange(n)  # a vote of each cluster, for its pair
    meat = _gram(low[head], high[head], signed ** 2, signed[:, None] * sums, sums, m)
    correction = groups / max(groups - 1, 1) * (n - 1) / max(n - len(beta), 1)  # CR1, statsmodels' correction
    cov = correction * bread @ meat @ bread
    centre = (np.eye(m) - 1 / m) @ np.vstack([np.zeros(m - 1), np.eye(m - 1)])
    j = m - 1
    return BTFit([], centre @ beta[:j], centre @ cov[:j, :j] @ centre.T, beta[j:], cov[j:, j:], groups, converged)


def _solve(matrix: np.ndarray, target: np.ndarray) -> np.ndarray:
    """matrix^-1 target by Cholesky (the Hessian is positive definite where every model won and lost); least
    squares where it is singular (a model that never lost: its strength runs off, and is reported as such)."""
    from scipy import linalg

    try:
        return linalg.cho_solve(linalg.cho_factor(matrix), target)
    except linalg.LinAlgError:
        return np.linalg.lstsq(matrix, target, rcond=None)[0]


def normalised_differences(side_a: pd.DataFrame, side_b: pd.DataFrame,
                           counts: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """(per vote, each covariate's difference A minus B divided by its standard deviation, those standard
    deviations): count features as LMArena's (a - b) / (a + b + 1), the others as a - b (a constant
    column stays 0)."""
    a, b = side_a.to_numpy(float), side_b.to_numpy(float)
    ratio = np.array([c in counts for c in side_a.columns])
    diff = np.where(ratio, (a - b) / (a + b + 1), a - b)
    sd = diff.std(axis=0)
    return pd.DataFrame(diff / np.where(sd > 0, sd, 1), columns=side_a.columns, index=side_a.index), sd


def _contrast(name: str, side_a: pd.DataFrame, user: bool) -> tuple[str, float]:
    """(a typical contrast in words, its raw normalised difference) for the sentence on ``name``."""
    if user:
        return f"with one standard deviation more {name} than the other", float("nan")
    if name == "length":
        median = float(np.median(side_a["length"])) if len(side_a) else 0.0
        return (f"twice as long as the other's ({median:g} words against {median / 2:g}, the median reply's length)",
                median / (1.5 * median + 1))
    return f"with one {PATTERNS[name][1].split(' (')[0].rstrip('s')} more than the other (1 against 0)", 0.5


def _coefficient_rows(fit: BTFit, names: list[str], side_a: pd.DataFrame, raw_sd: np.ndarray, user: set[str],
                      alpha: float) -> list[dict]:
    from scipy import stats
    from scipy.special import expit

    low, high = fit.intervals(alpha, "coefficients")
    se = np.sqrt(np.clip(np.diag(fit.coefficient_cov), 0, None))
    rows = []
    for j, name in enumerate(names):
        words, raw = _contrast(name, side_a, name in user)
        step = 1.0 if name in user else raw / raw_sd[j]  # the contrast in the fit's standardised units
        share, share_low, share_high = (float(expit(v * step)) for v in (fit.coefficients[j], low[j], high[j]))
        p = float(2 * stats.t.sf(abs(fit.coefficients[j] / se[j]), max(fit.clusters - 1, 1))) if se[j] > 0 else np.nan
        verb = "wins" if share >= 0.5 else "wins only"
        rows.append({"covariate": name, "coefficient": fit.coefficients[j], "ci_low": low[j], "ci_high": high[j],
                     "p_value": p, "contrast": words, "win_share": share, "win_share_low": share_low,
                     "win_share_high": share_high,
                     "sentence": f"At equal quality, a reply {words} {verb} {100 * share:.0f}% of the votes "
                                 f"against it ({100 * (1 - alpha):g}% interval {100 * share_low:.0f}%-"
                                 f"{100 * share_high:.0f}%; 50% = no effect; p = {p:.2g})."})
    return rows


def _ranks(strengths: np.ndarray) -> np.ndarray:
    return pd.Series(strengths).rank(ascending=False, method="min").to_numpy()


def bt_table(first: np.ndarray, second: np.ndarray, outcome: np.ndarray, models: list[str], clusters,
             alpha: float, covariates: np.ndarray | None = None,
             start: BTFit | None = None, weights: np.ndarray | None = None) -> tuple[pd.DataFrame, BTFit | None]:
    """Per model (one connected part: the largest): votes, strength (mean 0), interval, rank, note; the fit
    (``start``: an earlier fit of the same votes to start from). Models outside the largest part have no
    strength (no vote links them to it)."""
    from parlai_dialeval.analysis.rankings import components

    n_models = len(models)
    votes = np.bincount(first, minlength=n_models) + np.bincount(second, minlength=n_models)
    table = pd.DataFrame({"model": models, "votes": votes, "bt": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                          "rank": np.nan, "note": ""})
    part = components(first, second, n_models)
    members = np.flatnonzero(part == 1)
    table.loc[part != 1, "note"] = "not connected by votes to the largest part of the comparison graph"
    if len(members) < 2:
        return table, None
    local = np.full(n_models, -1)
    local[members] = np.arange(len(members))
    keep = part[first] == 1
    fit = fit_bradley_terry(local[first[keep]], local[second[keep]], outcome[keep], len(members),
                            None if covariates is None else covariates[keep],
                            None if clusters is None else np.asarray(clusters)[keep],
                            None if start is None else start.strengths,
                            weights=None if weights is None else np.asarray(weights)[keep])
    low, high = fit.intervals(alpha)
    table.loc[members, "bt"], table.loc[members, "ci_low"], table.loc[members, "ci_high"] = fit.strengths, low, high
    table.loc[members, "rank"] = _ranks(fit.strengths)
    separated = members[np.abs(fit.strengths) > SEPARATED]
    table.loc[separated, "note"] = "no finite strength: it never lost or never won against the models it met"
    table.loc[separated, ["bt", "ci_low", "ci_high"]] = np.nan
    return table, fit


def _vote_sides(frame: pd.DataFrame, conversation_style: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each vote's style counts for model_a and model_b (NaN where its texts are not in the data): the
    responses of A/B and PW-Turn votes, the conversations' mean per bot turn for ACUTE / PW-Dialog."""
    nan = pd.DataFrame(np.nan, index=frame.index, columns=list(FEATURES))
    sides = []
    for side in ("a", "b"):
        out = nan.copy()
        if f"response_{side}" in frame:
            texts = frame[f"response_{side}"]
            has = texts.notna().to_numpy()
            # each distinct text counted once (ChatEval shows one response to three workers)
            codes, unique = pd.factorize(texts[has])
            out.loc[has] = text_features(pd.Series(unique, dtype=object)).to_numpy()[codes]
        conversation = f"conversation_{side}"
        if conversation_style is not None and conversation in frame:
            dialog = frame["unit"].eq("dialog").to_numpy() & frame[conversation].notna().to_numpy()
            found = conversation_style.reindex(frame.loc[dialog, conversation].astype(str))
            out.loc[dialog] = found[list(FEATURES)].to_numpy()
        sides.append(out)
    return sides[0], sides[1]


def _user_sides(frame: pd.DataFrame, user: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A user's covariates for model_a and model_b of each vote: rows keyed by ``item_id`` and ``model``
    (or by ``item_id`` alone, the same values for both sides: then they cancel, so a key needs its model)."""
    names = [c for c in user.columns if c not in ("item_id", "model")]
    keyed = user.set_index(["item_id", "model"])[names]
    sides = []
    for side in ("a", "b"):
        key = pd.MultiIndex.from_arrays([frame["item_id"].astype(str), frame[f"model_{side}"].astype(str)])
        sides.append(pd.DataFrame(keyed.reindex(key).to_numpy(float), columns=names, index=frame.index))
    return sides[0], sides[1]


def encode_votes(votes: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(models sorted by name, model_a and model_b as indices into them, outcome for model_a: 1, 1/2, 0),
    with one factorisation of both columns (pd.Categorical over a million names took seconds)."""
    names = np.concatenate([votes["model_a"].astype(str).to_numpy(object), votes["model_b"].astype(str).to_numpy(object)])
    codes, uniques = pd.factorize(names)
    order = np.argsort(np.asarray(uniques, dtype=str), kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    codes = rank[codes]
    choice = votes["choice"].astype(str).to_numpy()
    return ([str(uniques[i]) for i in order], codes[:len(votes)], codes[len(votes):],
            np.select([choice == "a", choice == "b"], [1.0, 0.0], 0.5))


def vote_cluster_codes(votes: pd.DataFrame, first: np.ndarray, second: np.ndarray, n_models: int) -> np.ndarray:
    """An integer per vote naming its cluster as rankings.vote_clusters does (a model pair's votes on one
    item, cluster_robust.cluster_ids), from integer keys: its strings of a million pairs took 5 s."""
    from parlai_dialeval.analysis.cluster_robust import cluster_ids

    items = pd.factorize(cluster_ids(votes))[0].astype(np.int64)
    pair = np.minimum(first, second) * n_models + np.maximum(first, second)
    return pd.factorize(pair * (int(items.max(initial=0)) + 1) + items)[0]


def pairwise_style_control(comparisons: pd.DataFrame, conversation_style: pd.DataFrame | None = None,
                           user_covariates: pd.DataFrame | None = None, alpha: float = 0.05,
                           features: tuple[str, ...] = FEATURES) -> StyleControlResult:
    """Raw and style-controlled Bradley-Terry per question and unit, on the votes that have every covariate.

    ``comparisons``: canonical comparison records (onboarding already left out; automatic ties are left out
    here); ``conversation_style``: ``style_features.conversation_features`` of the data's conversations (for
    ACUTE / PW-Dialog votes); ``user_covariates``: item_id, model and one numeric column per covariate
    (docs/pairwise_analysis.md, "Style control"); ``features``: the built-in covariates to use."""
    from parlai_dialeval.analysis.pairwise import SECTION, with_sections
    from parlai_dialeval.analysis.rankings import vote_weights
    frame = comparisons if "unit" in comparisons else with_sections(comparisons)
    if "automatic" in frame:
        frame = frame[~frame["automatic"].eq(True)]
    frame = frame.reset_index(drop=True)
    side_a, side_b = _vote_sides(frame, conversation_style)
    side_a, side_b = side_a[list(features)], side_b[list(features)]
    user = set()
    if user_covariates is not None:
        extra_a, extra_b = _user_sides(frame, user_covariates)
        user = set(extra_a.columns)
        side_a, side_b = pd.concat([side_a, extra_a], axis=1), pd.concat([side_b, extra_b], axis=1)
    complete = (side_a.notna().all(axis=1) & side_b.notna().all(axis=1)).to_numpy()
    left_out = {"votes without the texts (or user covariates) of both sides": int((~complete).sum())}
    described = {name: PATTERNS[name][1] for name in features} | {name: "the user's covariate" for name in user}
    rankings, coefficients, sentences = [], [], []
    for (question, unit), part in frame[complete].groupby(SECTION, sort=False, dropna=False):
        a, b = side_a.loc[part.index], side_b.loc[part.index]
        diffs, sd = normalised_differences(a, b, [c for c in a.columns if c not in user])
        varied = [c for c, spread in zip(diffs.columns, sd) if spread > 0]
        models, first, second, outcome = encode_votes(part)
        clusters = vote_cluster_codes(part, first, second, len(models))
        weights = vote_weights(part)
        raw, raw_fit = bt_table(first, second, outcome, models, clusters, alpha, weights=weights)
        styled, fit = bt_table(first, second, outcome, models, clusters, alpha,
                               diffs[varied].to_numpy() if varied else None, raw_fit, weights=weights)
        table = raw.rename(columns={"bt": "bt_raw", "ci_low": "raw_ci_low", "ci_high": "raw_ci_high",
                                    "rank": "rank_raw"})
        for column, new in (("bt", "bt_style"), ("ci_low", "style_ci_low"), ("ci_high", "style_ci_high"),
                            ("rank", "rank_style")):
            table[new] = styled[column].to_numpy()
        table["note"] = styled["note"].where(styled["note"] != "", raw["note"])
        table["rank_change"] = table["rank_raw"] - table["rank_style"]
        table = table.sort_values("bt_style", ascending=False, na_position="last")[RANKING_COLUMNS]
        rankings.append(table.assign(question=question, unit=unit))
        if fit is not None and varied:
            rows = _coefficient_rows(fit, varied, a, sd[[list(diffs.columns).index(c) for c in varied]], user,
                                     alpha)
            coefficients.append(pd.DataFrame(rows).assign(question=question, unit=unit))
            sentences += [f"{question} ({unit}): {row['sentence']}" for row in rows if row["p_value"] < alpha]
    columns = SECTION + RANKING_COLUMNS
    return StyleControlResult(
        pd.concat(rankings, ignore_index=True)[columns] if rankings else pd.DataFrame(columns=columns),
        pd.concat(coefficients, ignore_index=True)[SECTION + COEFFICIENT_COLUMNS] if coefficients
        else pd.DataFrame(columns=SECTION + COEFFICIENT_COLUMNS), described, left_out, sentences)


# A covariate off its most common value in fewer conversations than this is left out: its clustered interval
# would rest on a handful of clusters, where cluster-robust tests over-reject (MacKinnon & Webb 2017, "Wild
# bootstrap inference for wildly different cluster sizes"; FED's list items: 2 of 500 conversations, p = 5e-8).
MIN_UNUSUAL = 10


def _standardised(style: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """Covariates centred and divided by their standard deviation (constant and rare ones, MIN_UNUSUAL,
    dropped), and those SDs."""
    sd = style.std(ddof=0)
    unusual = style.ne(style.mode().iloc[0]).sum() if len(style) else sd
    varied = sd[(sd > 0) & (unusual >= MIN_UNUSUAL)].index
    return (style[varied] - style[varied].mean()) / sd[varied], sd[varied]


def live_chat_style_control(conversations: pd.DataFrame, style: pd.DataFrame, alpha: float = 0.05,
                            cluster: str = "worker_id") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per model: mean score without and with adjustment for style, intervals and ranks; per covariate: its
    effect), from ``conversations`` (one row each: ``conversation_id``, ``worker_id``, ``model``, ``score``)
    and ``style`` (``style_features.conversation_features``, indexed by conversation id). A regression with
    model fixed effects, clustered by the ``cluster`` column (cluster_robust.worker_robust_fit; the worker who
    chatted, or the conversation itself where a panel rated every conversation): without covariates each
    model's effect is its mean; with them, its mean at the average style of all conversations."""
    from parlai_dialeval.analysis.cluster_robust import worker_robust_fit

    frame = conversations.join(style, on="conversation_id", how="inner")
    models = sorted(pd.unique(frame["model"].astype(str)))
    dummies = (frame["model"].astype(str).to_numpy()[:, None] == np.array(models)[None, :]).astype(float)
    covariates, sd = _standardised(frame[[c for c in style.columns]])
    scores = frame["score"].to_numpy(float)
    raw = worker_robust_fit(scores, dummies, frame[cluster])
    styled = worker_robust_fit(scores, np.column_stack([dummies, covariates.to_numpy()]), frame[cluster])
    table = pd.DataFrame({"model": models, "conversations": dummies.sum(axis=0).astype(int)})
    for fit, name in ((raw, "raw"), (styled, "style")):
        bounds = fit.conf_int(alpha)
        table[f"score_{name}"] = fit.params[:len(models)]
        table[f"{name}_ci_low"], table[f"{name}_ci_high"] = bounds[:len(models), 0], bounds[:len(models), 1]
        table[f"rank_{name}"] = _ranks(table[f"score_{name}"].to_numpy())
    table["rank_change"] = table["rank_raw"] - table["rank_style"]
    bounds = styled.conf_int(alpha)[len(models):]
    effects = pd.DataFrame({"covariate": covariates.columns, "per_sd": sd.to_numpy(),
                            "coefficient": styled.params[len(models):], "ci_low": bounds[:, 0],
                            "ci_high": bounds[:, 1], "p_value": styled.pvalues[len(models):]})
    unit = {name: PATTERNS[name][1].split(" (")[0] for name in FEATURES}
    effects["sentence"] = [
        f"At equal model, a conversation whose bot turns carry {row.per_sd:.2g} more {unit.get(row.covariate, row.covariate)}"
        f" per turn (one standard deviation) scores {row.coefficient:+.3g} ({100 * (1 - alpha):g}% interval "
        f"{row.ci_low:+.3g} to {row.ci_high:+.3g}; p = {row.p_value:.2g})." for row in effects.itertuples()]
    return table.sort_values("score_style", ascending=False, ignore_index=True)[LIVE_CHAT_COLUMNS], effects
