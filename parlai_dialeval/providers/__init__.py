"""Crowd providers of our own for Mephisto 1.1.1 (whose registry only scans its own package).

``register_when_mephisto_loads()`` (run by ``import parlai_dialeval``) registers them right after
``import mephisto`` finishes, whoever imports it, without importing Mephisto any earlier: a command that
never touches Mephisto does not pay for it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

PROVIDER_MODULES = ("parlai_dialeval.providers.prolific.provider",)


def register_providers() -> None:
    for name in PROVIDER_MODULES:
        importlib.import_module(name)


class _RegisteringLoader(importlib.machinery.SourceFileLoader):
    def exec_module(self, module) -> None:
        super().exec_module(module)
        register_providers()


class _MephistoFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "mephisto":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = _RegisteringLoader(fullname, spec.origin)
        return spec


def register_when_mephisto_loads() -> None:
    if "mephisto" in sys.modules:
        register_providers()
    elif not any(isinstance(f, _MephistoFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MephistoFinder())
