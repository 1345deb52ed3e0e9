"""Install beyond the checkout (issue 18 item 16): a built wheel, installed away from the repository,
launches the live-chat task with its worker pages, and keeps its data in one documented place."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
from pathlib import Path

import pytest
from needs import needs

from parlai_dialeval import home
from parlai_dialeval.testing.ports import free_port

from crowdsourcing.protocol_harness import CliRun  # tests/crowdsourcing (pytest puts tests/ first on the path)

REPO = Path(__file__).resolve().parents[1]
BUNDLE = REPO / "crowdsourcing" / "frontend" / "build" / "live_chat_da" / "bundle.js"


def test_one_data_folder_with_a_per_user_default(monkeypatch, tmp_path):
    for name in (home.HOME_ENV, home.MEPHISTO_ENV, "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert home.dialeval_home() == tmp_path / ".local" / "share" / "parlai_dialeval"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert home.dialeval_home() == tmp_path / "xdg" / "parlai_dialeval"
    monkeypatch.setenv(home.HOME_ENV, str(tmp_path / "dh"))
    assert (home.mephisto_dir(), home.offline_bots_dir()) == (tmp_path / "dh" / "mephisto",
                                                             tmp_path / "dh" / "offline_bots")
    monkeypatch.setenv(home.MEPHISTO_ENV, str(tmp_path / "m"))
    assert home.mephisto_dir() == tmp_path / "m"


# In the child: where parlai_dialeval comes from, any path into the checkout (its .venv aside), and
# whether the editable install's import hook is active.
PROBE = """
import json, sys
from pathlib import Path
import parlai_dialeval
repo = Path(sys.argv[1])
inside = [p for p in sys.path if p and Path(p).resolve().is_relative_to(repo)
          and not Path(p).resolve().is_relative_to(repo / ".venv")]
print(json.dumps({"origin": parlai_dialeval.__file__, "checkout_on_path": inside,
                  "editable_finder": any("editable" in repr(f).lower() for f in sys.meta_path)}))
"""


def test_task_defaults_use_the_data_folder(monkeypatch, tmp_path):
    from parlai_dialeval.crowdsourcing.live_chat_da.task import LiveChatArgs
    from parlai_dialeval.crowdsourcing.platform.env import default_data_dir

    monkeypatch.delenv(home.MEPHISTO_ENV, raising=False)
    monkeypatch.setenv(home.HOME_ENV, str(tmp_path))
    assert LiveChatArgs().bots_dir == str(tmp_path / "offline_bots")
    assert default_data_dir() == tmp_path / "mephisto"


def _copy_sources(target: Path) -> Path:
    """What a wheel is built from, away from the checkout (a stale build/ there must not leak in)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules", "*.egg-info")

    def skip(folder, names):  # the router's node_modules ship in the wheel (install.sh installs them first)
        router = Path(folder).is_relative_to(REPO / "crowdsourcing" / "router")
        return ignore(folder, names) - ({"node_modules"} if router else set())
    for name in ("setup.py", "README.md", "MANIFEST.in"):
        shutil.copy2(REPO / name, target / name)
    for name in ("parlai_dialeval", "tasks", "crowdsourcing"):
        shutil.copytree(REPO / name, target / name, ignore=skip)
    return target


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_wheel_installed_outside_the_checkout_launches_live_chat(tmp_path):
    if not BUNDLE.is_file():
        needs(f"worker pages not built ({BUNDLE} missing): install.sh builds them before a wheel is made")
    src, dist, site, run = (tmp_path / n for n in ("src", "dist", "site", "run"))
    for folder in (src, dist, run):
        folder.mkdir()
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(_copy_sources(src))],
                   check=True, capture_output=True, timeout=120)
    wheel = next(dist.glob("parlai_dialeval-*.whl"))
    subprocess.run(pip + ["install", "--no-deps", "--target", str(site), str(wheel)], check=True,
                   capture_output=True, timeout=120)
    installed = _files(site)

    # -S: no site-packages .pth files, so the editable install of the checkout is not on the path;
    # the dependencies come from this environment's site-packages, this project only from the wheel.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]]),
           "DIALEVAL_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}
    env.pop("DIALEVAL_MEPHISTO_DATA", None)
    python = [sys.executable, "-S"]
    probe = subprocess.run(python + ["-c", PROBE, str(REPO)], cwd=run, env=env, capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {"origin": str(site / "parlai_dialeval" / "__init__.py"),
                                        "checkout_on_path": [], "editable_finder": False}

    port = free_port()
    launch = CliRun("live_chat_da", tmp_path / "launch", ["conf=offline_small", f"mephisto.architect.port={port}",
                                                           "mephisto.task.task_name=wheel_test"],
                    command=python + [str(site / "bin" / "dialeval")], env=env, cwd=run, own_data=False)
    try:
        page = urllib.request.urlopen(launch.worker_url("wheel_worker"), timeout=30).read().decode()
        assert '<script src="bundle.js"></script>' in page
        bundle = urllib.request.urlopen(f"http://localhost:{port}/bundle.js", timeout=30).read()
        assert bundle == BUNDLE.read_bytes()  # the worker page came out of the wheel
    finally:
        launch.stop()
    assert "Traceback" not in launch.log()
    assert (tmp_path / "home" / "mephisto" / "database.db").is_file()  # the documented data folder
    assert _files(site) == installed  # nothing written inside the installed package
    assert not any(run.iterdir())  # nor in the folder it was started from
