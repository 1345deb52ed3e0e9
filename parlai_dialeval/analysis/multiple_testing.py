"""Multiple-comparison correction shared by the analyses (statsmodels' multipletests), NaN-aware.

Every report that runs several tests corrects by default (Holm: family-wise, valid under any
dependence between the tests); ``none`` switches it off and the report says so.
"""
from __future__ import annotations

import numpy as np

from parlai_dialeval.gc_freeze import frozen_heap

CORRECTIONS = ("holm", "bonferroni", "sidak", "holm-sidak", "fdr_bh", "fdr_by", "none")
DEFAULT_CORRECTION = "holm"
NAMES = {"holm": "Holm (family-wise)", "bonferroni": "Bonferroni (family-wise)", "sidak": "Sidak (family-wise)",
         "holm-sidak": "Holm-Sidak (family-wise)", "fdr_bh": "Benjamini-Hochberg (false discovery rate)",
         "fdr_by": "Benjamini-Yekutieli (false discovery rate)", "none": "none"}
HELP = ("multiple-comparison correction over all the tests of a table (statsmodels multipletests): holm and "
        "bonferroni/sidak control the family-wise error, fdr_bh/fdr_by the false discovery rate; none switches it off")


def adjust(p_values, method: str = DEFAULT_CORRECTION) -> np.ndarray:
    """Adjusted p-values; NaN (no test possible) stays NaN and is not counted in the family."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    if method == "none":
        out[finite] = p[finite]
    elif finite.any():
        from statsmodels.stats.multitest import multipletests  # 0.5 s: only when a table is corrected

        # statsmodels' Holm runs a full gc.collect() on every call (multitest.py, 0.15): 0.1 s in a command,
        # 0.4 s beside two million objects; frozen, the heap is not scanned, only what the call made
        with frozen_heap():
            out[finite] = multipletests(p[finite], method=method)[1]
    return out


def describe(method: str, tests: int) -> str:
    """One sentence for a report."""
    if method == "none":
        return f"No multiple-comparison correction over the {tests} test(s) (switched off)."
    return f"p-values corrected for {tests} test(s) with {NAMES[method]} (p_adjusted)."
