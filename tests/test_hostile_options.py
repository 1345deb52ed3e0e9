"""Every analysis command on bad options and output places (issue 18, "Must show"): one line naming the option or
the place, before any work or model loads, never a Python traceback.
"""
from __future__ import annotations

import json

import pytest

from hostile_corpora import assert_one_line_error, dialeval, live_chat, pairwise, write


# ----------------------------------------------------------------------------- bad options

@pytest.mark.parametrize("command, option, value", [
    ("analyze_pairwise", "--alpha", "1.5"), ("analyze_pairwise", "--alpha", "0"),
    ("analyze_pairwise", "--bootstrap-rounds", "-5"), ("significance_time", "--trials", "0"),
    ("analyze_single_model", "--alpha", "nan"), ("analyze_live_chat", "--sig-plot-threshold", "-1"),
])
def test_bad_options_are_one_line_naming_the_option(tmp_path, capsys, command, option, value):
    path = write(tmp_path / "d.jsonl", pairwise())
    code, _, err = dialeval(capsys, command, "--data", path, "--out", tmp_path / "out", option, value)
    assert_one_line_error(code, err, option)


@pytest.mark.parametrize("command, option, value", [
    ("judge", "--judge-batch-size", "-3"), ("judge", "--judge-batch-size", "0"), ("judge", "--max-reply-tokens", "-2"),
    ("judge", "--concurrency", "0"), ("judge", "--request-timeout", "-1"), ("judge", "--price-prompt", "-0.5"),
    ("judge", "--price-completion", "inf"), ("fed", "--batch-size", "0"), ("fed", "--max-tokens", "-1"),
])
def test_bad_model_options_are_one_line_before_any_model_loads(tmp_path, capsys, command, option, value):
    """A judge's or FED's sizes and prices out of range (a negative batch size ran, and --max-reply-tokens -2
    failed 128 prompts in, naming the agent's --max-new-tokens) are refused before anything loads or runs."""
    path = write(tmp_path / "d.jsonl", pairwise())
    needs = {"judge": ["--protocol", "ab", "--judge", f"lm:{tmp_path / 'no-model'}"], "fed": ["--lm", tmp_path / "no-model"]}
    code, _, err = dialeval(capsys, command, "--data", path, "--out", tmp_path / "out.jsonl", *needs[command], option, value)
    assert_one_line_error(code, err, option, value)
    assert not (tmp_path / "out.jsonl").exists()


def test_out_pointing_at_a_file_is_one_line(tmp_path, capsys):
    path = write(tmp_path / "d.jsonl", pairwise())
    existing = tmp_path / "taken"
    existing.write_text("mine")
    code, _, err = dialeval(capsys, "analyze_pairwise", "--data", path, "--out", existing)
    assert_one_line_error(code, err, str(existing))
    assert existing.read_text() == "mine"


def test_replicate_and_meta_eval_on_missing_or_bad_inputs(tmp_path, capsys):
    code, _, err = dialeval(capsys, "replicate", "--runs", tmp_path / "nope1", tmp_path / "nope2", "--out",
                            tmp_path / "rep")
    assert_one_line_error(code, err, "nope1")
    scores = tmp_path / "scores.jsonl"
    scores.write_text('{"id": "c1", "score": "high"}\n')
    data = write(tmp_path / "d.jsonl", live_chat())
    code, _, err = dialeval(capsys, "meta_eval", "--scores", scores, "--data", data, "--out", tmp_path / "m.csv")
    assert_one_line_error(code, err, str(scores))


def test_annotations_with_out_of_range_label_name_the_item(tmp_path, capsys):
    fed = tmp_path / "fed_data.json"
    fed.write_text(json.dumps([{"context": "User: hi\nSystem: hello", "response": "System: sure", "system": "Meena",
                                "annotations": {"Interesting": [1, 2, 2]}},
                               {"context": "User: hi\nSystem: hello", "response": "System: no", "system": "Human",
                                "annotations": {"Interesting": [1, 7, 2]}}]))
    code, _, err = dialeval(capsys, "analyze_annotations", "--data", fed, "--out", tmp_path / "out")
    assert_one_line_error(code, err, f"{fed}, item 1:", "field 'Interesting'")


@pytest.mark.parametrize("command, out", [("analyze_pairwise", "sub"), ("convert", "x.jsonl")])
def test_out_below_a_file_is_one_line_before_any_work(tmp_path, capsys, command, out):
    """--out afile/sub raised NotADirectoryError, and only once the whole analysis had run."""
    path = write(tmp_path / "d.jsonl", pairwise())
    afile = tmp_path / "afile"
    afile.write_text("mine")
    code, printed, err = dialeval(capsys, command, "--data", path, "--out", afile / out)
    assert code == 2 and printed == ""
    assert err == f"dialeval: error: --out {afile / out}: {afile} is an existing file (expected a folder above the " \
                  "outputs)\n"
    assert afile.read_text() == "mine"


def test_writing_below_a_file_is_a_dialeval_error(tmp_path):
    from parlai_dialeval.atomic import atomic_open
    from parlai_dialeval.errors import DialevalError

    afile = tmp_path / "afile"
    afile.write_text("mine")
    with pytest.raises(DialevalError) as refused, atomic_open(afile / "sub" / "x.txt") as handle:
        handle.write("never")
    assert str(refused.value) == f"{afile / 'sub'}: cannot make this folder, {afile} is an existing file"
