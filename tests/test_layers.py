"""The layers of docs/architecture.md, enforced by import-linter (the contract is .importlinter).

crowdsourcing/ and tasks/ live at the top of the checkout but are installed as
``parlai_dialeval.crowdsourcing`` and ``parlai_dialeval.tasks`` (setup.py); import-linter reads one
package folder, so each test lints a copy of the Python files in the installed layout."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
SKIP = shutil.ignore_patterns("__pycache__", "node_modules", "frontend", "router", "conf", "*.json", "*.yaml")


def installed_layout(root: Path) -> Path:
    package = root / "parlai_dialeval"
    shutil.copytree(REPO / "parlai_dialeval", package, ignore=SKIP)
    shutil.copytree(REPO / "crowdsourcing", package / "crowdsourcing", ignore=SKIP)
    shutil.copytree(REPO / "tasks", package / "tasks", ignore=SKIP)
    return package


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    result = subprocess.run([str(LINT_IMPORTS), "--config", str(REPO / ".importlinter"), "--no-cache"],
                          cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
                          capture_output=True, text=True, timeout=300)
    result.stdout = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)  # its colours, whatever the terminal
    return result


def test_the_layers_hold(tmp_path):
    installed_layout(tmp_path)
    result = lint_imports(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 1 kept, 0 broken." in result.stdout


@pytest.mark.parametrize("module, bad_import, chain", [
    # each an import that issue 39 removed by moving code to its layer, put back
    ("judge/judges.py", "from parlai_dialeval.crowdsourcing.acute.protocol import question_text",
     "parlai_dialeval.judge.judges -> parlai_dialeval.crowdsourcing.acute.protocol"),
    ("crowdsourcing/platform/adaptive/controller.py", "from parlai_dialeval.scripts import judge_option",
     "parlai_dialeval.crowdsourcing.platform.adaptive.controller -> parlai_dialeval.scripts.judge_option"),
    ("analysis/pairwise.py", "from parlai_dialeval.adaptive import sequential",
     "parlai_dialeval.analysis.pairwise -> parlai_dialeval.adaptive.sequential"),
    ("dashboard/adaptive_view.py", "from parlai_dialeval.scripts.certify import analyze",
     "parlai_dialeval.dashboard.adaptive_view -> parlai_dialeval.scripts.certify"),
    ("__init__.py", "from parlai_dialeval import providers",
     "parlai_dialeval -> parlai_dialeval.providers"),
    # issue 56 item 4: independent siblings (|) and verdict.py in a layer, each of these allowed before
    ("analysis/pairwise.py", "from parlai_dialeval import report",
     "parlai_dialeval.analysis.pairwise -> parlai_dialeval.report"),
    ("errors.py", "from parlai_dialeval import atomic", "parlai_dialeval.errors -> parlai_dialeval.atomic"),
    ("verdict.py", "from parlai_dialeval.results import section",
     "parlai_dialeval.verdict -> parlai_dialeval.results.section"),
    ("adaptive/planner.py", "from parlai_dialeval import verdict",
     "parlai_dialeval.adaptive.planner -> parlai_dialeval.verdict"),
    # issue 56: providers sit below crowdsourcing (the circle through launch_log, quality and export removed)
    ("providers/prolific/provider.py", "from parlai_dialeval.crowdsourcing.platform import launch_log",
     "parlai_dialeval.providers.prolific.provider -> parlai_dialeval.crowdsourcing.platform.launch_log"),
])
def test_an_import_against_the_layers_breaks_the_contract(tmp_path, module, bad_import, chain):
    package = installed_layout(tmp_path)
    target = package / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{bad_import}\n", encoding="utf-8")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Contracts: 0 kept, 1 broken." in result.stdout
    assert chain in result.stdout


def package_imports(package: Path) -> dict[str, set[str]]:
    """Each module of the installed layout and the modules of ours it imports (at the top or inside functions;
    relative imports resolved), read from the source."""
    imports = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
                found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        imports[name] = {m for m in found if m.startswith("parlai_dialeval.")}
    return imports


def package_circles(package: Path) -> set[frozenset[str]]:
    """Pairs of our top-level packages (and modules) of which each imports the other, directly."""
    imports = package_imports(package)
    top = sorted({".".join(name.split(".")[:2]) for name in imports if name.count(".")})

    def imports_any(importer: str, imported: str) -> bool:
        return any((m == importer or m.startswith(importer + ".")) and
                   any(t == imported or t.startswith(imported + ".") for t in targets) for m, targets in imports.items())

    return {frozenset({a, b}) for i, a in enumerate(top) for b in top[i + 1:]
            if imports_any(a, b) and imports_any(b, a)}


def test_no_two_packages_import_each_other(tmp_path):
    # issue 56 item 4: the last circle, crowdsourcing <-> providers, went with the Prolific client's rework (issue 53)
    circles = package_circles(installed_layout(tmp_path))
    assert circles == set(), f"packages that import each other: {sorted(map(sorted, circles))}"


def test_the_mutual_import_check_sees_a_circle_through_a_function_level_relative_import(tmp_path):
    package = installed_layout(tmp_path)
    target = package / "metrics" / "distinct.py"
    target.write_text(target.read_text(encoding="utf-8") + "\n\ndef _late():\n    from ..tasks import fed\n",
                      encoding="utf-8")
    back = package / "tasks" / "__init__.py"
    back.write_text(back.read_text(encoding="utf-8") + "\nimport parlai_dialeval.metrics.distinct\n", encoding="utf-8")
    assert frozenset({"parlai_dialeval.metrics", "parlai_dialeval.tasks"}) in package_circles(package)
