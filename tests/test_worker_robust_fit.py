"""cluster_robust.worker_robust_fit: CR2 from each worker's small p x p matrix equals CR2 written out with each
worker's n_g x n_g block of the hat matrix."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.analysis.cluster_robust import worker_robust_fit


def test_cr2_equals_the_sandwich_written_out_worker_by_worker():
    rng = np.random.default_rng(7)
    workers = rng.choice(["a", "b", "c", "d", "e"], 80).astype(object)
    workers[rng.random(80) < 0.2] = None  # each a cluster of one row
    alone = (workers == "a") & (rng.random(80) < 0.5)  # a model only worker a rated: leverage 1 in a's block
    design = np.column_stack([np.ones(80), rng.normal(size=80), alone, 2 * alone])  # and a collinear column
    values = rng.normal(size=80) + alone

    fit = worker_robust_fit(values, design, workers)

    bread = np.linalg.pinv(design.T @ design)
    residual = values - design @ bread @ design.T @ values
    clusters = [workers == w for w in "abcde"] + [np.arange(80) == i for i in np.flatnonzero(pd.isna(workers))]
    meat = np.zeros((4, 4))
    for rows in clusters:
        room, vectors = np.linalg.eigh(np.eye(rows.sum()) - design[rows] @ bread @ design[rows].T)
        # (I - H_gg)^(-1/2) as the Moore-Penrose inverse of the root: 0 where the leverage is 1
        root = np.where(room > 1e-10, 1 / np.sqrt(np.clip(room, 1e-10, None)), 0)
        score = design[rows].T @ (vectors @ np.diag(root) @ vectors.T @ residual[rows])
        meat += np.outer(score, score)
    assert fit.params == pytest.approx(bread @ design.T @ values)
    assert fit.bse == pytest.approx(np.sqrt(np.diag(bread @ meat @ bread)), rel=1e-9)
    assert fit.tvalues == pytest.approx(fit.params / fit.bse)
