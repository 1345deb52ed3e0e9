"""dialeval plan --judge-agreement: the planned share of human items against simulated PPI++ studies
(a generator written here: Beta item shares, Bernoulli votes, a judge that follows the votes' majority)."""
from __future__ import annotations

import numpy as np
import pytest

from parlai_dialeval.adaptive import ppi, ppi_planning


def _study(rng, items: int, pool: int, agreement: float, p: float = 0.6, icc: float = 0.3, m: int = 3):
    a, b = p * (1 - icc) / icc, (1 - p) * (1 - icc) / icc
    share = rng.beta(a, b, items + pool)
    votes = (rng.random((items + pool, m)) < share[:, None]).astype(float)
    mean = votes.mean(axis=1)
    majority = np.where(mean > 0.5, 1.0, 0.0)  # m = 3 decided votes never tie
    judge = np.where(rng.random(items + pool) < agreement, majority, 1 - majority)
    return ppi.ppi_mean(votes[:items].ravel(), np.repeat(judge[:items], m), judge[items:],
                        np.repeat(np.arange(items), m), np.arange(pool))


def test_the_planned_share_gives_the_human_only_precision():
    rho = ppi_planning.judge_correlation(0.9, 0.6, 3, 0.3)
    share = ppi_planning.human_share(rho, 5, 200)
    assert 0.3 < share < 0.8
    rng = np.random.default_rng(4)
    human_only = np.mean([_study(rng, 200, 1000, 0.9).human_se[0] for _ in range(300)])
    with_judge = np.mean([_study(rng, round(share * 200), 1000, 0.9).se[0] for _ in range(300)])
    assert with_judge == pytest.approx(human_only, rel=0.05)


def test_a_useless_judge_plans_the_human_only_study():
    rho = ppi_planning.judge_correlation(0.5, 0.6, 3, 0.13)
    assert abs(rho) < 0.01
    assert ppi_planning.human_share(rho, 5, 300) == pytest.approx(1, abs=1e-3)


def test_the_share_by_hand():
    """rho^2 = 0.5, pool 1x: with x = G / G_h, x = 1 - 0.5 / (1 + x), so x (1 + x) = 0.5 + x: x = sqrt(1/2);
    rho^2 = 0.5, pool 3x: x = 1 - 1.5 / (3 + x), x^2 + 2x - 1.5 = 0: x = -1 + sqrt(2.5)."""
    assert ppi_planning.human_share(np.sqrt(0.5), 1, 100) == pytest.approx(np.sqrt(0.5), rel=1e-9)
    assert ppi_planning.human_share(np.sqrt(0.5), 3, 100) == pytest.approx(np.sqrt(2.5) - 1, rel=1e-9)


def test_plan_command_puts_the_judge_designs_next_to_the_human_only_ones(tmp_path):
    import pandas as pd

    from parlai_dialeval.cli import main

    assert main(["plan", "--out", str(tmp_path), "--simulations", "10", "--judge-agreement", "0.9",
                 "--win-rates", "0.6", "--votes-per-item", "3", "--icc", "0.13"]) == 0
    human = pd.read_csv(tmp_path / "pairwise_plan.csv")
    judge = pd.read_csv(tmp_path / "judge_plan.csv")
    fixed = human[human["design"] == "fixed"].iloc[0]
    row = judge.iloc[0]
    assert row["human_only_judgments"] == fixed["judgments"]
    rho = ppi_planning.judge_correlation(0.9, 0.6, 3, 0.13)
    share = ppi_planning.human_share(rho, 5, fixed["items"])
    assert fixed["judgments"] == 3 * fixed["items"]
    assert row["judgments"] == pytest.approx(fixed["judgments"] * share)
    assert row["judgments"] < 0.8 * fixed["judgments"]
    assert "With an LLM judge" in (tmp_path / "report.html").read_text()
