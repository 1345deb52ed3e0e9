"""Modules that load on first use.

A command's --help and its option errors need none of the statistics and plotting libraries its
analysis imports (scipy.stats, statsmodels, matplotlib: about 2 s), so scripts bind their analysis
modules lazily. This is the standard library's LazyLoader recipe (importlib documentation); a package
for eight lines would be one more dependency.
"""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``name``, imported when one of its attributes is first used (at once if already imported)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
