"""Validation of canonical records.

Checks run column-wise on DataFrames (one per record type) rather than record by record, because
a large study holds millions of ratings and per-record schema validation (e.g. jsonschema) would
dominate the analysis time. Every error still names the file and line of the first offending record.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.data import schema
from parlai_dialeval.errors import DataError, record_line

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
    raise DataError(row["_file"], what, line=record_line(row["_line"]), field=field, expected=expected, got=got)


def _blank(column: pd.Series) -> np.ndarray:
    """Strings that are empty or only white space. Names repeat across millions of rows, so the
    distinct values are tested and the rows found with one vectorised lookup."""
    # tolist() first: iterating an Arrow-backed array yields one element per Python call (3x slower)
    blanks = [v for v in pd.unique(column).tolist() if isinstance(v, str) and not v.strip()]
    return column.isin(blanks).to_numpy() if blanks else np.zeros(len(column), bool)


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
    proven = frame.attrs.get("proven", ())  # fields the columnar reader proved (data/columnar.py)
    for field in schema.fields_of(record_type):
        if field.name not in frame.columns:
            if field.required and field.name not in proven:  # proven but absent: kept in columns
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
        if field.required and field.kind == schema.STR and allowed is None:
            _fail(frame, _blank(column), "empty name", field=field.name, expected="a non-empty string",
                  value_column=field.name)
    for first, second in schema.DISTINCT.get(record_type, ()):
        _fail(frame, (frame[first] == frame[second]).to_numpy(), f"{first} and {second} are the same",
              field=second, expected=f"a {second} other than {first} (a model compared with itself says "
              "nothing about either)", value_column=second)
    if record_type == "rating":
        _check_rating_values(frame)
    if record_type == "comparison":
        _check_weights(frame)
    if record_type == "conversation":
        _check_models(frame)
        if "turns" not in proven:  # the columnar reader proved every turn plain
            _check_turns(frame)
    _check_objects(frame, "provenance", provenance_problem)
    _check_objects(frame, "check", check_problem)


_PROVENANCE_KINDS = {f.name: f.kind for f in schema.PROVENANCE_FIELDS}


def provenance_problem(value, nested: bool = True) -> str | None:
    """What is wrong with a provenance object (docs/data_model.md, "How an answer was made"), or None."""
    if not isinstance(value, dict):
        return "not an object"
    for key, item in value.items():
        if nested and key in schema.PROVENANCE_TEXTS:
            inner = provenance_problem(item, nested=False)
            if inner:
                return f"{key}: {inner}"
            continue
        kind = _PROVENANCE_KINDS.get(key)
        if kind is None:
            return f"unknown key {key!r} (expected {', '.join(_PROVENANCE_KINDS)})"
        if item is None:
            continue
        if not _type_ok(kind)(item):
            return f"{key} is not {_EXPECTED[kind]}"
        if kind == schema.LIST and key != "doubts" and not all(
                _type_ok(schema.INT)(n) and n >= 0 for n in item):
            return f"{key} holds something other than whole numbers >= 0"
        if kind == schema.LIST and key == "doubts" and not all(isinstance(n, str) for n in item):
            return f"{key} holds something other than text"
        if kind in (schema.INT, schema.NUM) and not (np.isfinite(item) and item >= 0):
            return f"{key} is not a finite number >= 0"
    return None


def check_problem(value) -> str | None:
    """What is wrong with a check object (docs/data_model.md, "Checks"), or None."""
    if not isinstance(value, dict):
        return "not an object"
    if value.get("kind") not in schema.CHECK_KINDS:
        return f"kind must be one of {', '.join(schema.CHECK_KINDS)}"
    if not isinstance(value.get("passed"), bool):
        return "passed must be true or false"
    return None


def _check_objects(frame: pd.DataFrame, column: str, problem) -> None:
    """Every non-null object of ``column`` passes ``problem`` (and every turn's, for ``provenance``)."""
    if column in frame.columns:
        values = frame[column].to_numpy(dtype=object)
        for i in np.flatnonzero(frame[column].notna().to_numpy()):
            found = problem(values[i])
            if found:
                row = frame.iloc[i]
                raise DataError(row["_file"], f"{column}: {found}", line=record_line(row["_line"]), field=column,
                                expected=f"a {column} object as docs/data_model.md describes", got=values[i])
    if column == "provenance" and "turns" in frame.columns:
        for turns, path, line in zip(frame["turns"], frame["_file"], frame["_line"]):
            for index, turn in enumerate(turns if isinstance(turns, list) else []):
                value = turn.get("provenance") if isinstance(turn, dict) else None
                found = None if value is None else provenance_problem(value, nested=False)
                if found:
                    raise DataError(path, f"turn {index}'s provenance: {found}", line=record_line(line),
                                    field=f"turns[{index}].provenance",
                                    expected="a provenance object as docs/data_model.md describes", got=value)


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)


def _check_weights(frame: pd.DataFrame) -> None:
    """A weight is a finite number above 0, a sampling probability one in (0, 1], a tie kind only on a tie."""
    weight = _numbers(frame, "weight")
    _fail(frame, ~np.isnan(weight) & ~(np.isfinite(weight) & (weight > 0)), "not a positive finite weight",
          field="weight", expected="a number above 0 (1 = an ordinary vote)", value_column="weight")
    probability = _numbers(frame, "sampling_probability")
    _fail(frame, ~np.isnan(probability) & ~((probability > 0) & (probability <= 1)), "not a probability",
          field="sampling_probability", expected="a number in (0, 1]", value_column="sampling_probability")
    if "tie_kind" in frame.columns:
        _fail(frame, (frame["tie_kind"].notna() & frame["choice"].ne("tie")).to_numpy(), "a tie kind on a vote that "
              "is not a tie", field="tie_kind", expected="no tie_kind where choice is a or b", value_column="tie_kind")


def _check_rating_values(frame: pd.DataFrame) -> None:
    """Every value must be valid on its scale (schema.SCALES), with the range the rating records or,
    where it records none, the range assumed for its scale type, named in the error."""
    value = _numbers(frame, "value")
    _fail(frame, ~np.isfinite(value), "value is not a finite number", field="value",
          expected="a finite number", value_column="value")
    recorded = {bound: _numbers(frame, bound) for bound in ("scale_min", "scale_max", "reference_value")}
    for bound, numbers in recorded.items():
        present = frame[bound].notna().to_numpy() if bound in frame.columns else np.zeros(len(frame), bool)
        _fail(frame, present & ~np.isfinite(numbers), f"{bound} is not a finite number", field=bound,
              expected="a finite number", value_column=bound)
    low, high = recorded["scale_min"], recorded["scale_max"]
    with np.errstate(invalid="ignore"):
        _fail(frame, low > high, "scale_min is above scale_max", field="scale_min",
              expected="scale_min <= scale_max", value_column="scale_min")
    codes, names = pd.factorize(frame["scale"])  # a few names over millions of rows: no object per row
    for name, rule in schema.SCALES.items():
        rows = codes == (names.get_loc(name) if name in names else -2)
        if rows.any():
            _check_scale(frame, rows, name, rule, value, low, high, recorded["reference_value"])


def _check_scale(frame, rows, name, rule: schema.Scale, value, low, high, reference) -> None:
    for bound, recorded, assumed, outside, word in (("scale_min", low, rule.low, np.less, "below"),
                                                      ("scale_max", high, rule.high, np.greater, "above")):
        limit = np.where(np.isnan(recorded), np.nan if assumed is None else assumed, recorded)
        with np.errstate(invalid="ignore"):
            bad = rows & outside(value, limit)
        if not bad.any():
            continue
        i = int(np.argmax(bad))
        if np.isnan(recorded[i]):
            expected = (f"a {name} value within the assumed range {_range(rule)} ({bound} not recorded; "
                        "record scale_min and scale_max for another range)")
        else:
            expected = "a value within [scale_min, scale_max]"
        _fail(frame, bad, f"value is {word} the scale's {bound}", field="value", expected=expected,
              value_column="value")
    if rule.endpoints_only:
        ends = (np.where(np.isnan(low), rule.low, low), np.where(np.isnan(high), rule.high, high))
        _fail(frame, rows & (value != ends[0]) & (value != ends[1]), f"a {name} value must be one end of "
              "the scale", field="value", expected=rule.help, value_column="value")
    if rule.whole:
        _fail(frame, rows & (value != np.round(value)), f"a {name} value must be a whole number",
              field="value", expected=rule.help, value_column="value")
    if rule.reference:
        _fail(frame, rows & np.isnan(reference), f"a {name} rating needs its reference_value",
              field="reference_value", expected=rule.help)
        _fail(frame, rows & (reference < 0), "reference_value is negative", field="reference_value",
              expected=rule.help, value_column="reference_value")


def _range(rule: schema.Scale) -> str:
    low = "-inf" if rule.low is None else f"{rule.low:g}"
    high = "inf" if rule.high is None else f"{rule.high:g}"
    return f"[{low}, {high}]"


def _check_models(frame: pd.DataFrame) -> None:
    names = frame["models"].explode()  # one row per name, labelled by its record; an empty list gives NaN
    if pd.api.types.infer_dtype(names, skipna=False) == "string":
        bad = _blank(names)
    else:
        bad = ~names.map(lambda m: isinstance(m, str) and bool(m.strip())).to_numpy(dtype=bool)
    if bad.any():
        row = frame.loc[names.index[int(np.argmax(bad))]]
        raise DataError(row["_file"], "models must name at least one model, each a non-empty string",
                        line=record_line(row["_line"]), field="models", expected='["model name", ...]',
                        got=row["models"])


def _check_turns(frame: pd.DataFrame) -> None:
    # Millions of turns in a large study: a cheap test of each conversation's turns first, and the
    # field-by-field check (which names what is wrong) only for a conversation that fails it.
    for turns, path, line in zip(frame["turns"], frame["_file"], frame["_line"]):
        if isinstance(turns, list) and not all(map(_plain_turn, turns)):
            _explain_turns(turns, path, record_line(line))


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


def _explain_turns(turns: list, path, line) -> None:
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
                            field="turns", expected="speaker, text, time, meta, provenance")


def check_turns_usable(data) -> None:
    """``dialeval validate``'s check of what the importers and analyses leave out (a loaded file is still read
    without them): a turn whose speaker is empty, and a complete conversation without turns (one never begun is
    ``incomplete``). ``data``: an EvalData; the error names the first such conversation's file and line."""
    conversations = data.conversation_fields()
    if conversations.empty:
        return
    turns = data.turns()
    # turn -> its conversation's row (the ids are unique once loaded: check_unique)
    owner = pd.Index(conversations["id"]).get_indexer(turns["conversation_id"].astype(object))
    blank = _blank(turns["speaker"])
    has_blank = np.zeros(len(conversations), bool)
    has_blank[owner[blank]] = True
    status = conversations.get("status", pd.Series(None, index=conversations.index))
    empty = (np.bincount(owner, minlength=len(conversations)) == 0) & (status.isna() | status.eq("complete")).to_numpy()
    bad = has_blank | empty
    if not bad.any():
        return
    i = int(np.argmax(bad))
    row = conversations.iloc[i]
    path, line = row.get("_file", "the data"), record_line(row.get("_line"))
    if has_blank[i]:
        turn = turns[blank & (owner == i)].iloc[0]
        raise DataError(path, f"turn {turn['turn_index']} of conversation {row['id']!r} has an empty speaker",
                        line=line, field=f"turns[{turn['turn_index']}].speaker",
                        expected="'human' for the worker, else the model's name", got=turn["speaker"])
    raise DataError(path, f"conversation {row['id']!r} has no turns", line=line, field="turns",
                    expected="at least one turn, or status incomplete for a conversation never begun")


def check_criteria(ratings: pd.DataFrame, studies: list[dict]) -> None:
    """Ratings must use a criterion their study declares, when the study declares any."""
    declared = {s["name"]: {c["name"] for c in s.get("criteria") or []} for s in studies}
    if ratings.empty or "study" not in ratings.columns:
        return
    for study, names in declared.items():
        if not names:
            continue
        rows = ratings["study"] == study
        if "check" in ratings.columns:  # a check item's answer rates no criterion of the study
            rows &= ratings["check"].isna()
        unknown = rows & ~ratings["criterion"].isin(names)
        _fail(ratings, unknown.to_numpy(), f"criterion not declared by study '{study}'", field="criterion",
              expected="one of " + ", ".join(sorted(names)), value_column="criterion")


def is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
