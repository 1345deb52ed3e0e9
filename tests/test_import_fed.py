"""The fed importer against the raw fed_data.json, read independently in the test."""
from __future__ import annotations

import json

import pytest

from crowdsourcing.zygote import dialeval_run
from parlai_dialeval.importers import detect_format, import_paths, load


@pytest.fixture(scope="module")
def fed_file(shared_data):
    return shared_data / "fed" / "fed_data.json"


@pytest.fixture(scope="module")
def raw(fed_file):
    return json.loads(fed_file.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def report(fed_file):
    return import_paths([fed_file], "fed")


@pytest.fixture(scope="module")
def data(fed_file):
    return load([fed_file], log=None)


def test_items_levels_and_ids(data, raw):
    levels = data.conversations["meta"].map(lambda m: m["level"]).value_counts().to_dict()
    assert levels == {"turn": 375, "dialog": 125}
    for i in (0, 3):
        level = "turn" if "response" in raw[i] else "dialog"
        row = data.conversations[data.conversations["id"] == f"fed-{level}-{i}"].iloc[0]
        assert row["models"] == [raw[i]["system"]] and row["task"] == "fed"
        assert row["meta"] == {"level": level, "index": i}


def test_detected_as_fed(fed_file):
    assert detect_format(fed_file) == "fed"


def test_turns_parsed_and_response_appended(data, raw):
    row = data.conversations[data.conversations["id"] == "fed-turn-0"].iloc[0]
    lines = raw[0]["context"].split("\n") + [raw[0]["response"]]
    assert len(row["turns"]) == len(lines)
    assert row["turns"][0] == {"speaker": "human", "text": lines[0].removeprefix("User: ")}
    assert row["turns"][-1] == {"speaker": raw[0]["system"], "text": lines[-1].removeprefix("System: ")}


def test_five_annotations_per_quality_kept_or_reported(report, data, raw, fed_file):
    kept = data.ratings.groupby(["conversation_id", "criterion"]).size()
    skipped = {where for where, why in report.skipped if why.startswith("non-numeric label")}
    assert len(skipped) == len(report.skipped)
    for i, item in enumerate(raw):
        level = "turn" if "response" in item else "dialog"
        for quality, labels in item["annotations"].items():
            assert len(labels) == 5
            reported = sum(f"{fed_file} item {i} {quality} annotator {k}" in skipped for k in range(5))
            assert kept.get((f"fed-{level}-{i}", quality.lower()), 0) + reported == 5
            assert reported == sum(not isinstance(v, int) for v in labels)
    assert report.read == report.kept + len(report.skipped) == 5 * sum(len(x["annotations"]) for x in raw)


def test_scales_and_workers(data):
    ratings = data.ratings
    assert set(ratings["worker_id"]) == {f"fed-annotator-{k}" for k in range(5)}
    maxima = ratings.groupby(["criterion"])["scale_max"].unique().map(lambda v: sorted(set(v))).to_dict()
    assert maxima["understandable"] == [1] and maxima["consistent"] == [1] and maxima["overall"] == [4]
    assert maxima["interesting"] == [2] and maxima["error recovery"] == [2]
    assert (ratings["value"] <= ratings["scale_max"]).all() and (ratings["scale_min"] == 0).all()
    declared = {c["name"] for c in data.studies[0]["criteria"]}
    assert set(ratings["criterion"]) == declared


def test_convert_cli(fed_file, tmp_path):
    out = tmp_path / "fed.jsonl"
    result = dialeval_run(["convert", "--data", str(fed_file), "--out", str(out)], timeout=120)
    assert result.returncode == 0, result.stderr
    kinds = [json.loads(line)["type"] for line in out.read_text().splitlines()]
    assert kinds.count("conversation") == 500 and kinds.count("study") == 1
    assert "skipped 167" in result.stdout


def _item(context, labels, response=None):
    item = {"context": context, "system": "Meena", "annotations": {"Overall": labels}}
    if response is not None:
        item["response"] = response
    return item


def test_items_with_nothing_to_rate_and_labels_that_are_not_integers(tmp_path):
    path = tmp_path / "fed_data.json"
    path.write_text(json.dumps([
        _item("", [1, 2]),                                          # dialog level, empty context
        _item("User: Hi!", [3, 4], response=""),                   # turn level, empty response
        _item("User: Hi!", [1.0, "3", 1.5, "N/A (none)", 2], response="System: Hello."),
    ]))
    report = import_paths([path], "fed")
    assert report.skipped == [
        (f"{path} item 0", "no dialogue to rate (empty context)"),
        (f"{path} item 1", "no response to rate (empty response)"),
        (f"{path} item 2 Overall annotator 1", "label '3' is not an integer"),
        (f"{path} item 2 Overall annotator 2", "label 1.5 is not an integer"),
        (f"{path} item 2 Overall annotator 3", "non-numeric label 'N/A (none)'")]
    data = load([path], log=None)
    assert list(data.conversations["id"]) == ["fed-turn-2"]
    assert list(data.ratings["value"]) == [1, 2] and list(data.ratings["worker_id"]) == [
        "fed-annotator-0", "fed-annotator-4"]
    assert report.read == report.kept + len(report.skipped)
