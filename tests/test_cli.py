"""The `dialeval` command: ParlAI's commands still work, the plugin's are listed, errors are one line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DIALEVAL = Path(sys.executable).with_name("dialeval")


def run(*args, cwd=None):
    return subprocess.run([str(DIALEVAL), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_help_lists_plugin_commands():
    result = run("help")
    assert result.returncode == 0, result.stderr
    for command in ("convert", "validate", "self_chat", "display_data"):
        assert command in result.stdout


def test_parlai_self_chat_still_works(tmp_path):
    out = tmp_path / "chats"
    result = run("self_chat", "-m", "repeat_query", "--num-self-chats", "1", "--outfile", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    written = out.with_suffix(".jsonl")
    assert written.exists()
    chat = json.loads(written.read_text().splitlines()[0])
    assert chat["dialog"], "self_chat wrote an empty conversation"


def test_dialeval_prefix_resolves_to_plugin_modules():
    import parlai_dialeval  # noqa: F401
    from parlai.core.loader import assert_get_source_repo

    assert assert_get_source_repo("dialeval:qc_bot") == ("parlai_dialeval", "qc_bot")
    assert assert_get_source_repo("seq2seq") == ("parlai", "seq2seq")


def test_plugin_subpackages_are_installed_under_parlai_dialeval():
    import parlai_dialeval.crowdsourcing
    import parlai_dialeval.tasks

    repo = Path(__file__).resolve().parents[1]
    assert Path(parlai_dialeval.tasks.__file__).parent == repo / "tasks"
    assert Path(parlai_dialeval.crowdsourcing.__file__).parent == repo / "crowdsourcing"


def test_validate_truncated_file_exits_nonzero_naming_it(tmp_path):
    path = tmp_path / "cut.jsonl"
    path.write_text('{"type": "study", "format_version": "1.0", "name": "s"}\n{"type": "rat')
    result = run("validate", "--data", str(path))
    assert result.returncode != 0
    assert f"{path}:2: not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_validate_counts_records(tmp_path):
    path = tmp_path / "ok.jsonl"
    records = [{"type": "comparison", "format_version": "1.0", "item_id": str(i), "worker_id": "w",
                "model_a": "x", "model_b": "y", "choice": "a"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = run("validate", "--data", str(path))
    assert result.returncode == 0, result.stderr
    assert "comparison: 3" in result.stdout


@pytest.mark.parametrize("args, expected", [
    (["--data", "/nonexistent/x.jsonl"], "/nonexistent/x.jsonl: no such file or folder"),
    (["--data", "{tmp}/notes.txt"], "format not recognised"),
    (["--data", "{tmp}/notes.txt", "--from", "no-such-format"], "unknown format 'no-such-format'"),
])
def test_convert_bad_input_is_one_clear_line(tmp_path, args, expected):
    (tmp_path / "notes.txt").write_text("just some notes\n")
    out = tmp_path / "out.jsonl"
    result = run("convert", *[a.format(tmp=tmp_path) for a in args], "--out", str(out))
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()
