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
PW-Turn, ACUTE), ``live_chat_style_control`` (per-conversation scores); the fits are analysis.bradley_terry's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.metrics.style_features import FEATURES, PATTERNS, text_features

RANKING_COLUMNS = ["model", "votes", "bt_raw", "raw_ci_low", "raw_ci_high", "rank_raw", "bt_style", "style_ci_low",
                   "style_ci_high", "rank_style", "rank_change", "note"]
COEFFICIENT_COLUMNS = ["covariate", "coefficient", "ci_low", "ci_high", "p_value", "contrast", "win_share",
                       "win_share_low", "win_share_high", "sentence"]
LIVE_CHAT_COLUMNS = ["model", "conversations", "score_raw", "raw_ci_low", "raw_ci_high", "rank_raw", "score_style",
                     "style_ci_low", "style_ci_high", "rank_style", "rank_change"]


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


def _coefficient_rows(fit: bt.Fit, names: list[str], side_a: pd.DataFrame, raw_sd: np.ndarray, user: set[str],
                      alpha: float) -> list[dict]:
    from scipy import stats
    from scipy.special import expit

    low, high = fit.intervals(alpha, "coefficients")
    se = np.sqrt(np.clip(np.diag(fit.coefficient_cov), 0, None))
    rows = []
    for j, name in enumerate(names):
        words, raw = _contrast(name, side_a, name in user)
        if fit.separated:
            rows.append({"covariate": name, "coefficient": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                         "p_value": np.nan, "contrast": words, "win_share": np.nan, "win_share_low": np.nan,
                         "win_share_high": np.nan,
                         "sentence": f"What a reply {words} is worth cannot be estimated: the votes are separated (the "
                                     "covariates, or a model that never lost or never won, decide them), so no "
                                     "finite coefficient exists."})
            continue
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
    from parlai_dialeval.analysis.rankings import shared_ranks

    ranks = shared_ranks(strengths)
    return np.where(np.isfinite(strengths), ranks, np.nan)


NEVER = "no finite strength: it never lost or never won against the models it met"


def _one_sided(votes: bt.Votes) -> np.ndarray:
    """Per model: whether it won all its votes or none (a tie is half a win)."""
    n = len(votes.models)
    won = np.bincount(votes.first, votes.outcome, n) + np.bincount(votes.second, 1 - votes.outcome, n)
    played = np.bincount(votes.first, minlength=n) + np.bincount(votes.second, minlength=n)
    return (won == 0) | (won == played)


def bt_table(votes: bt.Votes, alpha: float, covariates: np.ndarray | None = None,
             start: np.ndarray | None = None) -> tuple[pd.DataFrame, bt.Fit | None]:
    """Per model (one connected part: the largest): votes, strength (mean 0), interval, rank, note; the fit
    (``start``: log-strengths of ``votes.models``, NaN where unknown, to start from). Models outside the largest
    part have no strength (no vote links them to it). A model that never lost or never won has no finite
    strength: it is said so and left out, and the others are fitted again without its votes, until none runs
    off; where the covariates themselves separate the votes, no strength is given at all (``note``)."""
    n_models = len(votes.models)
    counted = np.bincount(votes.first, minlength=n_models) + np.bincount(votes.second, minlength=n_models)
    table = pd.DataFrame({"model": votes.models, "votes": counted, "bt": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                          "rank": np.nan, "note": ""})
    features = np.zeros((len(votes), 0)) if covariates is None else np.asarray(covariates, float)
    local, members, keep = votes.largest_part()
    table.loc[~np.isin(np.arange(n_models), members), "note"] = ("not connected by votes to the largest part of "
                                                                 "the comparison graph")
    fit = None
    while len(members) >= 2:
        fit = bt.fit(local, features[keep] if features.shape[1] else None,
                     start=None if start is None else np.nan_to_num(start[members]))
        runaway = (np.abs(fit.strengths) > bt.SEPARATED) & _one_sided(local)
        if not runaway.any():
            break
        table.loc[members[runaway], "note"] = NEVER
        within = np.isin(votes.first, members[~runaway]) & np.isin(votes.second, members[~runaway])
        local, members, part_keep = votes.subset(within).largest_part()
        keep = np.flatnonzero(within)[part_keep]
    if fit is None or len(members) < 2:
        table.loc[members, "note"] = "no other model with a finite strength to compare it with"
        return table, None
    if fit.separated:
        table.loc[members, "note"] = ("no finite strengths: the covariates separate the votes (they decide every "
                                      "vote of a pair the same way)")
        return table, fit
    low, high = fit.intervals(alpha)
    table.loc[members, "bt"], table.loc[members, "ci_low"], table.loc[members, "ci_high"] = fit.strengths, low, high
    table.loc[members, "rank"] = _ranks(fit.strengths)
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
            out.loc[has] = text_features(texts[has]).to_numpy()
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


def pairwise_style_control(comparisons: pd.DataFrame, conversation_style: pd.DataFrame | None = None,
                           user_covariates: pd.DataFrame | None = None, alpha: float = 0.05,
                           features: tuple[str, ...] = FEATURES) -> StyleControlResult:
    """Raw and style-controlled Bradley-Terry per question and unit, on the votes that have every covariate, each
    vote weighted by its ``weight`` where the comparisons carry one (bradley_terry.encode).

    ``comparisons``: canonical comparison records (onboarding already left out; automatic ties are left out
    here); ``conversation_style``: ``style_features.conversation_features`` of the data's conversations (for
    ACUTE / PW-Dialog votes); ``user_covariates``: item_id, model and one numeric column per covariate
    (docs/pairwise_analysis.md, "Style control"); ``features``: the built-in covariates to use."""
    from parlai_dialeval.analysis.pairwise import SECTION, with_sections
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
        votes = bt.encode(part)
        raw, raw_fit = bt_table(votes, alpha)
        styled, fit = bt_table(votes, alpha, diffs[varied].to_numpy() if varied else None, raw["bt"].to_numpy())
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
    chatted, or the conversation itself where a panel rated every conversation), intervals and p-values with t on
    Kish's effective number of clusters less 1 (cluster_robust.effective_worker_inference): without covariates
    each model's effect is its mean; with them, its mean at the average style of all conversations."""
    from parlai_dialeval.analysis.cluster_robust import effective_worker_inference, worker_robust_fit

    frame = conversations.join(style, on="conversation_id", how="inner")
    models = sorted(pd.unique(frame["model"].astype(str)))
    dummies = (frame["model"].astype(str).to_numpy()[:, None] == np.array(models)[None, :]).astype(float)
    covariates, sd = _standardised(frame[[c for c in style.columns]])
    scores = frame["score"].to_numpy(float)
    raw = worker_robust_fit(scores, dummies, frame[cluster])
    styled = worker_robust_fit(scores, np.column_stack([dummies, covariates.to_numpy()]), frame[cluster])
    table = pd.DataFrame({"model": models, "conversations": dummies.sum(axis=0).astype(int)})
    fits = {"raw": raw, "style": styled}
    inference = {name: effective_worker_inference(fit, frame[cluster], alpha) for name, fit in fits.items()}
    for name, fit in fits.items():
        _, low, high = inference[name]
        table[f"score_{name}"] = fit.params[:len(models)]
        table[f"{name}_ci_low"], table[f"{name}_ci_high"] = low[:len(models)], high[:len(models)]
        table[f"rank_{name}"] = _ranks(table[f"score_{name}"].to_numpy())
    table["rank_change"] = table["rank_raw"] - table["rank_style"]
    p_values, low, high = inference["style"]
    effects = pd.DataFrame({"covariate": covariates.columns, "per_sd": sd.to_numpy(),
                            "coefficient": styled.params[len(models):], "ci_low": low[len(models):],
                            "ci_high": high[len(models):], "p_value": p_values[len(models):]})
    unit = {name: PATTERNS[name][1].split(" (")[0] for name in FEATURES}
    effects["sentence"] = [
        f"At equal model, a conversation whose bot turns carry {row.per_sd:.2g} more {unit.get(row.covariate, row.covariate)}"
        f" per turn (one standard deviation) scores {row.coefficient:+.3g} ({100 * (1 - alpha):g}% interval "
        f"{row.ci_low:+.3g} to {row.ci_high:+.3g}; p = {row.p_value:.2g})." for row in effects.itertuples()]
    return table.sort_values("score_style", ascending=False, ignore_index=True)[LIVE_CHAT_COLUMNS], effects
