"""The canonical data model: round trips, and one clear error per kind of bad input."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from parlai_dialeval.data import EvalData, from_records, read_jsonl, write_jsonl
from parlai_dialeval.errors import DataError

STUDY = {"type": "study", "name": "s", "qc_models": ["qc"],
         "criteria": [{"name": "fun", "positive": True, "scale": "continuous", "min": 0, "max": 100},
                      {"name": "robotic", "positive": False, "scale": "continuous", "min": 0, "max": 100}]}
CONVERSATION = {"type": "conversation", "id": "c1", "models": ["bot"], "worker_id": "w1", "task": "t",
                "turns": [{"speaker": "human", "text": "hi", "time": 1.5}, {"speaker": "bot", "text": "hello"}],
                "duration": 12.0, "topic": "cats"}
RATING = {"type": "rating", "study": "s", "conversation_id": "c1", "worker_id": "w1", "model": "bot",
          "criterion": "fun", "scale": "continuous", "scale_min": 0, "scale_max": 100, "value": 73}
COMPARISON = {"type": "comparison", "item_id": "i1", "worker_id": "w2", "model_a": "x", "model_b": "y",
              "choice": "tie", "turn_index": 2, "context": [{"speaker": "human", "text": "hey"}]}
RECORDS = [STUDY, CONVERSATION, RATING, COMPARISON]


def write_lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_round_trip_keeps_every_field(tmp_path):
    first = tmp_path / "a.jsonl"
    assert write_jsonl(RECORDS, first) == 4
    data = read_jsonl([first])
    assert data.counts() == {"study": 1, "conversation": 1, "rating": 1, "comparison": 1}
    assert data.ratings.loc[0, "value"] == 73
    assert data.conversations.loc[0, "turns"][0] == {"speaker": "human", "text": "hi", "time": 1.5}
    assert data.criteria()["robotic"]["positive"] is False
    assert data.qc_models() == {"qc"}
    second = tmp_path / "b.jsonl"
    data.save(second)
    reread = [json.loads(line) for line in second.read_text().splitlines()]
    originals = [dict(r, format_version="1.0") for r in RECORDS]
    assert reread == originals


def test_turns_frame_has_one_row_per_turn():
    turns = from_records([dict(CONVERSATION)]).turns()
    assert list(turns["speaker"]) == ["human", "bot"]
    assert list(turns["turn_index"]) == [0, 1]


def test_concat_keeps_all_rows():
    a = from_records([dict(STUDY), dict(RATING)])
    b = from_records([dict(RATING, worker_id="w9")])
    merged = a.concat(b)
    assert sorted(merged.ratings["worker_id"]) == ["w1", "w9"]
    assert len(merged.studies) == 1
    assert isinstance(EvalData().ratings, pd.DataFrame)


@pytest.mark.parametrize("change, line, field, words", [
    (lambda r: r.pop("criterion"), 3, "criterion", "missing required field"),
    (lambda r: r.update(value="high"), 3, "value", "wrong type"),
    (lambda r: r.update(value=True), 3, "value", "wrong type"),
    (lambda r: r.update(criterion="funny"), 3, "criterion", "not declared by study"),
    (lambda r: r.update(value=101), 3, "value", "above the scale"),
    (lambda r: r.update(scale="stars"), 3, "scale", "unknown value"),
    (lambda r: r.update(critrion="fun"), 3, "critrion", "unknown field"),
    (lambda r: r.update(turn_index=1.5), 3, "turn_index", "wrong type"),
])
def test_bad_rating_names_file_line_and_field(tmp_path, change, line, field, words):
    rating = dict(RATING)
    change(rating)
    path = write_lines(tmp_path / "bad.jsonl", [STUDY, CONVERSATION, rating])
    with pytest.raises(DataError) as error:
        read_jsonl([path])
    message = str(error.value)
    assert message.startswith(f"{path}:{line}:")
    assert f"field '{field}'" in message
    assert words in message


def test_bad_choice_and_bad_turn(tmp_path):
    path = write_lines(tmp_path / "c.jsonl", [dict(COMPARISON, choice="left")])
    with pytest.raises(DataError, match=r"c.jsonl:1: field 'choice': unknown value .*one of a, b, tie"):
        read_jsonl([path])
    broken = dict(CONVERSATION, turns=[{"speaker": "human"}])
    path = write_lines(tmp_path / "t.jsonl", [broken])
    with pytest.raises(DataError, match=r"t.jsonl:1: field 'turns': turn 0 lacks 'text'"):
        read_jsonl([path])


GOOD_TURN = {"speaker": "bot", "text": "fine", "time": 3, "meta": {"latency": 0.2}}


@pytest.mark.parametrize("turn, message", [
    ("hello", r"field 'turns': turn 1 is not an object"),
    ({"speaker": "bot", "text": 5}, r"field 'turns\[1\].text': turn 1 has a wrong type \(expected a string"),
    ({"speaker": "bot", "text": "x", "time": True}, r"field 'turns\[1\].time': .*expected a number"),
    ({"speaker": "bot", "text": "x", "time": "noon"}, r"field 'turns\[1\].time': .*expected a number"),
    ({"speaker": "bot", "text": "x", "meta": []}, r"field 'turns\[1\].meta': .*expected an object"),
    ({"speaker": "bot", "text": "x", "mood": "happy"}, r"field 'turns': turn 1 has unknown keys \['mood'\]"),
])
def test_each_kind_of_bad_turn_is_named_with_its_line(tmp_path, turn, message):
    good = dict(CONVERSATION, id="c0", turns=[{"speaker": "human", "text": "hi"}, GOOD_TURN])
    bad = dict(CONVERSATION, turns=[{"speaker": "human", "text": "hi"}, turn])
    path = write_lines(tmp_path / "t.jsonl", [good, bad])
    with pytest.raises(DataError, match=r"t.jsonl:2: " + message):
        read_jsonl([path])
    assert read_jsonl([write_lines(tmp_path / "ok.jsonl", [good])]).conversations.iloc[0]["turns"][1] == GOOD_TURN


def test_truncated_line_and_empty_file(tmp_path):
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(STUDY) + "\n" + json.dumps(RATING)[:25])
    with pytest.raises(DataError, match=r"cut.jsonl:2: not valid JSON"):
        read_jsonl([path])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataError, match=r"empty.jsonl: file holds no records"):
        read_jsonl([empty])


def test_unknown_type_and_future_version(tmp_path):
    with pytest.raises(DataError, match=r"x.jsonl:1: field 'type': unknown record type"):
        read_jsonl([write_lines(tmp_path / "x.jsonl", [{"type": "vote"}])])
    with pytest.raises(DataError, match=r"v.jsonl:1: field 'format_version': unsupported"):
        read_jsonl([write_lines(tmp_path / "v.jsonl", [dict(RATING, format_version="2.0")])])


def test_failed_write_leaves_no_file(tmp_path):
    target = tmp_path / "out.jsonl"

    def records():
        yield dict(RATING)
        raise RuntimeError("source failed midway")

    with pytest.raises(RuntimeError):
        write_jsonl(records(), target)
    assert list(tmp_path.iterdir()) == []


def test_encoding_error_names_its_line(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(json.dumps(STUDY).encode() + b"\n" + b'{"type": "rating", "worker_id": "J\xe9r\xf4me"}\n')
    with pytest.raises(DataError, match=r"latin.jsonl:2: not UTF-8 text"):
        read_jsonl([path])


def test_outputs_get_ordinary_permissions(tmp_path):
    import os

    path = tmp_path / "perm.jsonl"
    write_jsonl([RATING], path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
