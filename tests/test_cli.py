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


def test_version_names_this_plugin_and_the_frameworks_it_runs_on():
    # ParlAI's superscript answered --version with "ParlAI version 1.7.2" alone; the versions are the installed ones
    # (setup.py's and install.sh's pins), read here from their sources, not from the code under test
    from importlib.metadata import version

    result = run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"dialeval {version('parlai_dialeval')} (ParlAI 1.7.2, Mephisto 1.1.1)\n"


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
    # a folder of exports (not a dataset dialeval publish wrote) is named as such, with its files to give instead
    (["--data", "{tmp}"], "not a published dataset (no dialeval.json in it) (expected the export files themselves, "
                          "e.g. --data {tmp}/a.jsonl {tmp}/b.jsonl)"),
])
def test_convert_bad_input_is_one_clear_line(tmp_path, args, expected):
    (tmp_path / "notes.txt").write_text("just some notes\n")
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text("")
    out = tmp_path / "out.jsonl"
    result = run("convert", *[a.format(tmp=tmp_path) for a in args], "--out", str(out))
    assert result.returncode == 2
    assert expected.format(tmp=tmp_path) in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def plugin_commands() -> list[str]:
    from parlai.core.script import SCRIPT_REGISTRY

    from parlai_dialeval.cli import register_plugin_scripts

    register_plugin_scripts()
    return sorted(name for name, reg in SCRIPT_REGISTRY.items() if reg.klass.__module__.startswith("parlai_dialeval."))


@pytest.mark.parametrize("command", plugin_commands())
def test_every_plugin_command_prints_its_help_and_exits_0(command, capsys):
    from parlai_dialeval.cli import main

    with pytest.raises(SystemExit) as exited:  # argparse's help action exits
        main([command, "--help"])
    out = capsys.readouterr()
    assert exited.value.code == 0, out.err[-2000:]
    usage = out.out.splitlines()[0]  # "usage: <program> COMMAND [--help] ...": the program is pytest's here
    assert usage.startswith("usage: ") and f" {command} [--help]" in usage and "Parse Error" not in out.err


def test_missing_required_option_still_exits_2_naming_it(capsys):
    from parlai_dialeval.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["analyze_live_chat", "--data", "x.jsonl"])
    assert exited.value.code == 2
    assert "Parse Error: the following arguments are required: --out" in capsys.readouterr().err


def _pairwise_file(tmp_path) -> Path:
    from parlai_dialeval.data import write_jsonl

    path = tmp_path / "votes.jsonl"
    write_jsonl([{"type": "comparison", "item_id": f"i{k}", "worker_id": "w", "model_a": "x", "model_b": "y",
                  "choice": "a"} for k in range(3)], path)
    return path


@pytest.mark.parametrize("command, option, value, expected", [
    ("analyze_pairwise", "--alpha", "1.5", "--alpha 1.5: expected a number strictly between 0 and 1"),
    ("analyze_pairwise", "--alpha", "0", "--alpha 0: expected a number strictly between 0 and 1"),
    ("analyze_pairwise", "--alpha", "nan", "--alpha 'nan': expected a number strictly between 0 and 1"),
    ("analyze_pairwise", "--bootstrap-rounds", "-5", "--bootstrap-rounds -5: expected an integer >= 1"),
    ("analyze_pairwise", "--bootstrap-rounds", "0", "--bootstrap-rounds 0: expected an integer >= 1"),
    ("analyze_pairwise", "--turns", "6-2", "--turns '6-2': expected 1 <= FIRST <= LAST"),
    ("analyze_single_model", "--n-boot", "x", "--n-boot 'x': expected an integer >= 1"),
    ("analyze_single_model", "--alpha", "-0.1", "--alpha -0.1: expected a number strictly between 0 and 1"),
    # a negative seed passed the parser and failed in numpy's generator after loading (a traceback)
    ("analyze_pairwise", "--seed", "-1", "--seed -1: expected an integer >= 0"),
    ("analyze_live_chat", "--seed", "-3", "--seed -3: expected an integer >= 0"),
])
def test_bad_option_values_are_one_line_and_exit_2(tmp_path, capsys, command, option, value, expected):
    # Issue 18 item 12: --alpha 1.5 gave inverted intervals with exit 0, negative rounds were accepted.
    from parlai_dialeval.cli import main

    code = main([command, "--data", str(_pairwise_file(tmp_path)), "--out", str(tmp_path / "out"), option, value])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == f"dialeval: error: {expected}"
    assert not (tmp_path / "out").exists()


def test_out_pointing_at_an_existing_file_is_refused(tmp_path, capsys):
    from parlai_dialeval.cli import main

    taken = tmp_path / "taken.txt"
    taken.write_text("keep me")
    code = main(["analyze_pairwise", "--data", str(_pairwise_file(tmp_path)), "--out", str(taken)])
    assert code == 2 and "--out" in capsys.readouterr().err and taken.read_text() == "keep me"


@pytest.mark.parametrize("args, expected", [
    (["meta_eval", "--scores", "s.csv", "--human", "h.csv", "--out", "o.csv", "--confidence", "1.5"],
     "--confidence 1.5: expected a number strictly between 0 and 1"),
    (["meta_eval", "--scores", "s.csv", "--human", "h.csv", "--out", "o.csv", "--bootstrap", "-1"],
     "--bootstrap -1: expected an integer >= 0"),
    (["replicate", "--runs", "a", "b", "--out", "o", "--levels", "0.05,0"],
     "--levels 0: expected a number strictly between 0 and 1"),
    (["meta_eval", "--scores", "s.csv", "--human", "h.csv", "--out", "o.csv", "--seed", "-1"],
     "--seed -1: expected an integer >= 0"),
    (["judge_agreement", "--judge", "j.jsonl", "--human", "h.jsonl", "--out", "o", "--seed", "-2"],
     "--seed -2: expected an integer >= 0"),
])
def test_other_commands_check_their_numbers(tmp_path, capsys, args, expected):
    from parlai_dialeval.cli import main

    assert main(args) == 2
    assert capsys.readouterr().err.strip() == f"dialeval: error: {expected}"


def test_one_turn_range_grammar():
    # Issue 19 item 1: analyze_pairwise and analyze_single_model had two parse_turns with opposite grammars.
    from parlai_dialeval.errors import DialevalError
    from parlai_dialeval.options import turn_range

    assert turn_range("2-6") == (2, 6) and turn_range("3") == (3, 3)
    assert turn_range("all") is None and turn_range("") is None and turn_range(None) is None
    for bad in ("6-2", "x", "0-3", "2-"):
        with pytest.raises(DialevalError, match="--sm-turns"):
            turn_range(bad, "--sm-turns")
