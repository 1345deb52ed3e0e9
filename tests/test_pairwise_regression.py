"""Every pairwise number unchanged by issue 56's refactor (one Bradley-Terry, results as objects).

Golden outputs: tests/fixtures/pairwise_regression/, written by analyze_pairwise at commit d138b2d (main before
the refactor) with the command in tests/pairwise_regression.py's docstring, from the fixed studies built there
(small with a model that never loses, medium, ties on PW-Turn with two questions, the user's style covariates,
categories from rules and from meta labels, workers flagged with and without --exclude-flagged, ACUTE dialogs
with automatic ties, onboarding, two studies, a disconnected pair and variants, an LLM judge; fragility on in
every one, as the command always runs it). Each table and the summary, as the library call computes them
(results.pairwise: what the command writes, without its report's figures), must match: strings exactly, numbers to
1e-12 (relative beyond 1).

Changed on purpose, and checked here in their new form instead (CHANGED): issue 50 item 5 made the small study's
style control say in words what cannot be estimated (a model that never lost is left out, the others are fitted
without its votes; the covariates separate the rest, so no coefficient or controlled strength exists) where
d138b2d printed runaway estimates (-12.0, a coefficient -29.8 with interval +-2,200); tests/test_style_control.py
has its own test of it.

Added since, and checked here as added (ADDED): issue 55 (the arena) puts in the summary the votes left out as
void (``voided``: anonymity_leak, duplicate_prompt, by reason), empty for every one of these studies; merged into
issue 56's branch, every other number of the ten studies is still d138b2d's.

Changed on purpose by issue 50, and checked here in their new form (``_issue50``), every other number as before:
- item 7, the voter tests allow the crowd's spread of honest tastes (adaptive/voter_taste.py): ``voter_flags.csv``
  and the summary's ``voter_flags`` ``evidence`` and ``tests`` (the crowd tests' descriptions) are new, and
  ``taste_sd`` is added; the workers flagged, and so every table after them, are d138b2d's (tests/test_voter_flags.py
  and tests/test_voter_taste.py check the new tests themselves).
- item 6, fragility: ``fragility_rankings.csv`` gains ``votes_exact`` and ``workers_exact``; its counts are made
  exact by exhaustive search where that is feasible, so a count may only fall, or appear where d138b2d found no
  removal (``votes_to_reverse``, ``workers_to_reverse``); each sentence says "at most" and "(exact ...)" or
  "(approximate ...)", and says the same as d138b2d's otherwise where its counts are unchanged. The loss of
  significance is new (``fragility_significance.csv``, the summary's ``fragility.significance``: its sentences),
  checked against brute force in tests/test_fragility.py.

Changed on purpose, and checked here in their new form (``_kish``): p_two_way's sandwich has CR2 terms and its t
the effective number of items or workers less 1 degrees of freedom, beside a new column ``effective_workers`` (with
CR1 and the count, equal models were told apart in 0.135 of simulated studies where 3 of 30 workers gave 57% of the
votes); and the design effect of a win rate
and of a PW-Turn pair's turns is over Kish's size-weighted cluster size (sum m^2 / sum m) where d138b2d took the plain
mean, which with unequal clusters gave intervals that covered 0.79-0.82 instead of 0.95
(tests/test_calibration_clustered.py); the design effect may only move away from 1, the Wilson intervals only widen.

Changed on purpose, and checked here in its new form (``_no_finite_fit``): where a model never lost (the small
study's m0), rankings.csv gives no Bradley-Terry interval and bt_note says why; d138b2d's were set by the fit's
regularisation (an unbeaten model stays unbeaten in every resample) and covered the truth in 0.70 of simulated studies
(none where the top model was unbeaten).

Added since, and checked here in its new form (``_rough_notes``): a Bradley-Terry interval from fewer than 100
bootstrap rounds is said to be rough in ``bt_note`` (the small study has 50 rounds); every other number is d138b2d's.

One exception, by rule (``_without_empty_refits``): a Bradley-Terry order "reversed" by removing every worker's
votes. The refit then has no data, its strengths are equal, and which comes first was decided by a rounding
error (d138b2d: -9e-18 against 8e-17 after the refactor, both exactly 0; issue 50 item 6 gives fragility a
tolerance). Such a count is read as "no reversal" on both sides.
"""
from __future__ import annotations

import io
import json
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pairwise_regression import FIXTURES, library_outputs, studies

from parlai_dialeval.analysis.intervals import MIN_BOOTSTRAP_ROUNDS

pytestmark = pytest.mark.slow
TOLERANCE = 1e-12
CHANGED = {("small", "style_control"), ("small", "style_coefficients")}
ADDED = {"voided": {}}  # summary keys added after d138b2d, and their value in every study here
ADDED_TABLES = {"fragility_significance"}  # issue 50 item 6 (the docstring)
NEW_VOTER_FLAGS = ("evidence", "tests", "taste_sd")  # issue 50 item 7: the summary's voter_flags keys changed
EXACT = {"votes_to_reverse": "votes_exact", "workers_to_reverse": "workers_exact"}  # issue 50 item 6


def _said_in_words(name: str, table: str, got: pd.DataFrame) -> list[str]:
    """The new form of a CHANGED table: no runaway estimate left, each missing one explained."""
    if table == "style_coefficients":
        ok = got["coefficient"].isna().all() and got["sentence"].str.contains("cannot be estimated").all()
    else:
        ok = (got["bt_raw"].abs().max() < 15 and got["bt_style"].isna().all()
              and got.loc[got["bt_raw"].isna(), "note"].str.startswith("no finite strength").all()
              and got["note"].str.len().gt(0).all())
    return [] if ok else [f"{name}/{table}: not said in words:\n{got.to_string()}"]


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
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])


def _without_empty_refits(table: pd.DataFrame) -> pd.DataFrame:
    if "workers_to_reverse" not in table:
        return table
    everyone = (table["workers_to_reverse"] == table["workers"]).to_numpy()
    table = table.copy()
    table.loc[everyone, "workers_to_reverse"] = np.nan
    table.loc[everyone, "sentence"] = table.loc[everyone, "sentence"].str.replace(
        r", or the votes of (\d+) of \1 workers \([^)]*\)$", "", regex=True)
    return table


def _rough_notes(table: pd.DataFrame, rounds: int, where: str) -> tuple[list[str], pd.DataFrame]:
    """rankings.csv with fewer than MIN_BOOTSTRAP_ROUNDS rounds: every interval said to be rough in bt_note (the
    docstring), those notes then set aside to compare the rest with d138b2d's."""
    if rounds >= MIN_BOOTSTRAP_ROUNDS:
        return [], table
    noted = table["bt_note"].fillna("").str.startswith(f"rough interval: only {rounds} bootstrap rounds: ").to_numpy()
    problems = [f"{where}.bt_note[{row}]: an interval from {rounds} rounds not said to be rough"
                for row in np.flatnonzero(table["bt_ci_low"].notna().to_numpy() & ~noted)]
    table = table.copy()
    table.loc[noted, "bt_note"] = np.nan
    return problems, table


def _kish(got: pd.DataFrame, want: pd.DataFrame, table: str, where: str) -> tuple[list[str], pd.DataFrame]:
    """The design effect over Kish's size-weighted cluster size, not the plain mean (the docstring): it can only
    move away from 1 in the direction of the ICC (sum m^2 / sum m >= mean m), so a win rate's Wilson interval can
    only widen (its design effect is floored at 1); checked so, then d138b2d's values put back to compare the rest."""
    problems = []
    if "effective_workers" in got and "effective_workers" not in want and len(got) == len(want):
        # p_two_way on CR2 terms and the effective number of clusters (the docstring), beside the new column:
        # a p where d138b2d gave one, the effective workers no more than the workers (checked by hand and by
        # simulation in tests/test_cluster_tests.py and tests/test_calibration_clustered.py)
        effective, workers = got["effective_workers"].astype(float), got["workers"].astype(float)
        problems += [f"{where}.effective_workers[{row}]: {effective[row]!r} of {workers[row]!r} workers"
                     for row in np.flatnonzero(((effective > workers + 1e-9) | (effective < 1 - 1e-9)).to_numpy())]
        problems += [f"{where}.p_two_way[{row}]: {got['p_two_way'][row]!r} where d138b2d gave {want['p_two_way'][row]!r}"
                     for row in np.flatnonzero((got["p_two_way"].isna() != want["p_two_way"].isna()).to_numpy())]
        got = got.drop(columns="effective_workers").assign(p_two_way=want["p_two_way"].to_numpy())
    if table not in ("win_rates", "conversation_tests") or len(got) != len(want) or "design_effect" not in got:
        return problems, got
    new, old = got["design_effect"].astype(float), want["design_effect"].astype(float)
    both = new.notna() & old.notna()
    problems += [f"{where}.design_effect[{row}]: {new[row]!r} nearer 1 than d138b2d's {old[row]!r}"
                for row in np.flatnonzero((both & ((new - 1) * (old - 1) < 0) | (abs(new - 1) < abs(old - 1) - 1e-12)
                                           & both).to_numpy())]
    got = got.copy()
    if table == "win_rates":
        wider = (got["ci_low"] <= want["ci_low"] + 1e-12) & (got["ci_high"] >= want["ci_high"] - 1e-12)
        problems += [f"{where}.ci[{row}]: [{got['ci_low'][row]!r}, {got['ci_high'][row]!r}] narrower than d138b2d's"
                     for row in np.flatnonzero((~wider & got["ci_low"].notna()).to_numpy())]
        got[["ci_low", "ci_high"]] = want[["ci_low", "ci_high"]]
    got["design_effect"] = want["design_effect"]
    return problems, got


def _no_finite_fit(got: pd.DataFrame, want: pd.DataFrame, where: str) -> tuple[list[str], pd.DataFrame]:
    """rankings.csv of a part where a model never lost or never won: no interval, and bt_note says why (the
    docstring); checked so, then d138b2d's intervals (set by the fit's regularisation) put back to compare the rest."""
    said = got["bt_note"].fillna("").str.contains("has no finite estimate|have no finite estimate").to_numpy()
    problems = [f"{where}.bt_ci_low[{row}]: an interval where {got['bt_note'][row]!r}"
                for row in np.flatnonzero(said & got["bt_ci_low"].notna().to_numpy())]
    got = got.copy()
    got.loc[said, ["bt_ci_low", "bt_ci_high"]] = want.loc[said, ["bt_ci_low", "bt_ci_high"]].to_numpy()
    got["bt_note"] = got["bt_note"].astype(object)
    got.loc[said, "bt_note"] = want.loc[said, "bt_note"].to_numpy()
    return problems, got


def _fragility_sentences(summary: dict, tables: dict) -> dict:
    """The summary's fragility sentences as the (normalised) tables say them."""
    if "fragility" in summary:
        summary = {**summary, "fragility": {**summary["fragility"],
                                            "rankings": list(tables["fragility_rankings"]["sentence"])}}
    return summary


def _old_sentence(sentence: str) -> str:
    """A fragility_rankings sentence as d138b2d said it: without issue 50's "at most" and "(exact ...)" or
    "(approximate ...)" at its end."""
    return re.sub(r" \((exact|approximate)[^()]*(\([^()]*\)[^()]*)*\)$", "", sentence.replace("at most ", ""))


def _issue50_fragility(got: pd.DataFrame, want: pd.DataFrame, where: str) -> tuple[list[str], pd.DataFrame]:
    """issue 50 item 6 in fragility_rankings: the exact columns added, counts that may only fall (or appear where
    d138b2d found none), sentences that say what d138b2d's said where the counts are d138b2d's. Returns the
    problems and the table with d138b2d's columns, counts and sentences where these hold, to compare as before."""
    problems = [f"{where}: no column {c}" for c in EXACT.values() if c not in got]
    if problems or len(got) != len(want):
        return problems, got
    same = pd.Series(True, index=got.index)
    for count in EXACT:
        g, w = got[count].astype(float), want[count].astype(float)
        fell = w.isna() | (g <= w)
        problems += [f"{where}.{count}[{row}]: {g[row]!r}, more than d138b2d's {w[row]!r}"
                     for row in np.flatnonzero(~(fell | g.isna()).to_numpy())]
        same &= (g == w) | (g.isna() & w.isna())
    shown = got.drop(columns=list(EXACT.values()))
    for count in EXACT:
        shown[count] = np.where(same, shown[count], want[count])  # a count that fell is checked above
    shown["sentence"] = [_old_sentence(text) if kept else old for text, kept, old
                         in zip(got["sentence"], same, want["sentence"])]
    return problems, shown


def _issue50_summary(summary: dict, want: dict, tables: dict, name: str) -> tuple[list[str], dict, dict]:
    """issue 50 item 7 and 6 in the summary (the docstring): the new voter_flags keys and the significance
    sentences set aside after checking what can be; the rest as d138b2d's."""
    problems = []
    flags, old_flags = dict(summary["voter_flags"]), dict(want["voter_flags"])
    if not isinstance(flags.get("taste_sd"), (float, type(None))):
        problems.append(f"{name}: voter_flags.taste_sd {flags.get('taste_sd')!r}")
    for key in NEW_VOTER_FLAGS:
        flags.pop(key, None), old_flags.pop(key, None)
    fragility = dict(summary["fragility"])
    if fragility.pop("significance", None) != list(tables["fragility_significance"]["sentence"]):
        problems.append(f"{name}: fragility.significance is not fragility_significance.csv's sentences")
    return (problems, {**summary, "voter_flags": flags, "fragility": fragility},
            {**want, "voter_flags": old_flags})


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
        got = library_outputs(frame, settings, Path(folder))
    golden = FIXTURES / name
    expected = {path.stem for path in golden.glob("*.csv")}
    assert set(got["tables"]) == expected | ADDED_TABLES
    problems, tables, golden_tables = [], {}, {}
    for table in sorted(expected):
        want = pd.read_csv(golden / f"{table}.csv", keep_default_na=False, na_values=[""])
        tables[table], golden_tables[table] = _without_empty_refits(_frame(got["tables"][table])), \
            _without_empty_refits(want)
        if (name, table) in CHANGED:
            problems += _said_in_words(name, table, tables[table])
            continue
        if table == "voter_flags":  # issue 50 item 7: new tests, new evidence (the docstring)
            continue
        if table == "rankings":
            rounds = settings.get("bootstrap_rounds", 1000)
            found, tables[table] = _rough_notes(tables[table], rounds, f"{name}/{table}")
            problems += found
            found, tables[table] = _no_finite_fit(tables[table], golden_tables[table], f"{name}/{table}")
            problems += found
        found, tables[table] = _kish(tables[table], golden_tables[table], table, f"{name}/{table}")
        problems += found
        if table == "fragility_rankings":
            found, tables[table] = _issue50_fragility(tables[table], golden_tables[table], f"{name}/{table}")
            problems += found
        problems += _same_table(tables[table], golden_tables[table], f"{name}/{table}")
    want = json.loads((golden / "summary.json").read_text(encoding="utf-8"))
    summary = dict(got["summary"])
    problems += [f"{name}: summary {key} = {summary.get(key)!r}, expected {value!r}" for key, value in ADDED.items()
                 if summary.pop(key, None) != value]
    tables["fragility_significance"] = _frame(got["tables"]["fragility_significance"])
    found, summary, want = _issue50_summary(summary, want, tables, name)
    problems += found + _same_json(_fragility_sentences(summary, tables), _fragility_sentences(want, golden_tables),
                                   name)
    assert not problems, "\n".join(problems[:40])
