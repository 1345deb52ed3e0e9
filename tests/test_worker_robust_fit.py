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
    assert fit.bse[:2] == pytest.approx(np.sqrt(np.diag(bread @ meat @ bread))[:2], rel=1e-9)
    assert np.isnan(fit.bse[2:]).all()  # the model only worker a rated: no measured spread (the test below)
    assert fit.tvalues[:2] == pytest.approx(fit.params[:2] / fit.bse[:2])


def test_a_model_one_worker_rated_alone_has_no_interval_rather_than_one_of_width_zero():
    # worker w0 rated every conversation of model c (and nothing else): CR1 and CR2 both give c's mean a standard
    # error of 0, an interval of width 0; nothing measures how another worker would have rated c
    from parlai_dialeval.analysis.single_model import ttests

    workers = np.array([f"w{i % 6}" for i in range(60)], dtype=object)
    model = np.where(workers == "w0", "c", np.array(["a", "b"] * 30))
    values = np.random.default_rng(0).normal(size=60)
    dummies = (model[:, None] == np.array(["a", "b", "c"])[None, :]).astype(float)
    fit = worker_robust_fit(values, dummies, workers)
    assert np.isfinite(fit.bse[:2]).all() and np.isnan(fit.bse[2])
    scores = pd.DataFrame({"model": model, "worker_id": workers, "value": values, "criterion": "overall"})
    table = ttests(scores, [("a", "b"), ("a", "c"), ("c", "b")]).set_index(["model_a", "model_b"])
    assert table.loc[("a", "b"), "note"] == "" and np.isfinite(table.loc[("a", "b"), "p"])
    for pair in (("a", "c"), ("c", "b")):
        assert table.loc[pair, "note"].startswith("no test: one worker rated every conversation of a model")
        assert np.isnan(table.loc[pair, ["p", "ci_low", "ci_high", "t"]].astype(float)).all()
