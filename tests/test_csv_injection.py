"""Issue 38 item 7 and issue 52 item 7: no CSV this project writes opens in a spreadsheet as a live formula
or shows other text than it holds.

Every writer of CSVs runs on data whose worker id, model names and texts start like formulas (a Prolific id
``=HYPERLINK(...)`` as an outsider sent it), also behind a space, a zero-width space or a fullwidth ``＝``,
and hold bidi controls (U+202E shows the rest of a name reversed); every cell of every CSV written is read
raw and must not start, after white space and format characters, with ``= + - @`` (fullwidth forms
included), a tab or a CR unless it is a plain number (OWASP's CSV-injection rule, widened as issue 52 asks;
parlai_dialeval/csv_safe.py), and must hold no bidi control. The hostile names must be there, in the form
written out below, so the check cannot pass on a file that left them out, and reading the CSV back with
``csv_safe.restore`` gives the names exactly.
"""
from __future__ import annotations

import ast
import csv
import json
import re
import unicodedata
from pathlib import Path

import pandas as pd
import pytest
from hostile_corpora import dialeval, live_chat, pairwise, scales, single_model, write
from hypothesis import given, settings
from hypothesis import strategies as st

from parlai_dialeval.csv_safe import neutralise, restore, unneutralise

WORKER = '=HYPERLINK("http://example.invalid","x")'
MODEL = "\u200b@SUM(1+1)*cmd|' /C calc'!A0"  # a zero-width space before the formula
OTHER = " ＝2+3\u202ex"  # a space, a fullwidth equals sign, a right-to-left override
# How each is written, by the rule (not by the code under test): quoted, the override as a visible escape.
CELL = {WORKER: "'" + WORKER, MODEL: "'" + MODEL, OTHER: "' ＝2+3\\u202Ex", "@note": "'@note"}
NUMBER_LIKE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|-inf")
BIDI_CONTROLS = {chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def runs_as_formula(cell: str) -> bool:
    """A spreadsheet's reading: a tab or CR first, or = + - @ (or a compatibility form of one) as the first
    character that is neither white space nor a format character."""
    visible = [c for c in cell if not c.isspace() and unicodedata.category(c) != "Cf"]
    return cell.startswith(("\t", "\r")) or bool(visible) and unicodedata.normalize("NFKC", visible[0])[:1] in "=+-@"


def hostile(records: list[dict], models: dict[str, str]) -> list[dict]:
    """``records`` with worker w0 renamed WORKER and the models renamed as ``models`` says, texts too."""
    renamed = []
    for record in records:
        record = dict(record)
        if record.get("worker_id") == "w0":
            record["worker_id"] = WORKER
        for key in ("model", "model_a", "model_b"):
            if key in record:
                record[key] = models.get(record[key], record[key])
        if "models" in record:
            record["models"] = [models.get(m, m) for m in record["models"]]
        if "turns" in record:
            record["turns"] = [dict(t, speaker=models.get(t["speaker"], t["speaker"]),
                                    text="+" + t["text"] if t["speaker"] == "human" else t["text"])
                               for t in record["turns"]]
        renamed.append(record)
    return renamed


CASES = {
    "analyze_live_chat": (lambda: hostile(live_chat(), {"m1": MODEL, "m2": OTHER}), ["--qc-test", "none"]),
    "analyze_pairwise": (lambda: hostile(pairwise(), {"x": MODEL, "y": OTHER}), ["--bootstrap-rounds", "20"]),
    "analyze_single_model": (lambda: hostile(single_model(), {"m1": MODEL, "m2": OTHER}), ["--n-boot", "20"]),
    "analyze_scales": (lambda: hostile(scales(), {"m1": MODEL, "m2": OTHER}), []),
    "significance_time": (lambda: hostile(single_model(), {"m1": MODEL, "m2": OTHER}), ["--trials", "5"]),
    "text_metrics": (lambda: hostile(single_model(), {"m1": MODEL, "m2": OTHER}), []),
}


def cells(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [cell for row in csv.reader(handle) for cell in row]


def assert_safe(paths: list[Path], names: tuple[str, ...]) -> None:
    assert paths, "no CSV written"
    seen = set()
    for path in paths:
        for cell in cells(path):
            assert not runs_as_formula(cell) or NUMBER_LIKE.fullmatch(cell), (path, cell)
            assert not BIDI_CONTROLS & set(cell), (path, cell)
            seen.add(cell)
        for column in restore(pd.read_csv(path)).select_dtypes(exclude="number"):
            assert not str(column).startswith("'"), (path, column)
    for name in names:
        assert CELL[name] in seen, f"{name!r} is in none of {[p.name for p in paths]}"


@pytest.mark.parametrize("command", sorted(CASES))
def test_every_csv_of_every_analysis_is_safe_in_a_spreadsheet(tmp_path, capsys, command):
    build, extra = CASES[command]
    path = write(tmp_path / "hostile.jsonl", build())
    out = tmp_path / ("out.csv" if command == "text_metrics" else "out")
    code, _, err = dialeval(capsys, command, "--data", path, "--out", out, *extra)
    assert code == 0, err
    written = [out] if out.suffix == ".csv" else sorted(out.glob("*.csv"))
    assert_safe(written, (MODEL, OTHER) + ((WORKER,) if command == "analyze_live_chat" else ()))
    if command == "analyze_live_chat":  # the case: workers.csv lists the outsider, quoted, restorable
        workers = restore(pd.read_csv(out / "workers.csv"))
        assert WORKER in workers["worker_id"].tolist()
        scores = restore(pd.read_csv(out / "system_scores.csv"))
        assert {MODEL, OTHER} <= set(scores["model"]) and pd.api.types.is_numeric_dtype(scores["overall"])


def test_qc_workers_out_is_safe_in_a_spreadsheet(tmp_path, monkeypatch):
    """`qc_workers --out`: its table (the worker check of a Mephisto task) as the command writes it."""
    from parlai_dialeval.crowdsourcing.platform import quality
    from parlai_dialeval.scripts.qc_workers import QcWorkers

    table = pd.DataFrame({"worker_id": [WORKER, "w1"], "p_value": [0.5, 0.01], "passed": [False, True],
                          "note": ["@note", "-0.5"]})
    monkeypatch.setattr(quality, "check_workers", lambda *args: (table, None))
    out = tmp_path / "qc.csv"
    QcWorkers.main("some_task", "--out", str(out))
    assert_safe([out], (WORKER, "@note"))
    assert "-0.5" in cells(out)  # a number kept readable as a number
    assert restore(pd.read_csv(out)).astype(object).values.tolist() == table.astype(object).values.tolist()


@pytest.mark.parametrize("text, cell", [
    (WORKER, "'" + WORKER), ("+1+1", "'+1+1"), ("-2+3", "'-2+3"), ("@x", "'@x"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("-0.5", "-0.5"), ("+3", "+3"), ("1e-05", "1e-05"), ("-.5E+3", "-.5E+3"), ("plain", "plain"),
    ("'=x", "''=x"), ("'-0.5", "''-0.5"), ("'quoted", "'quoted"), ("", ""), (-0.5, -0.5), (None, None),
    # issue 52: behind white space, format characters and compatibility forms; bidi controls escaped
    (" =1+1", "' =1+1"), ("\u200b=1+1", "'\u200b=1+1"), ("＝1+1", "'＝1+1"), ("\u3000@x", "'\u3000@x"),
    ("\ufeff\u00a0-x", "'\ufeff\u00a0-x"), ("﹢1", "'﹢1"), (" -0.5", "' -0.5"), (" ", " "),
    ("gpt\u202e4-lacol", "gpt\\u202E4-lacol"), ("\u202e=1", "\\u202E=1"), ("a\u2066b\u2069", "a\\u2066b\\u2069"),
    ("a\\u202Eb", "a\\\\u202Eb"), ("a\\\\u200fb", "a\\\\\\\\u200fb"), ("a\\u2000b", "a\\u2000b"),
    ("\\\u202e", "\\\\\\u202E"), ("\u202eu202E", "\\u202Eu202E")])
def test_neutralise_quotes_formulas_keeps_numbers_and_restores_exactly(text, cell):
    assert neutralise(text) == cell and unneutralise(cell) == text


_CELL_PIECES = st.sampled_from(["=", "+", "-", "@", "\t", "\r", " ", "'", "\u00a0", "\u3000", "\u200b", "\ufeff", "＝",
                                "＋", "＠", "﹦", "\u202e", "\u2066", "\u200f", "\\", "u", "202E", "202e", "1", "x", "é"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_CELL_PIECES, max_size=8).map("".join))
def test_any_text_is_written_safe_and_restored_exactly(text):
    cell = neutralise(text)
    assert unneutralise(cell) == text
    assert not BIDI_CONTROLS & set(cell)
    assert not runs_as_formula(cell) or NUMBER_LIKE.fullmatch(cell)


def _judged(tmp_path) -> tuple[Path, Path]:
    """Three workers' and a judge's ratings of 8 conversations of MODEL and OTHER."""
    human, judge = [], []
    for i in range(8):
        model = (MODEL, OTHER)[i % 2]
        base = {"type": "rating", "conversation_id": f"c{i}", "model": model, "criterion": "fun", "scale": "likert",
                "scale_min": 1, "scale_max": 5}
        human += [{**base, "worker_id": WORKER if w == 0 else f"w{w}", "value": 1 + (i * 3 + w) % 5} for w in range(3)]
        judge.append({**base, "worker_id": "judge:x", "value": 1 + (i * 2) % 5, "meta": {"protocol": "fed"}})
    return write(tmp_path / "human.jsonl", human), write(tmp_path / "judge.jsonl", judge)


def test_judge_agreement_and_meta_eval_csvs_are_safe(tmp_path, capsys):
    human, judge = _judged(tmp_path)
    code, _, err = dialeval(capsys, "judge_agreement", "--judge", judge, "--human", human, "--out", tmp_path / "ja")
    assert code == 0, err
    assert_safe(sorted((tmp_path / "ja").glob("*.csv")), (MODEL, OTHER))
    scores = tmp_path / "scores.csv"  # a metric named like a formula: its column header comes back as a cell
    scores.write_text(f"id,{MODEL}\n" + "".join(f"c{i},{i * 0.3 % 1}\n" for i in range(8)), encoding="utf-8")
    code, _, err = dialeval(capsys, "meta_eval", "--data", human, "--scores", scores, "--against", "fun",
                            "--bootstrap", "0", "--out", tmp_path / "me.csv")
    assert code == 0, err
    assert_safe([tmp_path / "me.csv"], (MODEL,))


def test_publish_scrub_report_is_safe(tmp_path):
    from test_publish import _opt

    from parlai_dialeval.scripts.publish import run

    records = [{"type": "conversation", "id": OTHER, "models": [MODEL], "worker_id": "w1",
                "turns": [{"speaker": "human", "text": "mail me at jo@example.org"}]}]
    path = write(tmp_path / "raw.jsonl", records)
    (tmp_path / "raw").mkdir()
    path = path.rename(tmp_path / "raw" / "raw.jsonl")
    run(_opt([path], tmp_path / "out", key_file=str(tmp_path / "keys" / "k.key")), log=None)
    report = tmp_path / "out" / "scrub_report.csv"
    assert_safe([report], (OTHER,))
    assert restore(pd.read_csv(report))["id"].tolist() == [OTHER]
    assert json.loads((tmp_path / "out" / "dialeval.json").read_text())["scrubbed_counts"] == {"email": 1}


def test_no_module_writes_csv_but_csv_safe():
    """One writer: no other module of the package calls to_csv or the csv module's writers."""
    root = Path(__file__).resolve().parents[1]
    found = []
    for folder in ("parlai_dialeval", "crowdsourcing", "tasks"):
        for path in (root / folder).rglob("*.py"):
            # the fake Prolific answers its demographic export as Prolific does: raw CSV in an HTTP reply, no file
            fake_prolific = path.parts[-3:-1] == ("prolific", "fake")
            if path.name == "csv_safe.py" or "node_modules" in path.parts or fake_prolific:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ("to_csv", "writer", "DictWriter"):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.attr}")
    assert found == []
