"""What issue 56 keeps small. Every module of the plugin (parlai_dialeval/, and crowdsourcing/ and tasks/, which install
as its subpackages) and of its tests and benchmarks stays under 450 lines: a module past that has come to hold more
than one idea, as data/validate.py did when the checks of repeated records joined the per-record ones (459 lines).
benchmarks/README.md stays under 700 lines: current figures only, their history in git."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT = 450


def long_modules(root: Path) -> list[str]:
    """The Python modules under ``root``'s plugin, test and benchmark folders (no installed node packages) with LIMIT
    lines or more, each as 'path: N lines'."""
    found = []
    for folder in ("parlai_dialeval", "crowdsourcing", "tasks", "tests", "benchmarks"):
        for path in sorted((root / folder).rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines >= LIMIT:
                found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def test_every_module_is_under_450_lines():
    assert long_modules(REPO) == [], "split each by what it holds"


def test_a_long_module_is_named_with_its_length(tmp_path):
    (tmp_path / "tasks" / "node_modules").mkdir(parents=True)
    (tmp_path / "parlai_dialeval" / "data").mkdir(parents=True)
    (tmp_path / "parlai_dialeval" / "data" / "long.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "parlai_dialeval" / "short.py").write_text("x = 1\n" * (LIMIT - 1))
    (tmp_path / "tasks" / "node_modules" / "vendored.py").write_text("x = 1\n" * 2000)
    assert long_modules(tmp_path) == ["parlai_dialeval/data/long.py: 450 lines"]


def test_the_benchmarks_page_is_under_700_lines():
    lines = len((REPO / "benchmarks" / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines < 700, f"benchmarks/README.md: {lines} lines; keep current figures only (history lives in git)"
