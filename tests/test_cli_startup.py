"""`dialeval` dispatches plugin commands without ParlAI's full script registry (issue 21, start-up)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from parlai_dialeval import cli


def test_every_registered_plugin_command_is_found_without_importing_it():
    from parlai.core.loader import SCRIPT_REGISTRY

    cli.register_plugin_scripts()
    registered = {name: reg.klass.__module__ for name, reg in SCRIPT_REGISTRY.items()
                  if reg.klass.__module__.startswith("parlai_dialeval.")}
    found = cli.plugin_script_modules()
    assert registered, "no plugin command registered"
    assert {name: found.get(name) for name in registered} == registered


def run_python(code: str, env=None):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_a_plugin_command_runs_without_loading_torch(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps({"type": "comparison", "format_version": "1.0", "item_id": "1", "worker_id": "w",
                                "model_a": "x", "model_b": "y", "choice": "a"}) + "\n")
    result = run_python("import sys; from parlai_dialeval.cli import main; "
                        f"status = main(['validate', '--data', {str(path)!r}]); "
                        "print('torch loaded:', 'torch' in sys.modules); sys.exit(status)")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "comparison: 1" in result.stdout
    assert "torch loaded: False" in result.stdout


def test_a_model_command_still_gets_torch_after_the_fast_dispatch():
    result = run_python("from parlai_dialeval.compat.parlai import import_core_without_torch; "
                        "import_core_without_torch(); import torch, parlai.core.torch_agent; print(torch.zeros(2).sum().item())")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "0.0"


def test_command_list_is_cached_and_equals_parlais_own(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    # the cold cache in a fresh process, then ParlAI's own list in the same one (every script it imports is
    # loaded by then: one process of 11 CPU-s instead of two)
    both = run_python("from parlai_dialeval.cli import main, run_through_parlai; main(['help']); print('\\0'); "
                      "run_through_parlai(['help'])", env)
    first, direct = both.stdout.split("\0\n")
    cached = list(tmp_path.glob("parlai_dialeval/commands-*.txt"))
    second = run_python("import sys; from parlai_dialeval.cli import main; main(['help']); "
                        "print('parlai scripts loaded:', 'parlai.scripts.self_chat' in sys.modules)", env)
    assert both.returncode == second.returncode == 0, (both.stderr + second.stderr)[-2000:]
    assert len(cached) == 1
    assert first == direct == cached[0].read_text()
    assert second.stdout.startswith(direct)
    assert "parlai scripts loaded: False" in second.stdout
    for command in ("validate", "analyze_pairwise", "self_chat", "display_data"):
        assert command in direct


def test_no_plugin_commands_help_loads_the_heavy_libraries():
    # One process runs every plugin command's --help; none needs torch, scipy.stats, statsmodels or pyplot
    # (they cost 0.5-1.2 s each to import), so none may have been imported at the end.
    commands = sorted(set(cli.plugin_script_modules()))
    code = ("import contextlib, io, sys; from parlai_dialeval.cli import main\n"
            f"for command in {commands!r}:\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "        main([command, '--help'])\n"
            "heavy = ('torch', 'scipy.stats', 'statsmodels', 'matplotlib.pyplot', 'transformers', 'sklearn')\n"
            "print('loaded:', sorted(m for m in heavy if m in sys.modules))")
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "loaded: []" in result.stdout, result.stdout[-500:]


def test_mephisto_loads_without_detoxify_and_transformers():
    """Mephisto's agent module imports detoxify (torch and transformers) only to score feedback metadata,
    which our router refuses: every launch, export and review process would pay about a second for it
    (compat/mephisto.py, AGENT_SOURCE_FIX)."""
    result = run_python("import sys, parlai_dialeval, mephisto.operations.operator; "
                        "from mephisto.data_model import agent; "
                        "print(agent.DETOXIFY_INSTALLED, 'detoxify' in sys.modules, 'transformers' in sys.modules)")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "False", "False"]


def test_a_live_chat_launchs_offline_bots_load_once_without_scoring_or_fitting_libraries():
    """Issue 39: every `dialeval launch` loads its bots; the QC and retrieval bots of conf=offline_small read
    the chatterbot corpus, which was parsed by each (pure-Python YAML), walked by a world that scored every
    turn (F1, BLEU: nltk), and the launch imported choix (scipy.stats) and ParlAI's TorchAgent for nothing:
    about 2 s of CPU per launch."""
    code = """
import sys
import yaml
from parlai_dialeval.crowdsourcing.platform.adaptive import config  # every launch reads its options
from parlai_dialeval.crowdsourcing.platform.bots import BotPool
from tasks.chatterbot.agents import default_folder
parsed = []
load = yaml.load
yaml.load = lambda *args, **kwargs: parsed.append(1) or load(*args, **kwargs)
yaml.safe_load = lambda stream: parsed.append(1) or load(stream, Loader=yaml.SafeLoader)
BotPool({"qc": {"opt": {"model": "dialeval:qc_bot", "qc_task": "dialeval:chatterbot"}},
         "retrieval": {"opt": {"model": "dialeval:tfidf_retrieval", "retrieval_task": "dialeval:chatterbot"}}})
print("parsed", len(parsed), "of", len(list(default_folder().glob("*.yml"))))
print("loaded:", sorted(m for m in ("nltk", "choix", "parlai.core.torch_agent") if m in sys.modules))
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-2000:]
    parsed, files = re.search(r"parsed (\d+) of (\d+)", result.stdout).groups()
    assert int(parsed) == int(files) > 10, result.stdout[-500:]
    assert "loaded: []" in result.stdout, result.stdout[-500:]
