"""The batched Bradley-Terry bootstrap equals choix fitted round by round (issue 21)."""
from __future__ import annotations

import numpy as np

from parlai_dialeval.analysis import rankings


def test_batched_fits_equal_choix_round_by_round():
    rng = np.random.default_rng(4)
    matrices = rng.integers(0, 40, (25, 6, 6)).astype(float) + 0.5 * rng.integers(0, 3, (25, 6, 6))
    matrices[:, np.arange(6), np.arange(6)] = 0
    matrices[3] = 0
    matrices[3, 0, 1] = 5  # one one-sided pair: finite only through the regularisation
    batched = rankings.fit_bt_rounds(matrices)
    each = np.array([rankings.fit_bt(m) for m in matrices])  # choix.ilsr_pairwise_dense
    assert np.abs(batched - each).max() < 1e-6


def test_deduplicated_counts_equal_numpys_row_unique():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 7, 5000)
    b = (a + rng.integers(1, 7, 5000)) % 7
    outcome = rng.choice([0.0, 0.5, 1.0], 5000)
    rows, counts = rankings.deduplicate(a, b, outcome)
    expected_rows, expected_counts = np.unique(np.column_stack([a, b, outcome]), axis=0, return_counts=True)
    assert np.array_equal(rows, expected_rows) and np.array_equal(counts, expected_counts)


def test_bootstrap_intervals_are_unchanged_by_batching():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 5, 3000)
    b = (a + rng.integers(1, 5, 3000)) % 5
    outcome = (rng.random(3000) < 1 / (1 + np.exp(b - a))).astype(float)
    strengths, low, high = rankings.bradley_terry(a, b, outcome, 5, rounds=200, seed=3)
    unique, counts = rankings.deduplicate(a, b, outcome)
    draws = np.random.default_rng(3).multinomial(int(counts.sum()), counts / counts.sum(), size=200)
    boot = np.array([rankings.fit_bt(rankings.win_matrix(unique, d, 5)) for d in draws])
    assert np.allclose(low, np.percentile(boot, 2.5, axis=0), atol=1e-6)
    assert np.allclose(high, np.percentile(boot, 97.5, axis=0), atol=1e-6)
