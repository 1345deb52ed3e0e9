"""Importers turn other formats into canonical records; every analysis loads data through ``load``.

An importer is a function ``(paths) -> ImportReport`` registered with ``@register_importer`` under a
format name, with a ``detect(path) -> bool`` that recognises its files or folders.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from parlai_dialeval.data import EvalData, from_records, read_jsonl
from parlai_dialeval.data.dataset import FRAME_TYPES, refuse_repeated_files
from parlai_dialeval.data.repeats import check_unique
from parlai_dialeval.data.schema import RECORD_TYPES
from parlai_dialeval.errors import DataError, DialevalError

CANONICAL = "canonical"


@dataclass
class ImportReport:
    """What an importer produced, and an account of everything it read but did not keep."""

    format: str
    records: list[dict] = field(default_factory=list)
    read: int = 0
    kept: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)

    @contextlib.contextmanager
    def reading(self, path, where: int | str | None = None):
        """One record of a source (a line, a CSV row, an item): records added inside are stamped with
        where they came from, so validation names that place; a shape the importer did not expect
        (a list where an object belongs, a missing key) stops with a DataError naming it, not a crash."""
        start = len(self.records)
        with unexpected_content(path, where, self.format):
            yield
        for record in self.records[start:]:
            if "_file" not in record:
                record["_file"], record["_line"] = str(path), where

    def skip(self, where: str, why: str) -> None:
        self.skipped.append((where, why))

    def summary(self) -> str:
        lines = [f"{self.format}: read {self.read}, kept {self.kept}, skipped {len(self.skipped)}"]
        lines += [f"  skipped {where}: {why}" for where, why in self.skipped]
        return "\n".join(lines)


# What malformed content raises inside an importer (UnicodeDecodeError and JSONDecodeError are ValueErrors).
_CONTENT_ERRORS = (KeyError, TypeError, AttributeError, ValueError, IndexError, csv.Error)


@contextlib.contextmanager
def unexpected_content(path, where: int | str | None, fmt: str):
    try:
        yield
    except DialevalError:
        raise
    except _CONTENT_ERRORS as error:
        what = (f"missing key {error.args[0]!r}" if isinstance(error, KeyError) and error.args else
                f"{type(error).__name__}: {error}")
        raise DataError(path, f"unexpected content ({what})", line=where,
                        expected=f"the {fmt} layout (see dialeval convert --help)") from None


@dataclass(frozen=True)
class Importer:
    name: str
    load: Callable[[Sequence[Path]], ImportReport]
    detect: Callable[[Path], bool]
    help: str


IMPORTERS: dict[str, Importer] = {}


def register_importer(name: str, detect: Callable[[Path], bool], help: str):
    def wrap(function):
        IMPORTERS[name] = Importer(name, function, detect, help)
        return function

    return wrap


def _is_canonical(path: Path) -> bool:
    if not path.is_file():
        return False
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip():
                try:
                    first = json.loads(line)
                except json.JSONDecodeError:
                    return path.suffix == ".jsonl"  # let the canonical reader name the bad line
                # A record type of the data model marks a canonical file even without its
                # format_version: the reader then names that missing field.
                return isinstance(first, dict) and first.get("type") in RECORD_TYPES
    return path.suffix == ".jsonl"


def detect_format(path: str | os.PathLike) -> str:
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file or folder", expected="an existing path")
    if _is_canonical(path):
        return CANONICAL
    load_importer_modules()
    for importer in IMPORTERS.values():
        if importer.detect(path):
            return importer.name
    if path.is_dir():  # read as one dataset only when its manifest says so: a folder may hold unrelated studies
        from parlai_dialeval.data.parquet import MANIFEST

        files = sorted(str(p) for p in path.glob("*.jsonl"))
        raise DataError(path, f"a folder that is not a published dataset (no {MANIFEST} in it)",
                        expected="the export files themselves, e.g. --data " + " ".join(files[:3]) if files
                        else "export files (it holds no .jsonl file) or a folder written by dialeval publish")
    raise DataError(path, "format not recognised",
                    expected="canonical JSON Lines or one of: " + ", ".join(sorted(IMPORTERS))
                    + " (force one with --from)")


def load_importer_modules() -> None:
    # Importer modules register themselves on import; load them lazily to keep start-up fast.
    import parlai_dialeval.importers.formats  # noqa: F401


def import_paths(paths: Sequence[str | os.PathLike], fmt: str) -> ImportReport:
    load_importer_modules()
    if fmt not in IMPORTERS:
        raise DialevalError(f"unknown format '{fmt}'; known: {', '.join(sorted(IMPORTERS))}")
    paths = [Path(p) for p in paths]
    # Importers name the row or item they were reading (ImportReport.reading); this names the input
    # for anything outside a record (a file's top-level shape).
    with unexpected_content(", ".join(map(str, paths)), None, fmt):
        return IMPORTERS[fmt].load(paths)


def load(paths: Iterable[str | os.PathLike], fmt: str | None = None, log=print) -> EvalData:
    """Load any mix of canonical files and importable sources, detecting each one's format.

    ``log`` receives each importer's read/kept/skipped report, so nothing is dropped silently.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise DialevalError("no data given (--data PATH ...)")
    for path in paths:
        if not path.exists():
            raise DataError(path, "no such file or folder", expected="an existing path")
    refuse_repeated_files(paths)
    groups: dict[str, list[Path]] = {}
    for path in paths:
        groups.setdefault(fmt or detect_format(path), []).append(path)
    data = EvalData()
    for name, group in groups.items():
        if name == CANONICAL:
            part = read_jsonl(group)
        else:
            report = import_paths(group, name)
            if log is not None:
                log(report.summary())
            part = from_records(report.records, source=f"{name} import of {', '.join(map(str, group))}")
        data = data.concat(part)
    if len(groups) > 1:  # each part was checked on its own; ids may still repeat across parts
        check_unique({t: data.frame(t) for t in FRAME_TYPES})
    return data
