"""Every pairwise number unchanged by issue 56's refactor (one Bradley-Terry, results as objects).

Golden outputs: tests/fixtures/pairwise_regression/, written by analyze_pairwise at commit d138b2d (main before
the refactor) with the command in tests/pairwise_regression.py's docstring, from the fixed studies built there
(small with a model that never loses, medium, ties on PW-Turn with two questions, the user's style covariates,
categories from rules and from meta labels, workers flagged with and without --exclude-flagged, ACUTE dialogs
with automatic ties, onboarding, two studies, a disconnected pair and variants, an LLM judge; fragility on in
every one, as the command always runs it). Each table and the summary must match: strings exactly, numbers to
1e-12 (relative beyond 1).
"""
from __future__ import annotations

import io
import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pairwise_regression import FIXTURES, outputs, studies

pytestmark = pytest.mark.slow
TOLERANCE = 1e-12


def _close(got, want) -> bool:
    if isinstance(want, float) or isinstance(got, float):
        if isinstance(want, (int, float)) and isinstance(got, (int, float)):
            if math.isnan(want) or math.isnan(got):
                return math.isnan(want) and math.isnan(got)
            return got == want or abs(got - want) <= TOLERANCE * max(1.0, abs(want))
        return False
    return got == want


def _same_json(got, want, where: str) -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        problems = [f"{where}: keys {sorted(set(got) ^ set(want))}"] if set(got) != set(want) else []
        return problems + [p for key in want if key in got for p in _same_json(got[key], want[key], f"{where}.{key}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items, expected {len(want)}"]
        return [p for i, (g, w) in enumerate(zip(got, want)) for p in _same_json(g, w, f"{where}[{i}]")]
    return [] if _close(got, want) else [f"{where}: {got!r}, expected {want!r}"]


def _frame(table: pd.DataFrame) -> pd.DataFrame:
    """A table as the fixture holds it: through CSV with every digit of every float."""
    text = table.to_csv(index=False, float_format="%.17g")
    return pd.read_csv(io.StringIO(text), float_precision="round_trip", keep_default_na=False, na_values=[""])


def _same_table(got: pd.DataFrame, want: pd.DataFrame, where: str) -> list[str]:
    if list(got.columns) != list(want.columns) or len(got) != len(want):
        return [f"{where}: columns {list(got.columns)} x {len(got)} rows, expected {list(want.columns)} x {len(want)}"]
    problems = []
    for column in want.columns:
        g, w = got[column].to_numpy(), want[column].to_numpy()
        if pd.api.types.is_numeric_dtype(want[column]) and pd.api.types.is_numeric_dtype(got[column]):
            g, w = g.astype(float), w.astype(float)
            with np.errstate(invalid="ignore"):  # inf - inf
                bad = ~((np.isnan(g) & np.isnan(w)) | (g == w) | (np.abs(g - w) <= TOLERANCE * np.maximum(1.0, np.abs(w))))
        else:
            bad = np.array([not _close(x, y) for x, y in zip(g, w)], dtype=bool)
        for row in np.flatnonzero(bad)[:3]:
            problems.append(f"{where}.{column}[{row}]: {g[row]!r}, expected {w[row]!r}")
    return problems


@pytest.mark.parametrize("name", list(studies()))
def test_pairwise_outputs_equal_those_of_d138b2d(name):
    frame, settings = studies()[name]
    with tempfile.TemporaryDirectory() as folder:
        got = outputs(frame, settings, Path(folder))
    golden = FIXTURES / name
    expected = {path.stem for path in golden.glob("*.csv")}
    assert set(got["tables"]) == expected
    problems = []
    for table in sorted(expected):
        want = pd.read_csv(golden / f"{table}.csv", float_precision="round_trip", keep_default_na=False,
                           na_values=[""])
        problems += _same_table(_frame(got["tables"][table]), want, f"{name}/{table}")
    problems += _same_json(got["summary"], json.loads((golden / "summary.json").read_text(encoding="utf-8")), name)
    assert not problems, "\n".join(problems[:40])
