"""EvalData: the canonical data loaded as pandas DataFrames, plus reading and writing JSON Lines."""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import gc
import os
import sys
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import orjson
import pandas as pd

from parlai_dialeval.data import schema, versions
from parlai_dialeval.data.repeats import check_studies, check_unique
from parlai_dialeval.data.turns import TurnColumns, turn_table
from parlai_dialeval.data.validate import check_criteria, is_missing, validate_frame
from parlai_dialeval.errors import DataError
from parlai_dialeval.atomic import atomic_open

FRAME_TYPES = ("conversation", "rating", "comparison")
_ORJSON_OPTIONS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY


def _empty(record_type: str) -> pd.DataFrame:
    return pd.DataFrame(columns=schema.columns_of(record_type))


class EvalData:
    """Studies as dicts; conversations, ratings and comparisons as DataFrames with schema columns.

    Each frame may also carry ``_file`` and ``_line`` (where a record came from) for error messages.
    The columnar loader may hand over the conversations' turns as ``TurnColumns``: the ``turns`` column
    of ``conversations`` is then built on its first reading, and ``conversation_fields()`` and
    ``turns()`` never build it.
    """

    def __init__(self, studies: list[dict] | None = None, conversations: pd.DataFrame | None = None,
                 ratings: pd.DataFrame | None = None, comparisons: pd.DataFrame | None = None,
                 turns: TurnColumns | None = None):
        self.studies = [] if studies is None else studies
        self._conversations = _empty("conversation") if conversations is None else conversations
        self.ratings = _empty("rating") if ratings is None else ratings
        self.comparisons = _empty("comparison") if comparisons is None else comparisons
        self._turns = turns  # pending: not yet a column of _conversations
        self.checks: EvalData | None = None  # answers to check items a command set aside (without_checks)

    @property
    def conversations(self) -> pd.DataFrame:
        if self._turns is not None:
            self._conversations = with_turns(self._conversations, self._turns)
            self._turns = None
        return self._conversations

    @conversations.setter
    def conversations(self, frame: pd.DataFrame) -> None:
        self._conversations, self._turns = frame, None

    def conversation_fields(self) -> pd.DataFrame:
        """The conversations without their turns (never builds them; ``turns()`` gives them as a table)."""
        frame = self._conversations
        return frame.drop(columns="turns") if "turns" in frame.columns else frame.copy(deep=False)

    def frame(self, record_type: str) -> pd.DataFrame:
        # only the frame asked for: ``conversations`` builds every turn's dict where the loader kept them in columns
        return getattr(self, {"conversation": "conversations", "rating": "ratings",
                              "comparison": "comparisons"}[record_type])

    def counts(self) -> dict[str, int]:
        return {"study": len(self.studies), "conversation": len(self._conversations),
                "rating": len(self.ratings), "comparison": len(self.comparisons)}

    def criteria(self) -> dict[str, dict]:
        """Criterion name -> its declaration (positive, scale, min, max ...), merged over studies."""
        merged: dict[str, dict] = {}
        for study in self.studies:
            for criterion in study.get("criteria") or []:
                merged.setdefault(criterion["name"], criterion)
        return merged

    def qc_models(self) -> set[str]:
        return {m for s in self.studies for m in s.get("qc_models") or []}

    def records(self) -> Iterator[dict]:
        """Every record as a dict in canonical form (null fields and provenance columns dropped)."""
        for study in self.studies:
            yield {"type": "study", **study}
        for record_type in FRAME_TYPES:
            frame = self.frame(record_type)
            columns = [c for c in frame.columns if not c.startswith("_") and c != "type"]
            for row in frame[columns].itertuples(index=False, name=None):
                yield {"type": record_type, **{k: _plain(v) for k, v in zip(columns, row) if not is_missing(v)}}

    def save(self, path: str | os.PathLike) -> int:
        return write_jsonl(self.records(), path)

    def concat(self, other: "EvalData") -> "EvalData":
        def cat(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
            if a.empty:
                return b
            return a if b.empty else pd.concat([a, b], ignore_index=True)

        if self._conversations.empty or other._conversations.empty:  # turns kept in columns stay there
            whole = other if self._conversations.empty else self
            conversations, turns = whole._conversations, whole._turns
        else:
            conversations, turns = cat(self.conversations, other.conversations), None
        return EvalData(self.studies + [s for s in other.studies if s not in self.studies], conversations,
                        cat(self.ratings, other.ratings), cat(self.comparisons, other.comparisons), turns)

    def without_unverified(self) -> tuple["EvalData", dict[str, int]]:
        """The data without records marked ``unverified: true`` (work of identities the crowd platform never
        confirmed), and how many of each type were left out; ``self`` itself when there are none."""
        def marked(frame: pd.DataFrame) -> pd.Series:
            if "unverified" not in frame.columns:
                return pd.Series(False, index=frame.index)
            return frame["unverified"].eq(True).fillna(False).astype(bool)

        masks = {t: marked(self._conversations if t == "conversation" else self.frame(t)) for t in FRAME_TYPES}
        left_out = {t: int(m.sum()) for t, m in masks.items() if m.any()}
        if not left_out:
            return self, {}
        return EvalData(self.studies, self.conversations[~masks["conversation"]], self.ratings[~masks["rating"]],
                        self.comparisons[~masks["comparison"]]), left_out

    def without_checks(self) -> tuple["EvalData", "EvalData", dict[str, int]]:
        """(the data without answers to check items, those answers alone, how many of each type): ratings and
        comparisons with a ``check`` (attention and gold items, docs/data_model.md) judge no model, so analyses
        set them aside; the evidence about workers reads them. ``self`` and an empty set when there are none."""
        def marked(frame: pd.DataFrame) -> pd.Series:
            if "check" not in frame.columns:
                return pd.Series(False, index=frame.index)
            return frame["check"].notna()

        masks = {t: marked(self.frame(t)) for t in ("rating", "comparison")}
        counts = {t: int(m.sum()) for t, m in masks.items() if m.any()}
        if not counts:
            return self, EvalData(self.studies), {}
        kept = EvalData(self.studies, self._conversations, self.ratings[~masks["rating"]],
                        self.comparisons[~masks["comparison"]], self._turns)
        checks = EvalData(self.studies, None, self.ratings[masks["rating"]], self.comparisons[masks["comparison"]])
        return kept, checks, counts

    def turns(self, speaker: str | None = None) -> pd.DataFrame:
        """One row per turn (of ``speaker`` only, where given): conversation_id, turn_index, speaker, text,
        time; see data/turns.py. Built from columns where the loader kept them (no dict per turn)."""
        frame = self._conversations
        if self._turns is not None:
            return self._turns.table(frame["id"], speaker)
        return turn_table(frame["id"], frame["turns"], speaker)


def with_turns(frame: pd.DataFrame, turns: TurnColumns) -> pd.DataFrame:
    """The frame with the ``turns`` column built from its columns, where the schema puts it."""
    order = schema.columns_of("conversation")
    position = sum(column in frame.columns for column in order[:order.index("turns")])
    frame = frame.copy(deep=False)  # a frame handed out without the column keeps its columns
    frame.insert(position, "turns", pd.Series(turns.lists(), index=frame.index, dtype=object))
    return frame


def _plain(value):
    """numpy scalars to Python scalars so json can write them."""
    return value.item() if isinstance(value, np.generic) else value


def from_records(records: Iterable[dict], source: str = "<records>", validate: bool = True) -> EvalData:
    """Build EvalData from canonical record dicts (e.g. an importer's output), validating them.

    A record may say where it came from with ``_file`` and ``_line`` (a line number, or a position
    such as ``"row 5"``); errors then name that place instead of ``source`` and the record's index.
    """
    builder = _Builder()
    with _gc_paused():
        for index, record in enumerate(records, start=1):
            if isinstance(record, dict) and "_file" in record:
                record = dict(record)
                builder.add(record, record.pop("_file"), record.pop("_line", None))
            else:
                builder.add(record, source, index)
    return builder.assemble(validate)


class _Columns:
    """One record type's fields gathered column by column, with where each record came from.

    Large studies hold millions of ratings; keeping each parsed dict alive until a DataFrame is built
    doubled peak memory, so values go straight into per-field lists. Short strings are interned:
    ids, model and criterion names repeat across millions of rows.
    """

    def __init__(self):
        self.size = 0
        self.columns: dict[str, list] = {}
        self.files: list[str] = []
        self.lines: list[int] = []

    def append(self, record: dict, file: str, line: int) -> None:
        columns, size, intern = self.columns, self.size, sys.intern
        for key, value in record.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = [None] * size
            column.append(intern(value) if type(value) is str and len(value) <= 64 else value)
        self.size = size = size + 1
        if len(record) < len(columns):  # fields this record lacks
            for column in columns.values():
                if len(column) < size:
                    column.append(None)
        self.files.append(file)
        self.lines.append(line)

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame({**self.columns, "_file": self.files, "_line": self.lines})
        self.columns, self.files, self.lines = {}, [], []
        return frame


class _Builder:
    def __init__(self):
        self.studies: list[dict] = []
        self.frames = {t: _Columns() for t in FRAME_TYPES}

    def add(self, record, path: str, line, in_file: bool = False) -> None:
        if not isinstance(record, dict):
            raise DataError(path, "record is not a JSON object", line=line, expected="{...}", got=record)
        record_type = record.get("type")
        if record_type not in schema.RECORD_TYPES:
            raise DataError(path, "unknown record type", line=line, field="type",
                            expected="one of " + ", ".join(schema.RECORD_TYPES), got=record_type)
        if in_file:
            for name in schema.FILE_REQUIRED:
                if name not in record:
                    raise DataError(path, "missing required field", line=line, field=name,
                                    expected=f'"{schema.FORMAT_VERSION}" on every record of a canonical file '
                                    "(write_jsonl and dialeval convert stamp it)")
        version = record.get("format_version")
        if version is not None and not isinstance(version, str):  # 1.1 unquoted: not a newer release's version
            raise DataError(path, "format version is not a string", line=line, field="format_version",
                            expected="a quoted string, one of " + ", ".join(f'"{v}"' for v in versions.VERSIONS),
                            got=version)
        if version is not None and not versions.known(version):
            raise DataError(path, "unsupported format version", line=line, field="format_version",
                            expected=versions.EXPECTED, got=version)
        if record_type == "study":
            self.studies.append(dict(record, _file=path, _line=line))
        else:
            self.frames[record_type].append(record, path, line)

    def assemble(self, validate: bool) -> EvalData:
        return assemble(self.studies, {t: c.frame() for t, c in self.frames.items() if c.size}, None, validate)


def assemble(studies: list[dict], frames: dict[str, pd.DataFrame], turns: TurnColumns | None,
             validate: bool) -> EvalData:
    """Validate the records of every type (as parsed, with ``_file`` and ``_line``) and give each frame
    the schema's columns in schema order. Both loading paths end here, so they obey the same rules.
    ``turns``: the conversations' turns kept in columns (their frame has no ``turns`` column)."""
    done = {}
    for record_type in FRAME_TYPES:
        frame = frames.get(record_type)
        frame = _empty(record_type) if frame is None else versions.read_as_meant(record_type, frame)
        if validate:
            validate_frame(record_type, frame)
        frame.attrs.pop("proven", None)  # holds only for the frame as read
        done[record_type] = _schema_order(record_type, frame, ("turns",) if turns is not None else ())
    if validate:
        validate_frame("study", pd.DataFrame.from_records(studies) if studies else _empty("study"))
        check_studies(studies)
    studies = [{k: v for k, v in study.items() if k not in ("type", "_file", "_line", "format_version")}
               for study in studies]
    if validate:
        check_criteria(done["rating"], studies)
        check_unique(done)
    return EvalData(studies, done["conversation"], done["rating"], done["comparison"], turns)


def _schema_order(record_type: str, frame: pd.DataFrame, held_apart: tuple = ()) -> pd.DataFrame:
    """Schema columns (None where no record has the field; none for those ``held_apart``), then any other
    field some record holds (only without validation), then where each record came from; ``type`` is
    implied by the frame."""
    order = [c for c in schema.columns_of(record_type) if c not in held_apart]
    for column in order:
        if column not in frame.columns:
            frame[column] = None
    extra = [c for c in frame.columns if c not in order and c not in ("type", "_file", "_line")
             and frame[c].notna().any()]
    return frame[order + extra + [c for c in ("_file", "_line") if c in frame.columns]]


@contextlib.contextmanager
def _gc_paused():
    """Parsing allocates millions of containers and no cycles; the cyclic collector only costs time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_jsonl(paths: Iterable[str | os.PathLike], validate: bool = True, columnar: bool = True) -> EvalData:
    """Load canonical JSON Lines files; raises DataError naming file, line and field on bad input.

    ``columnar`` tries the fast path first (data/columnar.py); ``False`` forces the detailed path.
    """
    paths = [Path(p) for p in paths]
    refuse_repeated_files(paths)
    if columnar:
        with _gc_paused():
            parts = _read_columnar(paths)
        if parts is not None:
            try:
                return assemble(*parts, validate)
            except DataError:
                pass  # the detailed path below reports the fault, as it always has
    return _read_detailed(paths, validate)


def _read_columnar(paths: list[Path]) -> tuple[list[dict], dict[str, pd.DataFrame], TurnColumns | None] | None:
    """Every file through the fast path, or None. Files are joined only where their frames have the
    same columns and dtypes, so the result equals the detailed path's one set of columns; turns stay in
    columns only where every file's do."""
    from parlai_dialeval.data import columnar  # pyarrow is imported only when a file is read

    studies, frames, turns = [], {}, []
    for path in paths:
        part = columnar.read_file(path, str(path))
        if part is None:
            return None
        studies += part[0]
        for record_type, frame in part[1].items():
            frames.setdefault(record_type, []).append(frame)
        if "conversation" in part[1]:
            turns.append(part[2])
    kept = TurnColumns.concat(turns) if turns and all(t is not None for t in turns) else None
    if kept is None and any(t is not None for t in turns):  # some files' turns in columns, others not
        frames["conversation"] = [frame if t is None else with_turns(frame, t)
                                  for frame, t in zip(frames["conversation"], turns)]
    for pieces in frames.values():
        if any(not piece.dtypes.sort_index().equals(pieces[0].dtypes.sort_index()) for piece in pieces[1:]):
            return None
    return (studies, {t: p[0] if len(p) == 1 else pd.concat(p, ignore_index=True) for t, p in frames.items()},
            kept)


def _read_detailed(paths: list[Path], validate: bool) -> EvalData:
    """Record by record with orjson: exact line numbers and a named fault for any bad input."""
    builder = _Builder()
    with _gc_paused():
        for path in paths:
            name, count = str(path), 0
            # orjson parses each line's bytes directly (several times faster than json for the
            # million-rating studies we analyse); per-line parsing keeps exact line numbers in errors.
            with open(path, "rb") as handle:
                for line_number, raw in enumerate(handle, start=1):
                    if not raw.strip():
                        continue
                    try:
                        record = orjson.loads(raw)
                    except orjson.JSONDecodeError as error:
                        raise _parse_error(path, line_number, raw, error) from None
                    builder.add(record, name, line_number, in_file=True)
                    count += 1
            if count == 0:
                raise DataError(path, "file holds no records", expected="at least one JSON Lines record")
    return builder.assemble(validate)


def refuse_repeated_files(paths: Iterable[Path]) -> None:
    """The same file (or folder) given twice, or two files with identical contents, would count the
    same work twice. Only files of equal size are hashed, so distinct inputs cost one stat each."""
    seen: dict[Path, Path] = {}
    by_size: dict[int, list[Path]] = {}
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise DataError(path, f"given twice (also as {seen[resolved]})", expected="each input once")
        seen[resolved] = Path(path)
        if resolved.is_file():
            by_size.setdefault(resolved.stat().st_size, []).append(Path(path))
    for group in by_size.values():
        digests: dict[str, Path] = {}
        for path in group if len(group) > 1 else ():
            digest = _digest(path)
            if digest in digests:
                raise DataError(path, f"identical to {digests[digest]} (the same data given twice)",
                                expected="each input once")
            digests[digest] = path


def _digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _parse_error(path, line_number: int, raw: bytes, error: Exception) -> DataError:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return DataError(path, "not UTF-8 text", line=line_number, expected="UTF-8 encoded JSON Lines")
    field = _non_finite_field(text)
    if field is not None:  # Python's json writes NaN and Infinity, which JSON does not have
        return DataError(path, "NaN or Infinity is not a JSON number", line=line_number, field=field,
                         expected="a finite number, or the field left out")
    return DataError(path, f"not valid JSON: {error}", line=line_number, expected="one JSON object per line")


def _non_finite_field(text: str) -> str | None:
    """The first field holding NaN or +-Infinity in a line that is JSON apart from those, else None."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    stack = [("", record)]
    while stack:
        name, value = stack.pop(0)
        if isinstance(value, float) and not math.isfinite(value):
            return name or "(record)"
        if isinstance(value, dict):
            stack += [(f"{name}.{k}" if name else str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
    return None


def write_jsonl(records: Iterable[dict], path: str | os.PathLike) -> int:
    """Write records atomically, stamping the format version; returns how many were written."""
    count = 0
    with atomic_open(path, "wb") as handle:
        for record in records:
            record = {k: v for k, v in record.items() if not k.startswith("_")}
            record.setdefault("format_version", schema.FORMAT_VERSION)
            handle.write(orjson.dumps(record, option=_ORJSON_OPTIONS, default=_plain))
            count += 1
    return count
