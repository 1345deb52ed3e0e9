"""What a study costs before it runs: judgments, worker-hours and money per protocol for a chosen power
and alpha (../shared/notes/adaptive_evaluation.md, section 4).

Fixed-n sizes come from statsmodels' power solvers; the sequential (anytime-valid) design has no
closed form, so its stopping time is simulated with the same betting e-process ``dialeval certify``
uses, and reported as median and 80th / 90th percentiles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from statsmodels.stats.power import NormalIndPower, TTestIndPower
from statsmodels.stats.proportion import proportion_effectsize, samplesize_proportions_2indep_onetail

from parlai_dialeval.adaptive.sequential import wealth_paths

PROTOCOLS = ("pairwise", "sm_turn", "sm_dialog")
PERCENTILES = (50, 80, 90)  # p50 is the median


@dataclass(frozen=True)
class Costs:
    """What one judgment costs: seconds of work, the share of workers whose work passes quality
    control (the rest is paid and discarded), pay per hour and the platform's fee on top."""

    seconds_per_judgment: float = 67.0  # Smith et al. 2022: PW-Dialog, about 67 s per judgment
    qc_pass_rate: float = 1.0
    hourly_pay: float = 12.0
    fee: float = 0.333  # Prolific's service fee on rewards (a third, as of 2026)

    def table(self, judgments: float) -> dict[str, float]:
        paid = judgments / self.qc_pass_rate
        hours = paid * self.seconds_per_judgment / 3600
        return {"judgments": judgments, "paid_judgments": paid, "worker_hours": hours,
                "money": hours * self.hourly_pay * (1 + self.fee)}


def pairwise_decisive_votes(win_rate: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Decisive (non-tie) votes for a two-sided test of win rate 0.5 to reach ``power`` at ``win_rate``
    (normal approximation: 782 / 194 / 85 at 0.55 / 0.60 / 0.65)."""
    return NormalIndPower().solve_power(proportion_effectsize(win_rate, 0.5), alpha=alpha, power=power, ratio=0)


def sm_turn_per_model(rate_a: float, rate_b: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Turn judgments per model to tell SM-Turn success rates apart (1,376 for 0.70 vs 0.65)."""
    return samplesize_proportions_2indep_onetail(abs(rate_a - rate_b), min(rate_a, rate_b), power, alpha=alpha,
                                                 alternative="two-sided")


def sm_dialog_per_model(mean_a: float, mean_b: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Dialogues per model to tell SM-Dialog Likert means apart (325 for Smith's 4.19 vs 3.97, SD 1)."""
    return TTestIndPower().solve_power(effect_size=abs(mean_a - mean_b) / sd, alpha=alpha, power=power)


def sequential_decisive_votes(win_rate: float, alpha: float = 0.05, simulations: int = 400, cap: int = 20000,
                              seed: int = 0) -> dict[int, float]:
    """Percentiles of the decisive votes the betting e-process needs to certify a pair at ``win_rate``,
    looking after every vote; runs still open at ``cap`` count as ``cap`` (the figure is then a bound)."""
    rng = np.random.default_rng(seed)
    stops = np.full(simulations, float(cap))
    block = 500
    for run in range(simulations):
        wins = np.empty(0)
        while len(wins) < cap:
            wins = np.concatenate([wins, (rng.random(block) < win_rate).astype(float)])
            hits = np.flatnonzero(wealth_paths(wins) >= 1 / alpha)
            if hits.size:
                stops[run] = hits[0] + 1
                break
            block = min(2 * block, cap)
    return {q: float(np.percentile(stops, q)) for q in PERCENTILES}


def plan_pairwise(win_rates: list[float], tie_rate: float, costs: Costs, alpha: float = 0.05, power: float = 0.8,
                  comparisons: int = 1, simulations: int = 400) -> pd.DataFrame:
    """Per assumed win rate: fixed-n and sequential designs, each as decisive votes, all votes (ties
    included) and their cost. ``comparisons`` pairs share alpha (Bonferroni), as a study's pairs do."""
    if not 0 <= tie_rate < 1:
        raise ValueError(f"tie rate must be in [0, 1), got {tie_rate}")
    level = alpha / comparisons
    rows = []
    for rate in win_rates:
        if not 0.5 < rate < 1:
            raise ValueError(f"win rate must be above 0.5 and below 1, got {rate}")
        designs = {"fixed": {"n": math.ceil(pairwise_decisive_votes(rate, level, power))}}
        designs["sequential"] = {f"p{q}": votes for q, votes in
                                 sequential_decisive_votes(rate, level, simulations).items()}
        for design, statistics in designs.items():
            for statistic, decisive in statistics.items():
                rows.append({"protocol": "pairwise", "assumption": f"win rate {rate:.2f}", "design": design,
                             "statistic": statistic, "decisive_votes": decisive,
                             **costs.table(decisive / (1 - tie_rate))})
    return pd.DataFrame(rows)


def plan_per_model(protocol: str, size: float, costs: Costs, assumption: str, judgments_per_unit: int = 1) -> dict:
    """One fixed-n row for a single-model protocol: ``size`` units per model (turns or dialogues)."""
    units = math.ceil(size)
    return {"protocol": protocol, "assumption": assumption, "design": "fixed", "statistic": "n",
            "units_per_model": units, **costs.table(units * judgments_per_unit)}


def assumptions_from_pilot(comparisons: pd.DataFrame, turn_ratings: pd.DataFrame,
                           dialog_ratings: pd.DataFrame) -> dict:
    """Planning assumptions measured on a pilot's export: per model pair the observed win rate of the
    better model among decided votes, the tie share, median seconds per judgment, and for single-model
    protocols the two best models' SM-Turn success rates and SM-Dialog Likert means with the pooled SD.
    Only what the pilot holds is returned; a pilot that cannot tell models apart raises ValueError."""
    found: dict = {}
    if len(comparisons):
        from parlai_dialeval.analysis.pairwise import oriented

        votes = oriented(comparisons)
        decided = votes[votes["score"] != 0].groupby(["first", "second"])["score"].agg(
            wins=lambda s: int((s > 0).sum()), n="size")
        if decided.empty:
            raise ValueError("the pilot's comparisons are all ties: no win rate to plan for")
        rates = (decided["wins"] / decided["n"]).to_numpy()
        better = np.maximum(rates, 1 - rates)
        if np.all(better >= 1):
            raise ValueError("every pilot pair was decided unanimously (no variance): a win rate of 1 cannot size "
                             "a study; give --win-rates instead")
        found["win_rates"] = sorted({round(float(r), 3) for r in better if 0.5 < r < 1}) or [0.55]
        found["tie_rate"] = float((votes["score"] == 0).mean())
        if "duration" in votes and votes["duration"].notna().any():
            found["seconds_per_judgment"] = float(votes["duration"].median())
    if len(turn_ratings):
        rates = turn_ratings.groupby("model")["value"].mean().sort_values(ascending=False)
        if len(rates) >= 2 and rates.iloc[0] != rates.iloc[1]:
            found["sm_turn_rates"] = [float(rates.iloc[0]), float(rates.iloc[1])]
    if len(dialog_ratings):
        means = dialog_ratings.groupby("model")["value"].mean().sort_values(ascending=False)
        sd = float(dialog_ratings.groupby("model")["value"].std().mean())
        if len(means) >= 2:
            if not sd > 0:
                raise ValueError("the pilot's SM-Dialog scores do not vary within a model (SD 0): no study size "
                                 "follows from them; give --sm-dialog-sd instead")
            found["sm_dialog_means"], found["sm_dialog_sd"] = [float(means.iloc[0]), float(means.iloc[1])], sd
    if not found:
        raise ValueError("the pilot holds no comparisons and no SM-Turn or SM-Dialog ratings of two models")
    return found
