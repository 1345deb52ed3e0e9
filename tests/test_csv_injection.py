"""Issue 38 item 7: no CSV this project writes opens in a spreadsheet as a live formula.

Every command that writes CSVs runs on data whose worker id, model names and texts start like formulas
(a Prolific id ``=HYPERLINK(...)`` as an outsider sent it); every cell of every CSV it writes is read raw and
must not start with ``= + - @``, a tab or a CR unless it is a plain number (OWASP's CSV-injection rule;
parlai_dialeval/csv_safe.py). The hostile names must be there, quoted, so the check cannot pass on a file
that left them out, and reading the CSV back with ``csv_safe.restore`` gives the names exactly.
"""
from __future__ import annotations

import ast
import csv
import re
from pathlib import Path

import pandas as pd
import pytest
from test_hostile_inputs import dialeval, live_chat, pairwise, scales, single_model, write

from parlai_dialeval.csv_safe import neutralise, restore, unneutralise

WORKER = '=HYPERLINK("http://example.invalid","x")'
MODEL = "@SUM(1+1)*cmd|' /C calc'!A0"
OTHER = "-2+3"  # a formula (not a plain number): quoted
NUMBER_LIKE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|-inf")


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
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or NUMBER_LIKE.fullmatch(cell), (path, cell)
            seen.add(cell)
        for column in restore(pd.read_csv(path)).select_dtypes(exclude="number"):
            assert not str(column).startswith("'"), (path, column)
    for name in names:
        assert "'" + name in seen, f"{name} is in none of {[p.name for p in paths]}"


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
    ("'=x", "''=x"), ("'-0.5", "''-0.5"), ("'quoted", "'quoted"), ("", ""), (-0.5, -0.5), (None, None)])
def test_neutralise_quotes_formulas_keeps_numbers_and_restores_exactly(text, cell):
    assert neutralise(text) == cell and unneutralise(cell) == text


def test_no_module_writes_csv_but_csv_safe():
    """One writer: no other module of the package calls to_csv or the csv module's writers."""
    root = Path(__file__).resolve().parents[1]
    found = []
    for folder in ("parlai_dialeval", "crowdsourcing", "tasks"):
        for path in (root / folder).rglob("*.py"):
            if path.name == "csv_safe.py" or "node_modules" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ("to_csv", "writer", "DictWriter"):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.attr}")
    assert found == []
