"""Issue 38, item 6: work of an identity the crowd platform never confirmed (an outsider who named a made-up
Prolific participant and session) is exported marked ``unverified: true`` and every analysis leaves it out
unless ``--include-unverified``; before, `analyze_live_chat` counted the outsider as a worker."""
from __future__ import annotations

import json

import pytest
from test_live_chat_studies import synthetic

from parlai_dialeval.data import from_records, write_jsonl
from parlai_dialeval.errors import DataError
from parlai_dialeval.scripts.analyze_live_chat import run_analysis
from parlai_dialeval.scripts.command_line import load_data

OUTSIDER = '=HYPERLINK("http://example.invalid","x")'  # the PID of the attack


def _with_outsider() -> list[dict]:
    """12 honest workers and the outsider's one HIT (the same shape, rated at random), marked unverified."""
    honest = synthetic(workers=12, seed=5)
    outsider = [r for r in synthetic(workers=13, bad_workers=(12,), seed=5) if r.get("worker_id") == "W12"]
    for record in outsider:
        record["worker_id"] = OUTSIDER
        for key in ("id", "conversation_id", "assignment_id"):
            if key in record:
                record[key] = record[key].replace("W12", "outsider")
        record["unverified"] = True
    return honest + outsider


def test_analysis_leaves_unverified_work_out_unless_asked(tmp_path):
    path = tmp_path / "study.jsonl"
    write_jsonl(_with_outsider(), path)
    said = []
    summary = run_analysis({"data": [str(path)], "out": str(tmp_path / "out")}, log=said.append)
    assert summary["n_workers"] == 12 and summary["n_dialogues"] == 36
    assert "left out the work of unverified identities: 4 conversation(s), 28 rating(s) (--include-unverified " \
           "keeps it)" in said
    workers = (tmp_path / "out" / "workers.csv").read_text()
    assert "HYPERLINK" not in workers and "outsider" not in workers
    kept = run_analysis({"data": [str(path)], "out": str(tmp_path / "all"), "include_unverified": True},
                        log=lambda *_: None)
    assert kept["n_workers"] == 13 and kept["n_dialogues"] == 39


def test_unverified_field_is_validated_and_kept_on_save(tmp_path):
    records = _with_outsider()
    data = from_records(records)
    assert int(data.ratings["unverified"].eq(True).sum()) == 28
    path = tmp_path / "again.jsonl"
    data.save(path)  # what `dialeval convert` writes keeps the mark
    marked = [json.loads(line) for line in path.read_text().splitlines() if '"unverified"' in line]
    assert len(marked) == 32 and all(r["unverified"] is True and r["worker_id"] == OUTSIDER for r in marked)
    with pytest.raises(DataError, match="unverified.*true or false"):
        from_records([dict(records[1], unverified="yes")])
    assert load_data({"data": [str(path)]}, log=None).ratings["worker_id"].nunique() == 12
