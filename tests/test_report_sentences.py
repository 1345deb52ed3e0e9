"""Printed lines and written reports say what the data hold: a certified pair named, the evidence line whole,
one line per command in `dialeval help`, the genuine models counted from the data, the real reason for a missing
Bradley-Terry interval, and a warning for model names a report shows alike."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
from hostile_corpora import dialeval, live_chat, pairwise, report_text

from parlai_dialeval.analysis import rankings

REPO = Path(__file__).resolve().parents[1]


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps({**r, "format_version": "1.1"}) + "\n" for r in records))
    return path


def test_certified_json_names_each_pair_that_needs_more_data(tmp_path, capsys):
    # 24 votes per pair, two thirds for one side: far from the K(K-1)/alpha = 120 evidence three models need
    data = write(tmp_path / "pw.jsonl", pairwise())
    code, out, err = dialeval(capsys, "certify", "--data", data, "--out", tmp_path / "cert")
    assert code == 0, err
    open_pairs = json.loads((tmp_path / "cert" / "certified.json").read_text())["sections"][0]["needs_more_data"]
    named = {tuple(entry.split(": needs more data: ")[0].split(" vs ")) for entry in open_pairs}
    assert named == {("x", "y"), ("y", "z"), ("x", "z")} and len(set(open_pairs)) == 3
    # the evidence line: a whole sentence pointing to where the rule is written out, parentheses balanced
    line = next(line for line in out.splitlines() if line.startswith("evidence about participants"))
    assert line == ('evidence about participants: 0 of 3 workers flagged (rule: docs/data_model.md, '
                    '"Evidence about participants"; evidence.csv)')
    assert "\n## Evidence about participants\n" in (REPO / "docs" / "data_model.md").read_text()


def test_command_list_gives_one_line_per_command(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    dialeval_bin = Path(sys.executable).with_name("dialeval")
    listing = subprocess.run([str(dialeval_bin), "help"], capture_output=True, text=True, env=env, timeout=300)
    assert listing.returncode == 0, listing.stderr[-2000:]
    lines = listing.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("prolific "))
    assert lines[at].split() == ["prolific", "Prolific", "accounts,", "panels", "and", "participants"]
    assert lines[at + 1].lstrip().startswith("publish ")  # the next command, not prolific's table run together
    assert "dialeval prolific register" not in listing.stdout
    # a full stop inside a sentence ("et al. 2022") does not end the entry
    assert re.search(r"analyze_live_chat +Live-chat direct assessment \(Ji et al\. 2022\): quality control", listing.stdout)
    # the command's own help keeps the whole description, its table of actions included
    own = subprocess.run([str(dialeval_bin), "prolific", "--help"], capture_output=True, text=True, timeout=300)
    assert "  dialeval prolific panel list                      the workspace's panels and their sizes" in own.stdout


def test_live_chat_counts_the_genuine_models_in_the_data_when_none_passes(tmp_path, capsys):
    # H.live_chat: 6 workers, each chatting with m1, m2 and the QC bot; no worker passes quality control, so no
    # model has a system score, yet both were in the data
    data = write(tmp_path / "lc.jsonl", live_chat())
    code, out, err = dialeval(capsys, "analyze_live_chat", "--data", data, "--out", tmp_path / "o")
    assert code == 0, err
    text = report_text(tmp_path / "o")
    assert ("6 workers submitted 6 assignments (HITs) holding 12 rated conversations with 2 genuine models and 6 "
            "with the quality-control bot (qc).") in text
    # no chart of empty axes, no blank 8x8 tables of Table 8: a sentence says why
    assert not (tmp_path / "o" / "overall_scores.png").exists()
    assert ("No correlation between statements: across systems it needs the scores of three models or more, and 0 "
            "have scores.") in text


def test_a_single_bootstrap_round_is_named_as_the_reason_for_no_interval(tmp_path, capsys):
    # 72 votes on three connected pairs, each pair split both ways: the bootstrap could vary with 2 rounds
    data = write(tmp_path / "pw.jsonl", pairwise())
    code, out, err = dialeval(capsys, "analyze_pairwise", "--data", data, "--out", tmp_path / "o",
                              "--bootstrap-rounds", "1")
    assert code == 0, err
    text = report_text(tmp_path / "o")
    assert ("no Bradley-Terry interval for x, y, z: a single bootstrap round has no spread; an interval takes 2 or "
            "more rounds.") in text
    assert "one-sided pair" not in text
    # where the votes cannot vary, that stays the reason, however few the rounds
    one_sided = pd.DataFrame({"model_a": ["x"] * 5, "model_b": ["y"] * 5, "choice": ["b"] * 5})
    assert rankings.rankings(one_sided, rounds=1)["bt_note"].str.contains("cannot vary").all()


def test_model_names_alike_but_for_white_space_or_case_are_warned_of_once(tmp_path, capsys):
    records = [{"type": "study", "name": "p"}]
    for i, first in enumerate(["x", " x", "x\t", "X"] * 6):
        records.append({"type": "comparison", "study": "p", "item_id": f"i{i}", "worker_id": f"w{i % 3}",
                        "model_a": first, "model_b": "y", "choice": "ab"[i % 3 == 0], "question": "q?"})
    data = write(tmp_path / "alike.jsonl", records)
    code, out, err = dialeval(capsys, "analyze_pairwise", "--data", data, "--out", tmp_path / "o",
                              "--bootstrap-rounds", "20")
    assert code == 0, err
    warned = [line for line in err.splitlines() if line.startswith("dialeval: warning:")]
    assert warned == ["dialeval: warning: model names that differ only in case or white space are analysed as "
                      "different models but look alike in reports: ' x', 'X', 'x', 'x\\t' (rename them in the data "
                      "if each group is one model)."]
    # the analysis ran as the data say: four models beside y
    ranked = pd.read_csv(tmp_path / "o" / "rankings.csv", keep_default_na=False)
    assert sorted(ranked["model"]) == sorted([" x", "X", "x", "x\t", "y"])
    # 20 bootstrap rounds (for speed here): the report says once that its intervals are rough
    assert report_text(tmp_path / "o").count("The Bradley-Terry intervals are not to be read as intervals: only 20 "
                                             "bootstrap rounds") == 1
