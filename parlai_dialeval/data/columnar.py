"""The columnar fast path for loading one canonical JSON Lines file.

Parsing a million-rating study record by record into Python objects took most of an analysis's time,
so a file is read with pyarrow's JSON reader straight into columns (cached as Arrow IPC
under the user cache folder, keyed by the file's path, size, mtime and its first and last bytes) and
converted to the same DataFrames the record-by-record path builds. The fast path only ever gives up:
anything it cannot convert exactly (a parse error, NaN, a blank line, a value whose int/float type
the columns lost, ...) returns None and the caller takes the detailed path, which names the fault.
Nested values other than plain turns and lists of names are re-read with orjson from their lines.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import hashlib
import os
import time
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.ipc as pa_ipc

from parlai_dialeval.atomic import FILE_MODE, make_folder
from parlai_dialeval.data import schema
from parlai_dialeval.data.turns import TurnColumns
from parlai_dialeval.data.versions import known

_CHUNK = 1 << 24  # bytes read at a time to count lines
_BLOCK = 1 << 24  # bytes pyarrow's JSON reader parses at a time: the table's chunks
_PROBE = 1 << 16  # bytes hashed at each end of a file for the cache key
_CACHE_MIN_BYTES = 1 << 23  # smaller files parse in well under a second: not worth a cache entry
_CACHE_VERSION = "1"
_CACHE_DAYS = 30  # an entry unused this long (its source gone or no longer analysed) is removed
_EXACT_FLOAT = 2.0 ** 53  # beyond this a JSON integer read as a double may have changed value
# Arrow memory from the system allocator: freed columns go back to the process for the Python objects
# built next (pyarrow's default mimalloc pool kept them: 2.6 GB peak instead of 2.2 on the benchmark).
_POOL = pa.system_memory_pool()
_KNOWN = {f.name for t in schema.RECORD_TYPES for f in schema.fields_of(t)}


class Unsupported(Exception):
    """The file needs the detailed path (bad or unusual input); never shown to users."""


def cache_folder() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "parlai_dialeval" / "columnar"


def read_file(path: Path, name: str, use_cache: bool = True):
    """(studies, {record type: DataFrame}, turns) for one file, as the detailed path would build them
    before validation, or None where the fast path cannot vouch for an exact result. ``turns`` are the
    conversations' turns as ``TurnColumns`` where every conversation has a list of plain turns (the frame
    then has no ``turns`` column: see data/turns.py), else None."""
    try:
        # a thread beside the main work counts the lines during the parse and writes the cache during the
        # conversion (neither the parser nor the writer holds the GIL for long)
        with concurrent.futures.ThreadPoolExecutor(1) as beside:
            return _convert(*_load_table(path, use_cache, beside), path, name)  # the table is freed on return
    except (Unsupported, pa.ArrowException, OSError, ValueError, KeyError):
        return None  # ValueError covers orjson's and UTF-8 decoding errors
    finally:
        _return_freed_memory()


def _count_lines(path: Path) -> int:
    """Lines in the file, a last line without a newline included."""
    count, last, chunk = 0, None, bytearray(_CHUNK)  # one buffer refilled: half the time of fresh ones
    with open(path, "rb", buffering=0) as handle:
        while size := handle.readinto(chunk):
            if last is None and chunk[:3] == b"\xef\xbb\xbf":  # orjson refuses a byte order mark; pyarrow skips it
                raise Unsupported("byte order mark")
            count += chunk.count(b"\n", 0, size)
            last = chunk[size - 1]
    if last is None:
        raise Unsupported("empty file")
    return count + (last != ord("\n"))


def _identity(path: Path) -> tuple[Path, bytes]:
    """The cache file for a source (one per path, so edits replace rather than pile up) and what the
    source must still be for it to hold: size, mtime and a hash of its first and last bytes."""
    resolved = path.resolve()
    stat = resolved.stat()
    digest = hashlib.sha256(f"{_CACHE_VERSION}\n{pa.__version__}\n{stat.st_size}\n{stat.st_mtime_ns}".encode())
    with open(resolved, "rb") as handle:  # catches an edit that keeps the size and the mtime
        digest.update(handle.read(_PROBE))
        handle.seek(max(0, stat.st_size - _PROBE))
        digest.update(handle.read(_PROBE))
    name = hashlib.sha256(str(resolved).encode()).hexdigest()[:32]
    return cache_folder() / f"{name}.arrow", digest.hexdigest().encode()


def _load_table(path: Path, use_cache: bool, beside: concurrent.futures.Executor) -> tuple[pa.Table, int]:
    """The file's table and its line count, from the cache where it still matches the file.

    The cache is Arrow IPC (lz4) rather than Parquet: it reads back about ten times faster here
    (no page decoding), which is the whole point of a cache (143 MB for the benchmark's 616 MB)."""
    use_cache = use_cache and path.stat().st_size >= _CACHE_MIN_BYTES
    cached, identity = _identity(path) if use_cache else (None, b"")
    if cached is not None and cached.exists():
        try:
            with pa.OSFile(str(cached)) as source:  # read into memory: no array may outlive a mapping
                table = pa_ipc.open_file(source, memory_pool=_POOL).read_all()
            meta = table.schema.metadata or {}
            if meta.get(b"dialeval_source") == identity:
                os.utime(cached)  # used: kept from pruning
                return table.replace_schema_metadata(None), int(meta[b"dialeval_lines"])
        except (pa.ArrowException, OSError, KeyError, ValueError):
            pass  # a damaged cache entry: read the source again and rewrite it
    # pyarrow's streaming reader on threads: it parses blocks in parallel with a bounded read-ahead
    # (benchmark: load 1.1 s sooner, peak +0.1 GB), where ``read_json`` on threads holds the whole file
    # (peak +0.35 GB). It takes its columns from the first block, so a file whose later records bring a
    # new field or type is read again by ``read_json``, which looks at every block (same table).
    lines = beside.submit(_count_lines, path)
    try:
        table = pa_json.open_json(path, read_options=pa_json.ReadOptions(block_size=_BLOCK, use_threads=True),
                                  memory_pool=_POOL).read_all()
    except pa.ArrowInvalid:
        _return_freed_memory()
        options = pa_json.ReadOptions(block_size=_BLOCK, use_threads=False)
        table = pa_json.read_json(path, read_options=options, memory_pool=_POOL)
    try:  # pyarrow's JSON reader keeps bytes that are not UTF-8 in its strings (about 0.3 s a GB to check)
        table.validate(full=True)
    except pa.ArrowInvalid:
        raise Unsupported("not UTF-8") from None  # the detailed path names the line
    lines = lines.result()
    _return_freed_memory()
    if cached is not None:
        beside.submit(_write_cache, table.replace_schema_metadata({"dialeval_source": identity,
                                                                   "dialeval_lines": str(lines)}), cached)
    return table, lines


def _return_freed_memory() -> None:
    """glibc keeps freed Arrow blocks (the JSON reader's, then the table's: 0.5 GB each on the
    benchmark) for reuse by malloc, which the Python objects built next mostly do not draw on."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc


def _write_cache(table: pa.Table, cached: Path) -> None:
    """Best effort: a cache that cannot be written (read-only home, full disk) only costs speed."""
    temporary = cached.with_suffix(f".{os.getpid()}.tmp")
    try:
        make_folder(cached.parent)  # the cache holds the study's records: its owner's alone, as outputs are
        with pa_ipc.new_file(str(temporary), table.schema,
                             options=pa_ipc.IpcWriteOptions(compression="lz4")) as writer:
            writer.write_table(table)
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, cached)
        _prune(cached)
    except (OSError, pa.ArrowException):
        with contextlib.suppress(OSError):  # also when the folder itself could not be made
            temporary.unlink()


def _prune(kept: Path) -> None:
    cutoff = time.time() - _CACHE_DAYS * 86400
    for entry in kept.parent.glob("*.arrow"):
        with contextlib.suppress(OSError):  # another process may be pruning too
            if entry != kept and entry.stat().st_mtime < cutoff:
                entry.unlink()


def _convert(table: pa.Table, lines: int, path: Path, name: str):
    if table.num_rows != lines:  # blank lines or two objects on a line: rows are not lines
        raise Unsupported("rows and lines differ")
    if "type" not in table.column_names or "format_version" not in table.column_names:
        raise Unsupported("type or format_version missing")
    if not set(table.column_names) <= _KNOWN:
        raise Unsupported("a field no record type has")
    types, versions = table["type"], table["format_version"]
    if not (pa.types.is_string(types.type) and pa.types.is_string(versions.type)):
        raise Unsupported("type or format_version not a string")
    if types.null_count or versions.null_count or not set(pc.unique(types).to_pylist()) <= set(schema.RECORD_TYPES):
        raise Unsupported("unknown or missing record type")
    if not all(known(v) for v in pc.unique(versions).to_pylist()):
        raise Unsupported("format version")  # the detailed path names it
    studies, frames, turns = [], {}, None
    for record_type in schema.RECORD_TYPES:
        mask = pc.equal(types, record_type)
        rows = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        if not len(rows):
            continue
        if record_type == "study":
            studies = [dict(record, _file=name, _line=int(i) + 1) for i, record in zip(rows, _records(path, rows))]
        else:
            frames[record_type], found = _frame(table, mask, rows, path, name, record_type == "conversation")
            turns = found or turns
    return studies, frames, turns


def _frame(table: pa.Table, mask: pa.ChunkedArray, rows: np.ndarray, path: Path, name: str,
           keep_turns: bool) -> tuple[pd.DataFrame, TurnColumns | None]:
    """One record type's rows (``mask``) as a DataFrame, and their turns where they stay in columns
    (``keep_turns``: conversations); only the columns its records fill are copied."""
    columns, nested, proven, turns = {}, {}, (), None
    for column_name in table.column_names:
        full = table[column_name]
        if not pc.sum(pc.and_(mask, pc.is_valid(full))).as_py():
            continue  # absent (or null) in every record of this type: filled in as None later
        if column_name == "turns" and _plain_turns(full.type) and _no_nulls_inside(full):
            proven = ("turns",)  # every turn a {speaker, text} of strings: validate.py skips its check
            turns = TurnColumns.from_list_array(full, rows)
            if not (keep_turns and turns.complete):  # e.g. a conversation without turns: validation names it
                columns[column_name], turns = pd.Series(turns.lists(), dtype=object), None
            continue
        column = pc.filter(full, mask, memory_pool=_POOL)
        values = _column(column)
        if values is None:
            nested[column_name] = column.is_valid().to_numpy(zero_copy_only=False)
        columns[column_name] = values
    if nested:  # the exact values, from the lines that hold one
        wanted = np.flatnonzero(np.logical_or.reduce(list(nested.values())))
        records = dict(zip(wanted.tolist(), _records(path, rows[wanted])))
        for c, valid in nested.items():
            columns[c] = pd.Series([records[i][c] if ok else None for i, ok in enumerate(valid)], dtype=object)
    columns["_file"] = pa.repeat(pa.scalar(name, pa.large_string()), len(rows)).to_pandas()  # pandas' str type
    columns["_line"] = rows + 1
    frame = pd.DataFrame(columns)
    frame.attrs["proven"] = proven
    return frame, turns


def _column(column: pa.ChunkedArray):
    """The column as the detailed path would hold it, or None where only the lines give exact values."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_boolean(kind) or pa.types.is_int64(kind):
        return column.to_pandas()
    if pa.types.is_float64(kind):
        values = column.to_numpy()
        present = values[~np.isnan(values)] if column.null_count else values
        if not np.isfinite(present).all():
            raise Unsupported("NaN or Infinity")  # pyarrow accepts them, JSON (and orjson) does not
        integral = present == np.round(present)
        if (not column.null_count and integral.all()) or (integral & (np.abs(present) >= _EXACT_FLOAT)).any():
            raise Unsupported("ints and floats not told apart")  # the detailed path keeps each as written
        return column.to_pandas()
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        return pd.Series(column.to_pylist(), dtype=object)
    return None  # meta, personas, turns with time or meta, list contexts ...


def _plain_turns(kind: pa.DataType) -> bool:
    """Turns of only speaker and text strings: a dict per turn can be rebuilt exactly from columns."""
    if not (pa.types.is_list(kind) and pa.types.is_struct(kind.value_type)):
        return False
    item = kind.value_type
    return ({item.field(i).name for i in range(item.num_fields)} == {"speaker", "text"}
            and all(pa.types.is_string(item.field(i).type) for i in range(item.num_fields)))


def _no_nulls_inside(column: pa.ChunkedArray) -> bool:
    """A null turn, speaker or text is an error the detailed check must name (and null turns lists are
    rebuilt as None, not as lists)."""
    items = pc.list_flatten(column)
    return not (items.null_count or pc.struct_field(items, [0]).null_count
                or pc.struct_field(items, [1]).null_count)


def _records(path: Path, rows: np.ndarray) -> list[dict]:
    """The records on the given (sorted, 0-based) lines, parsed by orjson as the detailed path does."""
    records, wanted = [], iter(rows.tolist())
    target = next(wanted, None)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle):
            if number != target:
                continue
            record = orjson.loads(raw)
            if not isinstance(record, dict):
                raise Unsupported("not an object")
            records.append(record)
            target = next(wanted, None)
            if target is None:
                break
    return records
