"""Post-stratification of the people who judged to a researcher's target population: raking (iterative
proportional fitting, Deming & Stephan 1940) of one weight per worker to target margins of one or several
attributes, and Kish's effective sample size of the weights.

Pure: the workers' attribute levels and the targets in, a weight per worker out. The targets' file is read (with
its file and line in every error) in results/user_files.py ``read_targets``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.errors import DialevalError

# Margins are matched to this (relative to the total weight) before raking stops; the tests ask 1e-9.
TOLERANCE = 1e-12
MAX_ROUNDS = 10_000


def kish(weights) -> float:
    """Kish's effective sample size, (sum w)^2 / sum w^2: how many unweighted workers the weighted ones are
    worth."""
    w = np.asarray(weights, float)
    return float(w.sum() ** 2 / np.sum(w ** 2)) if len(w) and np.sum(w ** 2) > 0 else 0.0


def rake(levels: pd.DataFrame, targets: dict[str, dict[str, float]], tolerance: float = TOLERANCE,
         max_rounds: int = MAX_ROUNDS) -> np.ndarray:
    """One weight per row of ``levels`` (a worker per row, a column per attribute: the worker's level as text),
    mean 1, whose weighted shares of every attribute's levels are the ``targets`` (attribute -> level -> share,
    summing to 1). One attribute is post-stratification (one step); several are raked, each margin in turn, until
    every margin is within ``tolerance``. Hand-written: ipfn (last release 2021) rakes contingency tables, not a
    weight per unit, and weightipy stops at a 0.01% criterion and brings watchdog and requests; per-unit IPF is
    these few lines. A DialevalError where the margins cannot all be met (a target level no worker has, or
    targets that contradict each other through the workers' joint levels)."""
    n = len(levels)
    if n == 0:
        raise DialevalError("no workers to weight: none has every attribute of the targets")
    codes, shares = [], []
    for attribute, wanted in targets.items():
        present = levels[attribute].astype(str).to_numpy()
        names = list(wanted)
        missing = sorted(set(present) - set(names))
        if missing:
            raise DialevalError(f"targets for {attribute!r} give no share for level(s) {', '.join(missing)} that "
                                "workers have (give every level a row, or leave those workers out)")
        index = {name: i for i, name in enumerate(names)}
        code = np.array([index[value] for value in present], np.int64)
        empty = [name for i, name in enumerate(names) if wanted[name] > 0 and not np.any(code == i)]
        if empty:
            raise DialevalError(f"targets for {attribute!r}: no worker has level(s) {', '.join(empty)}, so no "
                                "weighting can give them their share")
        codes.append(code)
        shares.append(np.array([wanted[name] for name in names], float))
    weights = np.ones(n)
    for _ in range(max_rounds):
        for code, share in zip(codes, shares):
            totals = np.bincount(code, weights, len(share))
            factor = np.divide(share * n, totals, out=np.zeros_like(share), where=totals > 0)
            weights = weights * factor[code]
        if max(np.max(np.abs(np.bincount(code, weights, len(share)) / n - share)) for code, share in
               zip(codes, shares)) <= tolerance:
            return weights
    raise DialevalError(f"raking did not meet every target margin within {max_rounds} rounds: the targets "
                        "contradict each other for the workers' combinations of levels (a level of one attribute "
                        "that only workers of another's zero-share level have)")
