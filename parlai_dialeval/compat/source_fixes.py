"""The import hook that rewrites a few lines of third-party source as the module loads (site-packages
stay untouched). The lines themselves are in ``compat/mephisto.py`` and ``compat/parlai.py``; each
must match exactly once, or the import fails naming the line."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

from parlai_dialeval.compat.patching import replace_once, require_version


class SourceFix:
    """Exact lines of one module and their replacements; ``header`` goes first if not already there."""

    def __init__(self, module: str, distribution: str, written_for: str, lines: list[tuple[str, str]],
                 header: str = ""):
        self.module, self.distribution, self.written_for = module, distribution, written_for
        self.lines, self.header = lines, header

    def apply(self, source: str, where: str) -> str:
        for old, new in self.lines:
            source = replace_once(source, old + "\n", new + "\n", where)
        if self.header and self.header not in source:
            source = self.header + "\n" + source
        return source


FIXES: dict[str, SourceFix] = {}


def register(fix: SourceFix) -> None:
    FIXES[fix.module] = fix


class _FixingLoader(importlib.machinery.SourceFileLoader):
    def get_data(self, path):
        data = super().get_data(path)
        if not path.endswith(".py"):
            return data
        return FIXES[self.name].apply(data.decode("utf-8"), path).encode("utf-8")

    def get_code(self, fullname):
        # Bypass the bytecode cache: a cached .pyc would hold the unfixed code.
        return compile(self.get_data(self.get_filename(fullname)), self.get_filename(fullname), "exec")


class _FixingFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in FIXES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        fix = FIXES[fullname]
        require_version(fix.distribution, fix.written_for, f"the source fix of {fullname}")
        spec.loader = _FixingLoader(fullname, spec.origin)
        return spec


def install() -> None:
    """Put the hook first on ``sys.meta_path``; it must be there before the fixed modules load."""
    if any(isinstance(f, _FixingFinder) for f in sys.meta_path):
        return
    already = [name for name in FIXES if name in sys.modules]
    if already:
        raise ImportError(f"parlai_dialeval.compat.install() ran after {already} were imported; "
                          "import parlai_dialeval before mephisto")
    sys.meta_path.insert(0, _FixingFinder())


def installed() -> bool:
    return any(isinstance(f, _FixingFinder) for f in sys.meta_path)
