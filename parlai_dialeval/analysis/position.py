"""Position effects per model, held out of the Bradley-Terry strengths.

Every pairwise protocol records the side each reply was shown on: ``model_a`` is the reply shown first (A, the left
one; A/B next utterance, PW-Turn and ACUTE randomise it per vote, an arena's battles per battle). The model:
P(A wins) = expit(s_A - s_B + gamma + delta_A), where gamma is everyone's advantage of being shown first and
delta_k how much more (or less) model k gains from it, a covariate each in bradley_terry.fit with a ridge penalty
on the deltas (a normal random effect's log-density, sd 1 / sqrt(``penalty``): they shrink to the shared effect
where votes are few, and stay finite where the design cannot tell them apart). gamma is not penalised. The
strengths are then net of position: where one model gains more from being first, the plain fit (which ignores
the side) credits that gain to its strength, by about half of it when sides are balanced.

A model always shown on one side leaves its delta and its strength confounded (only their sum is seen): the fit
still runs (the ridge picks delta near gamma), and ``confounded`` names the model so the report warns. With two
models only the shared effect is estimated: a per-model effect is then the strength difference in disguise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from parlai_dialeval.analysis import bradley_terry as bt

PENALTY = 1.0  # ridge on each model's extra position effect: a normal prior with sd 1 on the log-odds scale
# votes x models beyond this: the shared effect only (the per-model design is dense: a million votes of 200 models
# would be 1.6 GB)
MAX_CELLS = 2 ** 24


@dataclass
class PositionFit:
    """Strengths net of position with cluster-robust intervals; the shared effect of being shown first and each
    model's own (shared + its delta), with intervals; each model's share of its votes shown first; the plain fit's
    strengths; models whose position effect is confounded with their strength."""

    models: list[str]
    strengths: np.ndarray
    strength_low: np.ndarray
    strength_high: np.ndarray
    shared: tuple[float, float, float]
    effects: np.ndarray
    effect_low: np.ndarray
    effect_high: np.ndarray
    first_share: np.ndarray
    plain: np.ndarray
    confounded: list[str]
    fit: bt.Fit


def per_model(votes: int, n_models: int) -> bool:
    """Whether each model's own effect is estimated: three or more models, and a design that fits in memory."""
    return n_models >= 3 and votes * n_models <= MAX_CELLS


def covariates(first: np.ndarray, n_models: int) -> np.ndarray:
    """The position design: a column of ones (the shared effect of side A) and, where ``per_model``, one
    indicator per model of being the one shown first."""
    ones = np.ones((len(first), 1))
    return np.hstack([ones, np.eye(n_models)[first]]) if per_model(len(first), n_models) else ones


def position_fit(votes: bt.Votes, penalty: float = PENALTY, alpha: float = 0.05) -> PositionFit:
    """The Bradley-Terry fit of ``votes`` (``first``: the model shown first) with a shared and a per-model
    position effect, beside the plain fit."""
    from scipy import stats

    m = len(votes.models)
    x = covariates(votes.first, m)
    ridge = np.r_[0.0, np.full(x.shape[1] - 1, penalty)]
    result = bt.fit(votes, x, penalty=ridge)
    low, high = result.intervals(alpha)
    cov = result.coefficient_cov
    t = stats.t.ppf(1 - alpha / 2, max(result.clusters - 1, 1))
    gamma, gamma_se = result.coefficients[0], np.sqrt(max(cov[0, 0], 0.0))
    if x.shape[1] == 1:
        effects, se = np.full(m, gamma), np.full(m, gamma_se)
    else:  # gamma + delta_k: its variance from the covariance of the two
        effects = gamma + result.coefficients[1:]
        se = np.sqrt(np.clip(cov[0, 0] + np.diag(cov)[1:] + 2 * cov[0, 1:], 0, None))
    shown_first = np.bincount(votes.first, minlength=m)
    total = shown_first + np.bincount(votes.second, minlength=m)
    share = np.divide(shown_first, total, out=np.full(m, np.nan), where=total > 0)
    confounded = [votes.models[k] for k in range(m) if total[k] and share[k] in (0.0, 1.0)]
    return PositionFit(votes.models, result.strengths, low, high, (float(gamma), float(gamma - t * gamma_se),
                       float(gamma + t * gamma_se)), effects, effects - t * se, effects + t * se, share,
                       bt.fit(votes, covariance=False).strengths, confounded, result)


def section_fit(comparisons: pd.DataFrame, alpha: float = 0.05) -> tuple[pd.DataFrame, dict]:
    """One question's worker votes: (a row per model of the largest connected part: strengths net of position
    beside the plain ones, its position effect and share shown first; the question's figures)."""
    votes = bt.encode(comparisons)
    if len(votes) == 0 or len(votes.models) < 2:
        return pd.DataFrame(), {}
    part = votes.largest_part()[0]
    result = position_fit(part, alpha=alpha)
    table = pd.DataFrame({"model": part.models, "strength_net_of_position": result.strengths,
                          "net_low": result.strength_low, "net_high": result.strength_high,
                          "strength_plain": result.plain, "position_effect": result.effects,
                          "effect_low": result.effect_low, "effect_high": result.effect_high,
                          "shown_first_share": result.first_share})
    shared = result.shared
    decided = part.outcome[np.rint(2 * part.outcome) != 1]  # outcome 1: the model shown first won
    # the fit ran off to infinity, or every vote is a tie (no side ever won: the fit's 0 with an interval of zero
    # width is no estimate either): its effects and net strengths are artefacts, not estimates
    empty = bool(result.fit.separated) or not len(decided)
    if empty:
        table.loc[:, "strength_net_of_position":"net_high"] = np.nan
        table.loc[:, "position_effect":"effect_high"] = np.nan
        shared = (np.nan, np.nan, np.nan)
    table = table.sort_values("strength_plain" if empty else "strength_net_of_position",
                              ascending=False, ignore_index=True)
    order = list(table["model"])
    plain_order = [part.models[i] for i in np.argsort(-np.round(result.plain, 6), kind="stable")]
    figures = {"votes": int(len(part)), "shared": shared[0], "shared_low": shared[1],
               "shared_high": shared[2], "per_model": per_model(len(part), len(part.models)),
               "models": len(part.models), "confounded": ", ".join(result.confounded),
               "order_changes": not empty and order != plain_order,
               "top_changes": not empty and order[0] != plain_order[0], "plain_top": plain_order[0],
               "separated": bool(result.fit.separated), "decided_votes": int(len(decided)),
               "side_won_all": ("A" if (decided == 1).all() else "B" if (decided == 0).all() else "") if len(decided)
               else ""}
    return table, figures


def sentences(question: str, unit: str, figures: dict, table: pd.DataFrame) -> list[str]:
    """What one question's position fit says, in words."""
    where = f"'{question}' ({unit})"
    if not figures.get("decided_votes", 1):
        return [f"{where}: every one of its {figures['votes']} votes is a tie: there is no decided vote to estimate "
                "the effect of the side a reply is shown on from, so neither a position effect nor a strength net "
                "of it is given."] + _confounded(where, figures)
    if figures["separated"]:
        if figures["side_won_all"]:
            said = (f"{where}: the effect of the side a reply is shown on has no finite estimate: side "
                    f"{figures['side_won_all']} won every decided vote, so no strength net of it exists either.")
        else:
            said = (f"{where}: some model never lost or never won, so the fit has no finite estimate: neither a "
                    "position effect nor a strength net of it is given.")
        return [said] + _confounded(where, figures)
    words = (f"{where}: the reply shown first (side A) gains {figures['shared']:+.2f} log-odds "
             f"[{figures['shared_low']:+.2f}, {figures['shared_high']:+.2f}] for every model")
    if figures["per_model"]:
        ranked = table.sort_values("position_effect")
        low, high = ranked.iloc[0], ranked.iloc[-1]
        words += (f"; with each model's own effect, from {low['model']} ({low['position_effect']:+.2f}) to "
                  f"{high['model']} ({high['position_effect']:+.2f})")
    out = [words + "; the strengths are net of it."]
    if figures["order_changes"]:
        out.append(f"{where}: holding position out of the strengths changes the order from the plain fit's"
                   + (f" (top: {table['model'].iloc[0]}, not {figures['plain_top']})." if figures["top_changes"]
                      else "."))
    out += _confounded(where, figures)
    if not figures["per_model"]:
        out.append(f"{where}: only the shared position effect is estimated: " + (
            "with two models a per-model effect would be the strength difference in disguise." if figures["models"] < 3
            else f"{figures['votes']} votes of {figures['models']} models are too many for the per-model design."))
    return out


def _confounded(where: str, figures: dict) -> list[str]:
    if not figures["confounded"]:
        return []
    return [f"{where}: {figures['confounded']} always appeared on one side: the design leaves position confounded "
            "with that model's strength (only their sum is estimated); show each model on both sides, at random."]
