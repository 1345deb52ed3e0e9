"""The one place where third-party incompatibilities with Python 3.11 are fixed.

Mephisto 1.1.1 (``mephisto/operations/hydra_config.py``) and ParlAI 1.7.2
(``parlai/crowdsourcing/utils/mturk.py``) use dataclass instances as dataclass field defaults, which
Python 3.11 rejects ("mutable default ... use default_factory"). Rather than editing site-packages,
``install()`` puts an import hook on ``sys.meta_path`` that rewrites exactly those lines to
``field(default_factory=...)`` as the modules are loaded. It must run before anything imports
``mephisto``: ``parlai_dialeval/__init__.py`` calls it, so importing this package first is enough.

Run ``python -c "import parlai_dialeval.compat as c; c.check()"`` to confirm the fix takes effect.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import re
import sys

# module -> list of (exact source line, replacement); a missing line means the upstream file
# changed, and we fail loudly rather than run unpatched.
PATCHES: dict[str, list[tuple[str, str]]] = {
    "mephisto.operations.hydra_config": [
        ("    task: TaskRunArgs = TaskRunArgs()", "    task: TaskRunArgs = field(default_factory=TaskRunArgs)"),
        ("    database: DatabaseArgs = DatabaseArgs()",
         "    database: DatabaseArgs = field(default_factory=DatabaseArgs)"),
        ("    mephisto: MephistoConfig = MephistoConfig()",
         "    mephisto: MephistoConfig = field(default_factory=MephistoConfig)"),
    ],
    "parlai.crowdsourcing.utils.mturk": [
        ("    mturk: MTurkConfig = MTurkConfig()", "    mturk: MTurkConfig = field(default_factory=MTurkConfig)"),
    ],
}


class _PatchingLoader(importlib.machinery.SourceFileLoader):
    def get_data(self, path):
        data = super().get_data(path)
        if not path.endswith(".py"):
            return data
        source = data.decode("utf-8")
        for old, new in PATCHES[self.name]:
            if old + "\n" not in source:
                raise ImportError(f"parlai_dialeval.compat: expected line not found in {path}: {old!r}")
            source = source.replace(old + "\n", new + "\n")
        if not re.search(r"^from dataclasses import .*\bfield\b", source, re.M):
            source = "from dataclasses import field\n" + source
        return source.encode("utf-8")

    def get_code(self, fullname):
        # Bypass the bytecode cache: a cached .pyc would hold the unpatched code.
        return compile(self.get_data(self.get_filename(fullname)), self.get_filename(fullname), "exec")


class _PatchingFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in PATCHES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _PatchingLoader(fullname, spec.origin)
        return spec


def install() -> None:
    if any(isinstance(f, _PatchingFinder) for f in sys.meta_path):
        return
    already = [name for name in PATCHES if name in sys.modules]
    if already:
        raise ImportError(f"parlai_dialeval.compat.install() ran after {already} were imported; "
                          "import parlai_dialeval before mephisto")
    sys.meta_path.insert(0, _PatchingFinder())


def check() -> None:
    install()
    from mephisto.operations.hydra_config import TaskConfig  # noqa: F401
    from parlai.crowdsourcing.utils.mturk import MTurkRunScriptConfig  # noqa: F401

    print("parlai_dialeval.compat: mephisto and parlai crowdsourcing configs import on Python "
          f"{sys.version.split()[0]}")


if __name__ == "__main__":
    check()
