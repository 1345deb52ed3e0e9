"""The layers of docs/architecture.md, enforced by import-linter (the contract is .importlinter).

crowdsourcing/ and tasks/ live at the top of the checkout but are installed as
``parlai_dialeval.crowdsourcing`` and ``parlai_dialeval.tasks`` (setup.py); import-linter reads one
package folder, so each test lints a copy of the Python files in the installed layout."""
from __future__ import annotations

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
