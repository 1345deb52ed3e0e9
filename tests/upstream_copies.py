"""Copies of someone else's installed code for the compat tests (tests/test_compat*.py): its source as installed,
and a fresh module built from it after an edit an upstream release could make, under another name."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def upstream_source(module: str) -> str:
    return Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")


def load_copy(module: str, tmp_path: Path, edit=lambda text: text):
    """A fresh module built from ``module``'s installed source after ``edit``, under another name."""
    name = f"copy_of_{module.replace('.', '_')}"
    path = tmp_path / f"{name}.py"
    path.write_text(edit(upstream_source(module)), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return copy
