"""Validation of canonical records.

Checks run column-wise on DataFrames (one per record type) rather than record by record, because
a large study holds millions of ratings and per-record schema validation (e.g. jsonschema) would
dominate the analysis time. Every error still names the file and line of the first offending record.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.data import schema
from parlai_dialeval.errors import DataError

_PY_TYPES = {
    schema.STR: (str,),
    schema.NUM: (int, float, np.integer, np.floating),
    schema.INT: (int, np.integer),
    schema.BOOL: (bool, np.bool_),
    schema.LIST: (list,),
    schema.DICT: (dict,),
    schema.STR_OR_LIST: (str, list),
}
_EXPECTED = {
    schema.STR: "a string", schema.NUM: "a number", schema.INT: "an integer", schema.BOOL: "true or false",
    schema.LIST: "a list", schema.DICT: "an object", schema.STR_OR_LIST: "a string or a list",
}

# pandas' C-level type inference settles most columns at once; only the others are checked cell by cell.
_FAST_OK = {
    schema.STR: ("string", "empty"),
    schema.NUM: ("integer", "floating", "mixed-integer-float", "empty"),
    schema.INT: ("integer", "empty"),
    schema.BOOL: ("boolean", "empty"),
}


def _type_ok(kind: str):
    allowed = _PY_TYPES[kind]
    excluded = (bool, np.bool_) if kind in (schema.NUM, schema.INT) else ()

    def ok(value) -> bool:
        if value is None or (isinstance(value, float) and np.isnan(value) and kind != schema.NUM):
            return True
        if excluded and isinstance(value, excluded):
            return False
        if kind == schema.INT and isinstance(value, float):
            return value.is_integer()
        return isinstance(value, allowed)

    return ok


def _fail(frame: pd.DataFrame, mask, what: str, field: str | None = None, expected: str | None = None,
          value_column: str | None = None):
    """Raise a DataError for the first row where ``mask`` is true."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return
    i = int(np.argmax(mask))
    row = frame.iloc[i]
    got = row[value_column] if value_column is not None else None
    raise DataError(row["_file"], what, line=int(row["_line"]), field=field, expected=expected, got=got)


def validate_frame(record_type: str, frame: pd.DataFrame) -> None:
    """Check one record type's rows (with ``_file`` and ``_line`` columns) against the schema."""
    if frame.empty:
        return
    known = {f.name for f in schema.fields_of(record_type)} | {"_file", "_line"}
    unknown = [c for c in frame.columns if c not in known]
    for column in unknown:
        _fail(frame, frame[column].notna(), f"unknown field for a {record_type} record",
              field=column, expected="one of " + ", ".join(sorted(known - {"_file", "_line"}))
              + " (put extra data under 'meta')", value_column=column)
    for field in schema.fields_of(record_type):
        if field.name not in frame.columns:
            if field.required:
                _fail(frame, np.ones(len(frame), bool), "missing required field", field=field.name,
                      expected=_EXPECTED[field.kind])
            continue
        column = frame[field.name]
        if field.required:
            _fail(frame, column.isna().to_numpy(), "missing required field", field=field.name,
                  expected=_EXPECTED[field.kind])
        if pd.api.types.infer_dtype(column, skipna=True) in _FAST_OK.get(field.kind, ()):
            bad = np.zeros(len(column), bool)  # the whole column already has an allowed type
        else:
            bad = ~column.map(_type_ok(field.kind)).to_numpy(dtype=bool)
        _fail(frame, bad, "wrong type", field=field.name, expected=_EXPECTED[field.kind],
              value_column=field.name)
        allowed = schema.ENUMS.get((record_type, field.name))
        if allowed is not None:
            _fail(frame, column.notna().to_numpy() & ~column.isin(allowed).to_numpy(), "unknown value",
                  field=field.name, expected="one of " + ", ".join(allowed), value_column=field.name)
    if record_type == "rating":
        _check_rating_values(frame)
    if record_type == "conversation":
        _check_turns(frame)


def _check_rating_values(frame: pd.DataFrame) -> None:
    value = pd.to_numeric(frame["value"], errors="coerce")
    _fail(frame, ~np.isfinite(value.to_numpy(dtype=float)), "value is not a finite number", field="value",
          expected="a finite number", value_column="value")
    for bound, compare, word in (("scale_min", np.less, "below"), ("scale_max", np.greater, "above")):
        if bound in frame.columns:
            limit = pd.to_numeric(frame[bound], errors="coerce").to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                outside = compare(value.to_numpy(dtype=float), limit) & ~np.isnan(limit)
            _fail(frame, outside, f"value is {word} the scale's {bound}", field="value",
                  expected="a value within [scale_min, scale_max]", value_column="value")


def _check_turns(frame: pd.DataFrame) -> None:
    # Millions of turns in a large study: a cheap test of each conversation's turns first, and the
    # field-by-field check (which names what is wrong) only for a conversation that fails it.
    for turns, path, line in zip(frame["turns"], frame["_file"], frame["_line"]):
        if isinstance(turns, list) and not all(map(_plain_turn, turns)):
            _explain_turns(turns, path, int(line))


_TURN_KEYS = frozenset(f.name for f in schema.TURN_FIELDS)
# The exact types JSON parsing yields for each turn field (no numpy scalars, no bool as a number):
# derived from the schema so the fast test cannot drift from the field-by-field one.
_JSON_TYPES = {schema.STR: (str,), schema.NUM: (int, float), schema.DICT: (dict,)}
_PLAIN_TURN_FIELDS = tuple((f.name, f.required, _JSON_TYPES[f.kind]) for f in schema.TURN_FIELDS)


def _plain_turn(turn) -> bool:
    """A turn that parsed from JSON with every field of the schema's exact type (most turns)."""
    if type(turn) is not dict or not turn.keys() <= _TURN_KEYS:
        return False
    for name, required, types in _PLAIN_TURN_FIELDS:
        value = turn.get(name)
        if value is None:
            if required:
                return False
        elif type(value) not in types:
            return False
    return True


def _explain_turns(turns: list, path, line: int) -> None:
    """Raise a DataError naming the first turn that breaks the schema, and how."""
    checks = [(f, _type_ok(f.kind)) for f in schema.TURN_FIELDS]
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise DataError(path, f"turn {index} is not an object", line=line, field="turns",
                            expected="{speaker, text, time?, meta?}", got=turn)
        for field, ok in checks:
            value = turn.get(field.name)
            if value is None and field.required:
                raise DataError(path, f"turn {index} lacks '{field.name}'", line=line,
                                field="turns", expected=_EXPECTED[field.kind])
            if value is not None and not ok(value):
                raise DataError(path, f"turn {index} has a wrong type", line=line,
                                field=f"turns[{index}].{field.name}", expected=_EXPECTED[field.kind],
                                got=value)
        extra = set(turn) - _TURN_KEYS
        if extra:
            raise DataError(path, f"turn {index} has unknown keys {sorted(extra)}", line=line,
                            field="turns", expected="speaker, text, time, meta")


def check_criteria(ratings: pd.DataFrame, studies: list[dict]) -> None:
    """Ratings must use a criterion their study declares, when the study declares any."""
    declared = {s["name"]: {c["name"] for c in s.get("criteria") or []} for s in studies}
    if ratings.empty or "study" not in ratings.columns:
        return
    for study, names in declared.items():
        if not names:
            continue
        rows = ratings["study"] == study
        unknown = rows & ~ratings["criterion"].isin(names)
        _fail(ratings, unknown.to_numpy(), f"criterion not declared by study '{study}'", field="criterion",
              expected="one of " + ", ".join(sorted(names)), value_column="criterion")

