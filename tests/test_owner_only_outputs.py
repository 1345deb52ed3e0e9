"""Issue 52 item 5: what every command writes is its owner's alone, under a umask of 022 too.

Analysis outputs hold worker ids (workers.csv) and participants' words (report.html, a judge's answer
cache); they were 0644 under the usual umask 022 while launch, export and publish wrote 0600/0700. Each
command below runs in this process under umask 022, into a folder that does not exist yet (two levels
deep), and every file and folder it made must be unreadable to group and others; the outputs must be
there, so the check cannot pass on a command that wrote nothing. The library layer (atomic.py) is checked
the same way without the command line, as a notebook calls it.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hostile_corpora import dialeval, live_chat, pairwise, scales, single_model, write

from parlai_dialeval.data import write_jsonl


def _fed(tmp_path: Path) -> Path:
    path = tmp_path / "fed_data.json"
    path.write_text(json.dumps([{"context": "User: hi\nSystem: hello", "response": f"System: sure {i}", "system": s,
                                 "annotations": {"Interesting": [i % 3, (i + j) % 3, 2], "Engaging": [2, i % 3, 1]}}
                                for j, s in enumerate(("Meena", "Human", "Mitsuku")) for i in range(4)]))
    return path


def _judged(tmp_path: Path) -> list[str]:
    human, judge = [], []
    for i in range(8):
        base = {"type": "rating", "conversation_id": f"c{i}", "model": ("m1", "m2")[i % 2], "criterion": "fun",
                "scale": "likert", "scale_min": 1, "scale_max": 5}
        human += [{**base, "worker_id": f"w{w}", "value": 1 + (i * 3 + w) % 5} for w in range(3)]
        judge.append({**base, "worker_id": "judge:x", "value": 1 + (i * 2) % 5, "meta": {"protocol": "fed"}})
    write_jsonl(human, tmp_path / "human.jsonl")
    write_jsonl(judge, tmp_path / "judge.jsonl")
    return ["--judge", str(tmp_path / "judge.jsonl"), "--human", str(tmp_path / "human.jsonl")]


def _meta_eval(tmp_path: Path) -> list[str]:
    _judged(tmp_path)
    (tmp_path / "scores.csv").write_text("id,fun\n" + "".join(f"c{i},{i * 0.3 % 1}\n" for i in range(8)))
    return ["--data", str(tmp_path / "human.jsonl"), "--scores", str(tmp_path / "scores.csv"), "--against", "fun",
            "--bootstrap", "0"]


def _data(records):
    return lambda tmp_path: ["--data", str(write(tmp_path / "d.jsonl", records()))]


def _replicate(tmp_path: Path) -> list[str]:
    data = write(tmp_path / "d.jsonl", live_chat(models=("m1", "m2", "m3")))
    runs = [tmp_path / "run1", tmp_path / "run2"]
    for run in runs:
        assert dialeval_quiet("analyze_live_chat", "--data", data, "--out", run, "--qc-test", "none") == 0
    return ["--runs", *map(str, runs)]


def dialeval_quiet(*args) -> int:
    from parlai_dialeval.cli import main

    return main([str(a) for a in args])


# command -> (its inputs, its other options, what --out names: a folder or a file)
COMMANDS = {
    "analyze_live_chat": (_data(live_chat), ["--qc-test", "none"], "folder"),
    "analyze_pairwise": (_data(pairwise), ["--bootstrap-rounds", "20"], "folder"),
    "analyze_single_model": (_data(single_model), ["--n-boot", "20"], "folder"),
    "analyze_scales": (_data(scales), [], "folder"),
    "analyze_annotations": (lambda t: ["--data", str(_fed(t))], [], "folder"),
    "significance_time": (_data(single_model), ["--trials", "5"], "folder"),
    "certify": (_data(pairwise), [], "folder"),
    "judge_agreement": (_judged, [], "folder"),
    "replicate": (_replicate, [], "folder"),
    "plan": (lambda t: [], ["--win-rates", "0.6", "--simulations", "20"], "folder"),
    "text_metrics": (_data(single_model), [], "file"),
    "meta_eval": (_meta_eval, [], "file"),
    "convert": (_data(pairwise), [], "file"),
}


def private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_writes_for_its_owner_only_under_umask_022(tmp_path, capsys, command):
    inputs, options, kind = COMMANDS[command]
    arguments = inputs(tmp_path)
    new = tmp_path / "shared" / "results"  # neither folder exists yet
    out = new / ("out.csv" if command in ("text_metrics", "meta_eval") else "out.jsonl") if kind == "file" else new
    previous = os.umask(0o022)
    try:
        code, _, err = dialeval(capsys, command, *arguments, "--out", out, *options)
    finally:
        os.umask(previous)
    assert code == 0, err
    made = [tmp_path / "shared", *sorted((tmp_path / "shared").rglob("*"))]
    files = [p for p in made if p.is_file()]
    assert files and (out in files if kind == "file" else (out / "report.html") in files or command == "plan")
    assert [str(p.relative_to(tmp_path)) for p in made if not private(p)] == []


def test_the_library_writes_for_its_owner_only_under_umask_022(tmp_path):
    """atomic.py without the command line (a notebook's analyze() call): CSV, JSON, figure, report and the
    judge's answer cache, each in folders made on the way."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from parlai_dialeval.judge.run import AnswerCache
    from parlai_dialeval.report import Report
    from parlai_dialeval.scripts.analysis_command import Outputs

    previous = os.umask(0o022)
    try:
        report = Report("t", tmp_path / "a" / "b")
        report.figure(plt.figure(), "plot")
        written = Outputs({"workers": pd.DataFrame({"worker_id": ["w1"]})}, {"summary": {"n": 1}}, report).write(
            tmp_path / "a" / "b")
        AnswerCache(tmp_path / "cache" / "judge.jsonl").put({"key": "k", "reply": "the user's words"})
        (tmp_path / "mine").mkdir()  # a folder the user made keeps the mode the user gave it
        write_jsonl([{"type": "study", "name": "s"}], tmp_path / "mine" / "s.jsonl")
    finally:
        os.umask(previous)
    assert written == ["workers.csv", "summary.json", "report.html"]
    made = [p for p in tmp_path.rglob("*") if p != tmp_path / "mine"]
    assert len(made) == 9 and [str(p.relative_to(tmp_path)) for p in made if not private(p)] == []
    assert stat.S_IMODE((tmp_path / "mine").stat().st_mode) == 0o755


def test_a_servers_per_message_write_replaces_the_file_whole_for_its_owner_only(tmp_path):
    """atomic.replace_text (the live server's record and Mephisto's state writes, after every message): under
    umask 022 the file and the folders made on the way are 0600/0700; a shorter text leaves nothing of the
    longer one it replaces; no part file stays; a folder removed since the last write is made again."""
    import shutil

    from parlai_dialeval.atomic import replace_text

    target = tmp_path / "runs" / "unit" / "record.json"
    previous = os.umask(0o022)
    try:
        replace_text(str(target), "é" * 5000)
        replace_text(str(target), '{"ok": "✓"}')
        shutil.rmtree(tmp_path / "runs")
        replace_text(str(target), '{"again": 1}')
    finally:
        os.umask(previous)
    assert target.read_text(encoding="utf-8") == '{"again": 1}'
    assert [p.name for p in target.parent.iterdir()] == ["record.json"]
    made = [tmp_path / "runs", tmp_path / "runs" / "unit", target]
    assert [str(p.relative_to(tmp_path)) for p in made if not private(p)] == []
