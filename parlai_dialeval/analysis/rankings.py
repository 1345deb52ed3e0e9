"""Rankings from pairwise votes: Bradley-Terry strengths with bootstrap intervals (choix) and
TrueSkill mu/sigma (trueskill), as Lee et al. 2020 (2.2) use them.

Tie policy (TIE_POLICY): a worker tie counts as half a win for each model in Bradley-Terry and as a
draw in TrueSkill; automatic ties (identical responses, no worker judgement) are left out of both.

The votes' encoding, the fits and the bootstrap are analysis.bradley_terry's (``bootstrap``: votes
deduplicated into counts of distinct rows, each round's counts drawn from a multinomial, all rounds fitted at
once; whole clusters resampled where several votes judge one item).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import trueskill
from tqdm import tqdm

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.analysis.intervals import few_rounds

# Strengths closer than this (log-strength; the fits converge to about 1e-8) are equal: their models share a rank.
RANK_TOLERANCE = 1e-6
TIE_POLICY = ("Bradley-Terry: a worker tie is half a win for each model; TrueSkill: a worker tie is a "
              "draw; automatic ties (identical responses) are excluded from both")
RANKING_COLUMNS = ["model", "votes", "component", "rank", "bt_score", "bt_ci_low", "bt_ci_high", "bt_note", "trueskill_mu",
                   "trueskill_sigma", "win_count"]


def trueskill_ratings(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_models: int,
                      progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """TrueSkill (mu, sigma) per model after rating every vote as a 1-vs-1 game in data order; the
    environment's draw probability is the observed tie share.

    Hand-written update: trueskill.rate_1vs1 builds a factor graph per game (about 0.5 ms: 8 minutes for a
    million votes); for two players it reduces to Herbrich et al.'s (2007) closed form, computed here with
    the library's own environment, draw margin and cdf/pdf (tests/test_rankings.py checks it game by game)."""
    ties = float(np.mean(outcome == 0.5)) if len(outcome) else 0.0
    env = trueskill.TrueSkill(draw_probability=min(max(ties, 1e-6), 0.99))
    cdf, pdf, beta2, tau2 = env.cdf, env.pdf, env.beta ** 2, env.tau ** 2
    margin = trueskill.calc_draw_margin(env.draw_probability, 2, env=env)
    mu, var = [env.mu] * n_models, [env.sigma ** 2] * n_models
    for i, j, o in tqdm(zip(a.tolist(), b.tolist(), outcome.tolist()), total=len(a), desc="TrueSkill",
                        disable=not progress):
        if o == 0.0:
            i, j = j, i
        vi, vj = var[i] + tau2, var[j] + tau2
        c = math.sqrt(2 * beta2 + vi + vj)
        t, e = (mu[i] - mu[j]) / c, margin / c
        if o == 0.5:
            mass = cdf(e - t) - cdf(-e - t)
            v = (pdf(-e - t) - pdf(e - t)) / mass
            w = v * v + ((e - t) * pdf(e - t) + (e + t) * pdf(e + t)) / mass
        else:
            v = pdf(t - e) / cdf(t - e)
            w = v * (v + t - e)
        mu[i], mu[j] = mu[i] + vi / c * v, mu[j] - vj / c * v
        var[i], var[j] = vi * (1 - vi / c ** 2 * w), vj * (1 - vj / c ** 2 * w)
    return np.array(mu), np.sqrt(np.array(var))


def _no_finite_fit(names: list[str], never_lost: list[int], never_won: list[int]) -> str:
    """bt_note of a part whose votes do not link every model both ways (bradley_terry.unlinked)."""
    who = [f"{', '.join(names[i] for i in found)} never {what}" for found, what in ((never_lost, "lost"),
                                                                                 (never_won, "won")) if found]
    return ("no interval: " + ("; ".join(who) if who else "a group of models never lost to the others")
            + " in this part, so its strengths have no finite estimate (the scores are set by the fit's "
            "regularisation, and so would be intervals from resamples)")


def rankings(comparisons: pd.DataFrame, rounds: int = 1000, seed: int = 0, win_counts: pd.Series | None = None,
             progress: bool = False, ci: float = 0.95) -> pd.DataFrame:
    """model, votes (worker votes the model took part in: the unit of analysis), component, rank,
    bt_score, bt_ci_low, bt_ci_high, bt_note, trueskill_mu, trueskill_sigma, win_count, sorted by component then bt_score (win_count: Lee's system win count, passed in from
    pairwise.system_win_counts; ``ci``: the bootstrap intervals' confidence level).

    Bradley-Terry is fitted within each connected part of the comparison graph (``component``, 1 =
    largest; ``rank`` is within it), each vote weighted by its ``weight`` where the comparisons carry one
    (bradley_terry.encode; TrueSkill and ``votes`` count votes). Where the bootstrap cannot vary (a part whose votes are all of one
    kind, e.g. a single vote or a one-sided pair, or a single round), or where the part has no finite fit (a model
    that never lost or never won: bradley_terry.unlinked), no interval is given and ``bt_note`` says why;
    with fewer than intervals.MIN_BOOTSTRAP_ROUNDS rounds it says that the interval given is rough."""
    votes = bt.encode(comparisons)
    models, a, b, outcome = votes.models, votes.first, votes.second, votes.outcome
    if len(models) < 2:
        return pd.DataFrame(columns=RANKING_COLUMNS)
    part = bt.components(a, b, len(models))
    counted = np.bincount(a, minlength=len(models)) + np.bincount(b, minlength=len(models))
    frame = pd.DataFrame({"model": models, "votes": counted, "component": part, "bt_score": np.nan,
                          "bt_ci_low": np.nan, "bt_ci_high": np.nan, "bt_note": ""})
    for label in np.unique(part):
        members = np.flatnonzero(part == label)
        if len(members) < 2:
            frame.loc[members, "bt_note"] = "no votes"
            continue
        local = np.full(len(models), -1)
        local[members] = np.arange(len(members))
        rows = part[a] == label
        within = votes.subset(rows, local, [models[i] for i in members])
        strength, low, high = bt.bootstrap(within, rounds=rounds, ci=ci, seed=seed, progress=progress)
        frame.loc[members, "bt_score"] = strength
        kinds, counts = bt.kinds(within.first, within.second, within.outcome, within.weights)
        if len(counts) == 1:
            frame.loc[members, "bt_note"] = ("no interval: every vote in this part is the same outcome of the "
                                             "same pair, so the bootstrap cannot vary")
        elif rounds == 1:
            frame.loc[members, "bt_note"] = ("no interval: a single bootstrap round has no spread; an "
                                             "interval takes 2 or more rounds")
        elif (separated := bt.unlinked(bt.win_matrix(kinds, counts, len(members)))) is not None:
            frame.loc[members, "bt_note"] = _no_finite_fit([models[i] for i in members], *separated)
        elif rounds > 0:
            fixed = np.isclose(low, high, rtol=0, atol=1e-9)
            frame.loc[members, "bt_ci_low"] = np.where(fixed, np.nan, low)
            frame.loc[members, "bt_ci_high"] = np.where(fixed, np.nan, high)
            frame.loc[members[fixed], "bt_note"] = "no interval: the bootstrap did not vary"
            if rough := few_rounds(rounds):
                frame.loc[members[~fixed], "bt_note"] = f"rough interval: {rough}"
    mu, sigma = trueskill_ratings(a, b, outcome, len(models), progress=progress)
    frame["trueskill_mu"], frame["trueskill_sigma"] = mu, sigma
    counts = win_counts if win_counts is not None else pd.Series(dtype=int)
    frame["win_count"] = frame["model"].map(counts).fillna(0).astype(int)
    frame = frame.sort_values(["component", "bt_score"], ascending=[True, False], ignore_index=True)
    for _, rows in frame.groupby("component").groups.items():
        frame.loc[rows, "rank"] = shared_ranks(frame.loc[rows, "bt_score"].to_numpy())
    frame["rank"] = frame["rank"].astype(int)
    return frame[RANKING_COLUMNS]


def shared_ranks(strengths, tolerance: float = RANK_TOLERANCE) -> np.ndarray:
    """Rank 1 for the strongest: 1 + the number of strengths above each by more than ``tolerance``, so that models
    whose strengths are equal to the fits' precision share a rank and a rank never says more than its table; a
    model without a strength (NaN) comes after every model with one."""
    values = np.asarray(strengths, dtype=float)
    finite = np.isfinite(values)
    ranks = np.full(len(values), finite.sum() + 1.0)
    ranks[finite] = 1 + (values[finite][None, :] - values[finite][:, None] > tolerance).sum(axis=1)
    return ranks
