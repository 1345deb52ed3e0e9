"""Importer ``published``: a folder written by ``dialeval publish`` (docs/publishing.md), read back into
canonical records from its Parquet configurations. Worker and assignment ids come back as their
pseudonyms and scrubbed text as scrubbed: the rest is the study as it was published."""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.data.parquet import MANIFEST, read_published
from parlai_dialeval.errors import DataError
from parlai_dialeval.importers.registry import ImportReport, register_importer

FORMAT = "published"


def detect(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


@register_importer(FORMAT, detect=detect, help="a dataset folder written by dialeval publish (dialeval.json, "
                                              "data/<configuration>/*.parquet)")
def import_published(paths) -> ImportReport:
    report = ImportReport(FORMAT)
    for path in map(Path, paths):
        if not detect(path):
            raise DataError(path, "not a published folder", expected=f"a folder with {MANIFEST} (dialeval publish)")
        with report.reading(path / MANIFEST):
            records = read_published(path)
        report.records += records
        report.read += len(records)
        report.kept += len(records)
    return report
