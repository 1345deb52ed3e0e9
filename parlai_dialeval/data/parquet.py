"""Canonical records as Arrow tables (for Parquet) and back, one table per record type.

The schema's scalar fields become typed columns; ``models`` and ``qc_models`` lists of strings; ``turns`` a
list of ``{speaker, text, time, meta, provenance}`` structs (the objects as JSON text); every other list, dict or string-or-list field (``meta``,
``criteria``, ``personas``, ``context``) JSON text, since its shape varies from record to record and
Parquet needs one type per column. ``records_of`` reverses it exactly (an int stored in a number column
comes back as the equal float). The publishing command writes these tables and the importer of published
folders reads them (docs/publishing.md).
"""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa

from parlai_dialeval.data import schema
from parlai_dialeval.errors import DataError

# A published folder (docs/publishing.md): its manifest names each configuration's Parquet file.
MANIFEST = "dialeval.json"
CONFIGS = {"study": "studies", "conversation": "conversations", "rating": "ratings", "comparison": "comparisons"}
TURN_TYPE = pa.struct([("speaker", pa.string()), ("text", pa.string()), ("time", pa.float64()),
                       ("meta", pa.string()), ("provenance", pa.string())])
_TURN_OBJECTS = ("meta", "provenance")  # a turn's objects, each stored as JSON text
_SCALAR = {schema.STR: pa.string(), schema.NUM: pa.float64(), schema.INT: pa.int64(), schema.BOOL: pa.bool_()}
_STRING_LISTS = {"models", "qc_models"}
JSON_TEXT = "json"  # the kind of a field stored as JSON text


def column_kind(field: schema.Field) -> str:
    if field.name == "turns":
        return "turns"
    if field.name in _STRING_LISTS:
        return "strings"
    return field.kind if field.kind in _SCALAR else JSON_TEXT


def arrow_schema(record_type: str) -> pa.Schema:
    out = []
    for field in schema.fields_of(record_type):
        if field.name in ("type", "format_version"):
            continue
        kind = column_kind(field)
        out.append(pa.field(field.name, pa.list_(TURN_TYPE) if kind == "turns" else pa.list_(pa.string())
                            if kind == "strings" else _SCALAR.get(kind, pa.string())))
    return pa.schema(out)


def _encode(kind: str, value):
    if kind == "turns":
        return [{"speaker": t.get("speaker"), "text": t.get("text"), "time": t.get("time"),
                 **{key: None if t.get(key) is None else json.dumps(t[key], ensure_ascii=False)
                    for key in _TURN_OBJECTS}}
                for t in value]
    if kind == "strings":
        return list(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def table_of(record_type: str, frame: pd.DataFrame) -> pa.Table:
    """The records of one type (a frame of schema columns; absent ones are null) as a table of ``arrow_schema``."""
    target = arrow_schema(record_type)
    kinds = {f.name: column_kind(f) for f in schema.fields_of(record_type)}
    columns = []
    for field in target:
        if field.name not in frame.columns:
            columns.append(pa.nulls(len(frame), field.type))
        elif kinds[field.name] in _SCALAR:
            columns.append(pa.array(frame[field.name], type=field.type, from_pandas=True))
        else:
            values = frame[field.name].to_numpy(dtype=object)
            columns.append(pa.array([None if not isinstance(v, (list, dict, str)) else _encode(kinds[field.name], v)
                                     for v in values], type=field.type))
    return pa.Table.from_arrays(columns, schema=target)


def _decode(kind: str, value):
    if kind == "turns":
        turns = []
        for turn in value:
            plain = {"speaker": turn["speaker"], "text": turn["text"]}
            if turn.get("time") is not None:
                plain["time"] = turn["time"]
            for key in _TURN_OBJECTS:
                if turn.get(key) is not None:
                    plain[key] = json.loads(turn[key])
            turns.append(plain)
        return turns
    if kind == JSON_TEXT:
        return json.loads(value)
    return value


def records_of(record_type: str, table: pa.Table) -> list[dict]:
    """Canonical dicts (with ``type``; null columns left out) from a table written by ``table_of``."""
    kinds = {f.name: column_kind(f) for f in schema.fields_of(record_type)}
    out = []
    for row in table.to_pylist():
        record = {"type": record_type}
        for name, value in row.items():
            if value is not None and name in kinds:
                record[name] = _decode(kinds[name], value)
        out.append(record)
    return out


def read_published(folder) -> list[dict]:
    """The canonical records of a published folder (studies, conversations, ratings, comparisons). A folder
    is anyone's download: its manifest and tables are checked, each fault a DataError naming the file."""
    from pathlib import Path

    import pyarrow.parquet as pq

    folder = Path(folder)
    where = folder / MANIFEST
    try:
        manifest = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(where, f"not readable JSON ({error})") from None
    configs = manifest.get("configs") if isinstance(manifest, dict) else None
    if not isinstance(configs, dict) or not all(isinstance(name, str) for name in configs.values()):
        raise DataError(where, "no configurations", field="configs",
                        expected="an object naming each configuration's Parquet file", got=configs)
    if not isinstance(manifest.get("format_version"), str):
        raise DataError(where, "no format version", field="format_version", expected="a string",
                        got=manifest.get("format_version"))
    out = []
    for record_type, config in CONFIGS.items():
        if config not in configs:
            continue
        path = (folder / configs[config]).resolve()
        if folder.resolve() not in path.parents or not path.is_file():
            raise DataError(where, "not a file inside the folder", field=f"configs.{config}",
                            expected="a Parquet file's path under the folder", got=configs[config])
        try:
            out += records_of(record_type, pq.read_table(path))
        except (pa.ArrowException, KeyError, TypeError, ValueError, AttributeError) as error:
            raise DataError(path, f"not a {config} table of dialeval publish ({type(error).__name__}: {error})") from None
    for record in out:  # the folder's stamp, as a canonical file carries it on every record
        record["format_version"] = manifest["format_version"]
    return out
