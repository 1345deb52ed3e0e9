"""The files a researcher gives an analysis beside the data, read with one clear line on bad input: their own
style covariates (``--style-covariates F.csv``), category rules (``--categories F.yaml``) and model families
(``--variants F.json``). A library call may pass the file's path or what it holds."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from parlai_dialeval.errors import DataError, DialevalError, record_line


def is_path(value) -> bool:
    return isinstance(value, (str, Path))


def _given(value, flag: str, kind: type, what: str) -> str:
    """Where a library call's ``value`` for ``flag`` (a file's path, or what the file holds: a ``kind``) is named
    in errors; one line where it is neither."""
    if is_path(value):
        return str(value)
    if not isinstance(value, kind):
        raise DialevalError(f"{flag} {type(value).__name__}: expected a file's path or a {what}")
    return f"{flag} (the {what} given)"


def _row(frame: pd.DataFrame, position: int, given_path: bool) -> str:
    """A row as its error names it: a file's line (the header is line 1), else the frame's row label."""
    return f"row {position + 2}" if given_path else f"row {frame.index[position]!r}"


def read_covariates(given, keys: tuple[str, ...], flag: str = "--style-covariates") -> pd.DataFrame:
    """The user's covariates from a CSV's path or a DataFrame (checked alike): ``keys`` as strings, every other
    column numeric and finite."""
    path = _given(given, flag, pd.DataFrame, "DataFrame")
    if is_path(given):
        try:
            frame = pd.read_csv(given, dtype={key: str for key in keys}, keep_default_na=False, na_values=[""])
        except (OSError, pd.errors.ParserError, UnicodeDecodeError) as error:
            raise DataError(path, f"cannot read the covariates CSV: {error}") from None
    else:
        frame = given.copy()
    for key in keys:
        if key not in frame:
            raise DataError(path, "missing column", 1 if is_path(given) else None, key,
                            f"a header with {', '.join(keys)} and covariate columns")
        frame[key] = frame[key].astype(str).where(frame[key].notna())  # as the file's are read: text, or missing
    names = [c for c in frame.columns if c not in keys]
    if not names:
        raise DataError(path, "no covariate column", 1, expected="at least one numeric column besides "
                        + ", ".join(keys))
    for name in names:
        values = pd.to_numeric(frame[name], errors="coerce")
        bad = np.flatnonzero(~np.isfinite(values.to_numpy(float)))
        if len(bad):
            raise DataError(path, "not a finite number", _row(frame, bad[0], is_path(given)), name, "a number",
                            frame[name].iloc[bad[0]])
        frame[name] = values.astype(float)
    duplicated = np.flatnonzero(frame.duplicated(list(keys)).to_numpy())
    if len(duplicated):
        raise DataError(path, "the same key twice", _row(frame, duplicated[0], is_path(given)), ", ".join(keys),
                        "one row per key")
    return frame


def read_rules(given, flag: str = "--categories") -> dict[str, list[str]]:
    """Category -> regular expressions from a YAML mapping's path or a mapping (checked alike; a single expression
    may stand alone)."""
    import yaml

    path = _given(given, flag, dict, "mapping")
    if is_path(given):
        try:
            rules = yaml.safe_load(Path(given).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            raise DataError(path, f"cannot read the category rules: {error}") from None
    else:
        rules = given
    if not isinstance(rules, dict) or not rules:
        raise DataError(path, "not a mapping of categories", expected="category: [regular expression, ...]")
    out = {}
    for name, patterns in rules.items():
        patterns = [patterns] if isinstance(patterns, str) else patterns
        if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
            raise DataError(path, "not a list of regular expressions", field=str(name), expected="[text, ...]",
                            got=patterns)
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise DataError(path, f"not a regular expression: {error}", field=str(name), got=pattern) from None
        out[str(name)] = patterns
    return out


def read_variants(given, flag: str = "--variants") -> dict[str, str]:
    """--variants: {family: [model, ...]} -> {model: family}, from a JSON file's path or the mapping it holds
    (checked alike: a mapping of {model: family} is refused as the file holding it is, not read the other way)."""
    path = _given(given, flag, dict, "mapping")
    if is_path(given):
        try:
            families = json.loads(Path(given).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise DataError(path, f"unreadable ({error})", expected='a JSON object {"family": ["model", ...]}') from None
    else:
        families = given
    if not isinstance(families, dict):
        raise DataError(path, "not an object", expected='{"family": ["model", ...]}', got=families)
    out = {}
    for family, models in families.items():
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise DataError(path, "not a list of model names", field=family, expected='["model", ...]', got=models)
        out.update({model: family for model in models})
    return out


TARGET_COLUMNS = ("attribute", "level", "share")


def read_targets(given, flag: str = "--weights") -> pd.DataFrame:
    """--weights: the target population's margins from a CSV's path or a DataFrame (checked alike), one row per
    attribute and level (``attribute``: a column of the participants file, a number with its bands as in --by,
    ``age:18,30,50``; ``level``: a level as the groups name it, ``50+``; ``share``: its share of the population,
    each attribute's summing to 1), with each row's ``line`` (a file's line number, or "row LABEL" of a frame)."""
    path = _given(given, flag, pd.DataFrame, "DataFrame")
    if is_path(given):
        try:
            frame = pd.read_csv(given, dtype=str, keep_default_na=False)
        except (OSError, pd.errors.ParserError, UnicodeDecodeError) as error:
            raise DataError(path, f"cannot read the targets CSV: {error}") from None
    else:  # cells as a file's are read: text, a missing one empty
        frame = given.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    for column in TARGET_COLUMNS:
        if column not in frame:
            raise DataError(path, "missing column", 1 if is_path(given) else None, column,
                            "a header attribute,level,share")
    if frame.empty:
        raise DataError(path, "no targets", 2 if is_path(given) else None, expected="a row per attribute and level")
    lines = (frame.index + 2).tolist() if is_path(given) else [f"row {label!r}" for label in frame.index]
    frame = frame[list(TARGET_COLUMNS)].apply(lambda column: column.str.strip()).assign(line=lines)
    shares = pd.to_numeric(frame["share"], errors="coerce").to_numpy(float)
    for row, value in zip(frame.itertuples(), shares):
        if not row.attribute or not row.level:
            raise DataError(path, "empty cell", row.line, "attribute" if not row.attribute else "level",
                            "an attribute and a level")
        if not (np.isfinite(value) and 0 <= value <= 1):
            raise DataError(path, "not a share", row.line, "share", "a number from 0 to 1", row.share)
    frame["share"] = shares
    duplicated = frame.duplicated(["attribute", "level"]).to_numpy()
    if duplicated.any():
        row = frame[duplicated].iloc[0]
        raise DataError(path, "the same attribute and level twice", record_line(row["line"]), "level", "one row each",
                        row["level"])
    for attribute, rows in frame.groupby("attribute", sort=False):
        if abs(rows["share"].sum() - 1) > 1e-6:
            raise DataError(path, f"the shares of {attribute!r} sum to {rows['share'].sum():.6g}",
                            record_line(rows["line"].iloc[0]), "share", "shares of each attribute summing to 1")
    return frame.reset_index(drop=True)
