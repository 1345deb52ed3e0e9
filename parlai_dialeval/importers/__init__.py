"""Importers from other formats into the canonical data model."""
from parlai_dialeval.importers.registry import IMPORTERS, ImportReport, detect_format, import_paths, load, register_importer

__all__ = ["IMPORTERS", "ImportReport", "detect_format", "import_paths", "load", "register_importer"]
