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
