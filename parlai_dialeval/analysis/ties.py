"""Ties as information: the Bradley-Terry-Davidson model (Davidson 1970) on the one Bradley-Terry fit.

P(i beats j) = e^(d/2) / Z, P(j beats i) = e^(-d/2) / Z, P(tie) = nu_q / Z, Z = e^(d/2) + e^(-d/2) + nu_q, with
d = s_i - s_j (+ covariates) and a tie parameter nu_q per question (or one). Among decided votes it is the plain
model, so its log-strengths are on the plain fit's scale; nu says how often people cannot tell two equal models
apart (a tie is then nu / (2 + nu) likely). The log-likelihood is an exponential family in (d / 2, log nu), so
its Hessian is the covariance of (win - loss) / 2 and the tie indicator: Newton's method is Fisher scoring, and
bradley_terry.fit gives the cluster-robust (CR1) sandwich (items within a model pair as clusters) unchanged.

"Both bad" (an arena's "tie (bothbad)", column ``tie_kind``) is a tie in the fit, its rate reported per model.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.analysis.bt_likelihood import Likelihood, gram


class _Davidson(Likelihood):
    """Davidson's likelihood: parameters are the strengths, the covariates' coefficients, then log nu per
    question (``questions``: an integer per vote; pseudo-votes beyond them count as question 0)."""

    def __init__(self, first, second, t, w, features, n_models: int, questions=None, n_questions: int = 1):
        self.q = np.zeros(len(t), np.int64)
        if questions is not None:
            self.q[:len(questions)] = questions
        self.n_q = n_questions
        super().__init__(first, second, t, w, features, n_models)
        share = np.divide(t, w, out=np.full(len(t), 0.5), where=w > 0)
        self.sign, self.tie = np.sign(np.rint(2 * share) - 1), (np.rint(2 * share) == 1).astype(float)
        self.indicator = np.eye(n_questions)[self.q]

    @property
    def n_params(self) -> int:
        return super().n_params + self.n_q

    def linear(self, beta: np.ndarray) -> np.ndarray:
        k = self.m - 1 + self.features.shape[1]
        return np.column_stack([super().linear(beta[:k]), beta[k:][self.q]])

    @staticmethod
    def probability(eta: np.ndarray) -> np.ndarray:
        logits = np.column_stack([eta[:, 0] / 2, -eta[:, 0] / 2, eta[:, 1]])
        return np.exp(logits - np.logaddexp.reduce(logits, axis=1)[:, None])  # win, loss, tie

    def loglik(self, eta: np.ndarray) -> float:
        half = eta[:, 0] / 2
        log_z = np.logaddexp.reduce(np.column_stack([half, -half, eta[:, 1]]), axis=1)
        return float(np.sum(self.w * (self.sign * half + self.tie * eta[:, 1] - log_z)))

    def residual(self, prob: np.ndarray) -> np.ndarray:
        return self.w * (self.sign - (prob[:, 0] - prob[:, 1])) / 2

    def scores(self, prob: np.ndarray) -> np.ndarray:
        return np.hstack([super().scores(prob), (self.w * (self.tie - prob[:, 2]))[:, None] * self.indicator])

    def hessian(self, prob: np.ndarray) -> np.ndarray:
        # per vote, the 2 x 2 covariance of ((win - loss) / 2, tie), written as two rank-one rows for gram
        win, loss, tie = prob.T
        vdd = self.w * (win + loss - (win - loss) ** 2) / 4
        vdt = -self.w * (win - loss) * tie / 2
        vtt = self.w * tie * (1 - tie)
        root = np.sqrt(vdd)
        ratio = np.divide(vdt, root, out=np.zeros_like(vdt), where=root > 1e-12)
        rest = np.sqrt(np.clip(vtt - ratio ** 2, 0, None))
        x, q = self.features, self.indicator
        cross = np.hstack([vdd[:, None] * x, vdt[:, None] * q])
        rows = np.vstack([np.hstack([root[:, None] * x, ratio[:, None] * q]),
                          np.hstack([np.zeros_like(x), rest[:, None] * q])])
        return gram(self.first, self.second, vdd, cross, rows, self.m)


@dataclass
class DavidsonFit:
    """Log-strengths (mean 0) with cluster-robust intervals, and nu per question with its interval (the
    exponential of log nu's t interval); ``fit``: bradley_terry's Fit (coefficients: covariates', then log nu)."""

    models: list[str]
    strengths: np.ndarray
    strength_low: np.ndarray
    strength_high: np.ndarray
    nu: np.ndarray
    nu_low: np.ndarray
    nu_high: np.ndarray
    fit: bt.Fit


def davidson(votes: bt.Votes, questions: np.ndarray | None = None, covariates: np.ndarray | None = None,
             alpha: float = 0.05) -> DavidsonFit:
    """The Davidson fit of ``votes`` (outcome 1, 1/2 for a tie, 0), with a tie parameter per code of
    ``questions`` (integers 0.., one per vote; None: one nu) and the strengths shared across questions."""
    codes = np.zeros(len(votes), np.int64) if questions is None else np.asarray(questions, np.int64)
    n_q = int(codes.max(initial=0)) + 1
    result = bt.fit(votes, covariates, likelihood=partial(_Davidson, questions=codes, n_questions=n_q))
    low, high = result.intervals(alpha)
    log_nu, (nu_low, nu_high) = result.coefficients[-n_q:], result.intervals(alpha, "coefficients")
    return DavidsonFit(votes.models, result.strengths, low, high, np.exp(log_nu), np.exp(nu_low[-n_q:]),
                       np.exp(nu_high[-n_q:]), result)


def tie_kinds(comparisons: pd.DataFrame) -> pd.Series:
    """'win', 'tie' or 'both_bad' per comparison: a tie is 'both_bad' where column ``tie_kind`` says so."""
    tie = comparisons["choice"].astype(str).eq("tie")
    both_bad = comparisons["tie_kind"].astype(str).eq("both_bad") if "tie_kind" in comparisons else False
    return pd.Series(np.select([tie & both_bad, tie], ["both_bad", "tie"], "win"), index=comparisons.index)


def model_rates(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Per model: its votes, the share that are ties of any kind and the share that are 'both bad'."""
    kind = tie_kinds(comparisons).to_numpy()
    # flags, not kind strings compared per model: a million votes' string comparisons took 5 s (issue 56)
    long = pd.DataFrame({"model": pd.concat([comparisons["model_a"], comparisons["model_b"]]).astype(str).to_numpy(),
                         "tie": np.tile(kind != "win", 2), "both_bad": np.tile(kind == "both_bad", 2)})
    table = long.groupby("model").agg(votes=("tie", "size"), tie_rate=("tie", "mean"),
                                      both_bad_rate=("both_bad", "mean"))
    return table.reset_index()


def section_fit(comparisons: pd.DataFrame, alpha: float = 0.05) -> tuple[pd.DataFrame, dict]:
    """One question's worker votes (automatic ties left out), Davidson's fit beside the plain one (ties half a
    win), both maximum likelihood with cluster-robust intervals: (a row per model, the question's figures)."""
    votes = bt.encode(comparisons)
    if len(votes) == 0 or len(votes.models) < 2:
        return pd.DataFrame(), {}
    part, members, keep = votes.largest_part()
    plain = bt.fit(part)
    plain_low, plain_high = plain.intervals(alpha)
    if np.any(np.rint(2 * part.outcome) == 1):
        davidson_fit = davidson(part, alpha=alpha)
    else:  # nu's estimate is 0 (log nu runs off to minus infinity, not a separation): Davidson's fit is the plain one
        none = np.full(1, np.nan)
        davidson_fit = DavidsonFit(part.models, plain.strengths, plain_low, plain_high, np.zeros(1), none, none, plain)
    worker = comparisons[~comparisons["automatic"].eq(True)] if "automatic" in comparisons else comparisons
    rates = model_rates(worker).set_index("model")
    table = pd.DataFrame({"model": part.models, "strength_davidson": davidson_fit.strengths,
                          "davidson_low": davidson_fit.strength_low, "davidson_high": davidson_fit.strength_high,
                          "strength_plain": plain.strengths, "plain_low": plain_low, "plain_high": plain_high})
    table = table.join(rates, on="model").sort_values("strength_davidson", ascending=False, ignore_index=True)
    kinds = tie_kinds(worker)
    figures = {"votes": int(len(part)), "tie_rate": float((kinds != "win").mean()),
               "both_bad_rate": float((kinds == "both_bad").mean()), "nu": float(davidson_fit.nu[0]),
               "nu_low": float(davidson_fit.nu_low[0]), "nu_high": float(davidson_fit.nu_high[0]),
               "spread": float(np.ptp(davidson_fit.strengths)),
               "separated_pairs": _apart(davidson_fit.strength_low, davidson_fit.strength_high),
               "pairs": len(part.models) * (len(part.models) - 1) // 2,
               "order_changes": _order(davidson_fit.strengths, part.models) != _order(plain.strengths, part.models),
               "left_out_models": len(votes.models) - len(part.models),
               "separated": bool(davidson_fit.fit.separated or plain.separated)}
    return table, figures


def _apart(low: np.ndarray, high: np.ndarray) -> int:
    """Model pairs whose intervals do not overlap."""
    return int(np.triu(low[:, None] > high[None, :]).sum() + np.triu(high[:, None] < low[None, :]).sum())


def _order(strengths: np.ndarray, models: list[str]) -> list[str]:
    return [models[i] for i in np.argsort(-np.round(strengths, 6), kind="stable")]


def sentence(question: str, unit: str, figures: dict, table: pd.DataFrame) -> str:
    """How well one question separates the models, in words: tie rate, nu and the spread of strengths."""
    both_bad = f" ({100 * figures['both_bad_rate']:.0f}% 'both bad')" if figures["both_bad_rate"] > 0 else ""
    words = (f"'{question}' ({unit}): {100 * figures['tie_rate']:.0f}% of {figures['votes']} worker votes are "
             f"ties{both_bad}")
    no_ties = figures["nu"] == 0  # no tie among the votes fitted: nu's estimate is 0, at its boundary
    if no_ties:  # (every vote fitted is then a worker's: automatic votes are ties)
        words = f"'{question}' ({unit}): " + (
            f"no ties were recorded among its {figures['votes']} worker votes" if figures["tie_rate"] == 0 else
            f"none of the {figures['votes']} votes fitted is a tie ({100 * figures['tie_rate']:.0f}% of its worker "
            "votes, outside the models fitted together, are)") + ": the tie parameter is 0"
    elif figures["tie_rate"] == 1:  # every vote fitted a tie (automatic votes are ties too)
        return words + (": the tie parameter has no finite estimate (it grows without bound) and the question "
                        "tells no two models apart.")
    if figures["separated"]:
        # under separation the fit runs off to infinity: its nu and span are artefacts, not estimates
        return words + ("; some model never lost or never won, so " + ("the strengths have no finite estimate"
                        if no_ties else "neither the tie parameter nor the strengths have a finite estimate")
                        + ": more votes are needed before this question can say how well it separates the models.")
    if no_ties:
        words += ", so Davidson's log-strengths are the plain fit's; they span"
    else:
        upper = f"{figures['nu_high']:.2f}" if np.isfinite(figures["nu_high"]) else "no finite upper bound"
        words += (f", tie parameter nu = {figures['nu']:.2f} [{figures['nu_low']:.2f}, {upper}]; Davidson's "
                  "log-strengths span")
    words += (f" {figures['spread']:.2f} ({table['model'].iloc[0]} to {table['model'].iloc[-1]}), "
              f"and {figures['separated_pairs']} of {figures['pairs']} model pairs have intervals apart")
    if figures["separated_pairs"] == 0:
        words += ": the question does not tell any two models apart"
    if figures["order_changes"]:
        words += ". Counting ties as information changes the order from the plain fit's (ties half a win)"
    return words + "."
