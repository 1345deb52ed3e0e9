"""The canonical data model: round trips, and one clear error per kind of bad input."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from parlai_dialeval.data import FORMAT_VERSION, EvalData, from_records, read_jsonl, write_jsonl
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


def write_lines(path, records, version="1.0"):
    """JSON Lines as a canonical file holds them: every record stamped with the format version."""
    stamped = [r if version is None else {"format_version": version, **r} for r in records]
    path.write_text("".join(json.dumps(r) + "\n" for r in stamped))
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
    originals = [dict(r, format_version=FORMAT_VERSION) for r in RECORDS]  # the stamp of this release
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
    path.write_text(json.dumps(dict(STUDY, format_version="1.0")) + "\n" + json.dumps(RATING)[:25])
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
    path.write_bytes(json.dumps(dict(STUDY, format_version="1.0")).encode() + b"\n"
                     + b'{"type": "rating", "worker_id": "J\xe9r\xf4me"}\n')
    with pytest.raises(DataError, match=r"latin.jsonl:2: not UTF-8 text"):
        read_jsonl([path])


def test_outputs_are_their_owners_alone_whatever_the_umask(tmp_path):
    import os

    path = tmp_path / "new" / "perm.jsonl"
    previous = os.umask(0o022)  # issue 52 item 5: 0644 outputs let anyone on the machine read worker ids
    try:
        write_jsonl([RATING], path)
    finally:
        os.umask(previous)
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)


# ----------------------------------------------------------------------------- issue 18 items 2-4, 10, 13
# Each rule is checked through both ways records enter: a canonical file (read_jsonl) and records built
# in memory by an importer or an export (from_records, with the importer's provenance).

def _load_file(tmp_path, records):
    path = write_lines(tmp_path / "d.jsonl", records)
    return lambda: read_jsonl([path]), f"{path}:{len(records)}"


def _load_records(tmp_path, records):
    source = str(tmp_path / "src.csv")
    placed = [dict(r, _file=source, _line=f"row {i + 2}") for i, r in enumerate(records)]
    return lambda: from_records(placed), f"{source}, row {len(records) + 1}"


LOADERS = pytest.mark.parametrize("loader", [_load_file, _load_records], ids=["file", "records"])


@LOADERS
def test_comparison_of_a_model_with_itself_is_refused(tmp_path, loader):
    load, where = loader(tmp_path, [COMPARISON, dict(COMPARISON, worker_id="w3", model_b="x")])
    with pytest.raises(DataError) as error:
        load()
    assert str(error.value).startswith(f"{where}: field 'model_b': model_a and model_b are the same")


@LOADERS
def test_repeated_conversation_id_names_both_places(tmp_path, loader):
    other = dict(CONVERSATION, worker_id="w2")
    load, where = loader(tmp_path, [STUDY, CONVERSATION, RATING, other])
    with pytest.raises(DataError) as error:
        load()
    message = str(error.value)
    first = where.replace(":4", ":2").replace("row 5", "row 3")
    assert message.startswith(f"{where}: field 'id': conversation id 'c1' given twice (first at {first})")


@LOADERS
def test_repeated_comparison_names_both_places(tmp_path, loader):
    again = dict(COMPARISON, choice="a")  # the same worker's answer to the same item, turn and question
    load, where = loader(tmp_path, [COMPARISON, dict(COMPARISON, worker_id="w9"), again])
    with pytest.raises(DataError) as error:
        load()
    first = where.replace(":3", ":1").replace("row 4", "row 2")
    assert str(error.value).startswith(f"{where}: comparison item_id='i1', worker_id='w2', turn_index=2, "
                                       f"model_a='x', model_b='y' given twice (first at {first})")


def test_repeats_that_are_not_the_same_work_are_kept(tmp_path):
    # A worker may see an item again in another assignment (ChatEval's real data does), and may retry
    # onboarding items; a tie without a worker is one per item.
    records = [COMPARISON, dict(COMPARISON, assignment_id="other"), dict(COMPARISON, turn_index=3),
               dict(COMPARISON, question="Which is more fun?"),
               dict(COMPARISON, onboarding=True), dict(COMPARISON, onboarding=True)]
    assert len(read_jsonl([write_lines(tmp_path / "ok.jsonl", records)]).comparisons) == 6


def test_repeats_across_files_name_both_files(tmp_path):
    a = write_lines(tmp_path / "a.jsonl", [STUDY, CONVERSATION])
    b = write_lines(tmp_path / "b.jsonl", [dict(CONVERSATION, worker_id="w7", task="other")])
    with pytest.raises(DataError, match=rf"^{b}:1: field 'id': conversation id 'c1' given twice \(first at {a}:2\)"):
        read_jsonl([a, b])


def test_the_same_file_twice_is_refused(tmp_path):
    from parlai_dialeval.importers import load

    path = write_lines(tmp_path / "a.jsonl", [STUDY, RATING])
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    for reader in (read_jsonl, lambda paths: load(paths, log=None)):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(DataError, match=rf"^{tmp_path}/sub/../a.jsonl: given twice \(also as {path}\)"):
            reader([path, tmp_path / "sub" / ".." / "a.jsonl"])
        with pytest.raises(DataError, match=rf"^{copy}: identical to {path} \(the same data given twice\)"):
            reader([path, copy])


def test_repeats_across_an_import_and_a_canonical_file(tmp_path):
    """FED imported directly and the same FED data converted before: every conversation twice."""
    from parlai_dialeval.importers import load

    fed = tmp_path / "fed_data.json"
    fed.write_text(json.dumps([{"context": "User: hi\nSystem: hello", "response": "System: nice", "system": "Meena",
                                "annotations": {"Interesting": [1, 2]}}]))
    converted = tmp_path / "fed.jsonl"
    load([fed], log=None).save(converted)
    with pytest.raises(DataError, match=r"conversation id 'fed-turn-0' given twice \(first at .*\)"):
        load([converted, fed], log=None)


NO_RANGE = {k: v for k, v in RATING.items() if k not in ("scale_min", "scale_max", "study")}


@pytest.mark.parametrize("rating, field, words", [
    (dict(NO_RANGE, scale="likert", value=1e308), "value",
     r"value is above the scale's scale_max \(expected a likert value within the assumed range \[0, 10\] "
     r"\(scale_max not recorded"),
    (dict(NO_RANGE, scale="likert", value=-1), "value",
     r"value is below the scale's scale_min .*assumed range \[0, 10\]"),
    (dict(NO_RANGE, scale="binary", value=0.5), "value", r"a binary value must be one end of the scale"),
    (dict(NO_RANGE, scale="binary", value=2), "value",
     r"value is above the scale's scale_max .*assumed range \[0, 1\]"),
    (dict(NO_RANGE, scale="binary", scale_min=0, scale_max=1, value=0.5), "value", r"a binary value must be one end"),
    (dict(NO_RANGE, scale="best_worst", value=0.5), "value", r"a best_worst value must be a whole number"),
    (dict(NO_RANGE, scale="count", value=-2), "value", r"value is below the scale's scale_min"),
    (dict(NO_RANGE, scale="magnitude", value=50), "reference_value",
     r"a magnitude rating needs its reference_value"),
    (dict(NO_RANGE, scale="magnitude", value=50, reference_value=-5), "reference_value",
     r"reference_value is negative"),
    (dict(NO_RANGE, scale="magnitude", value=-3, reference_value=100), "value",
     r"value is below the scale's scale_min"),
    (dict(RATING, scale_max=float("inf")), "scale_max", r"scale_max is not a finite number"),
    (dict(RATING, value=float("-inf")), "value", r"value is not a finite number"),
    (dict(RATING, value=float("nan")), "value", r"missing required field"),
    (dict(RATING, scale_min=100, scale_max=0, value=50), "scale_min", r"scale_min is above scale_max"),
    (dict(RATING, worker_id=" "), "worker_id", r"empty name"),
    (dict(RATING, model=""), "model", r"empty name"),
])
def test_rating_values_valid_on_their_scale(tmp_path, rating, field, words):
    load, where = _load_records(tmp_path, [STUDY, CONVERSATION, rating])
    with pytest.raises(DataError, match=rf"^{where}: field '{field}': {words}"):
        load()


def test_valid_values_without_a_range_load(tmp_path):
    ok = [dict(NO_RANGE, scale="likert", value=7), dict(NO_RANGE, scale="binary", value=1, criterion="x"),
          dict(NO_RANGE, scale="magnitude", value=0, reference_value=100, criterion="m"),
          dict(NO_RANGE, scale="best_worst", value=-1, criterion="b"), dict(NO_RANGE, scale="continuous",
                                                                              value=-12.5, criterion="c")]
    assert list(from_records(ok).ratings["value"]) == [7, 1, 0, -1, -12.5]


def test_conversation_needs_named_models(tmp_path):
    load, where = _load_records(tmp_path, [dict(CONVERSATION, models=["bot", ""])])
    with pytest.raises(DataError, match=rf"^{where}: field 'models': models must name at least one model"):
        load()


def test_canonical_file_without_format_version_names_the_field(tmp_path):
    from parlai_dialeval.importers import detect_format, load

    path = write_lines(tmp_path / "old.jsonl", [STUDY, RATING], version=None)
    assert detect_format(path) == "canonical"
    with pytest.raises(DataError, match=rf"^{path}:1: field 'format_version': missing required field"):
        load([path], log=None)


def test_nan_written_by_python_json_names_its_field(tmp_path):
    path = tmp_path / "nan.jsonl"
    path.write_text(json.dumps(dict(STUDY, format_version="1.0")) + "\n"
                    + json.dumps(dict(RATING, format_version="1.0", value=float("nan"))) + "\n")
    with pytest.raises(DataError, match=rf"^{path}:2: field 'value': NaN or Infinity is not a JSON number"):
        read_jsonl([path])
