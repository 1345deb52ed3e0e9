"""The columnar fast path (parlai_dialeval/data/columnar.py) against the detailed record-by-record path:
the same frames for varied canonical data, a cache that follows its source file, and on bad input the
same one-line error, whichever path reads the file."""
from __future__ import annotations

import json
import os
import time

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.data import columnar, read_jsonl, write_jsonl
from parlai_dialeval.data.dataset import assemble
from parlai_dialeval.errors import DataError

STUDY = {"type": "study", "name": "s", "description": "a study", "qc_models": ["qc"],
         "criteria": [{"name": "fun", "positive": True, "scale": "likert", "min": 1, "max": 5},
                      {"name": "robotic", "positive": False, "scale": "continuous", "min": 0, "max": 100.5}]}


def varied_records(offset: int = 0) -> list[dict]:
    """Every record type interleaved, with optional fields present in some records only, ints and
    floats in one column, nested turns (plain, and with time and meta) and meta dicts."""
    records = [STUDY]
    for i in range(offset, offset + 12):
        turns = [{"speaker": "human", "text": f"hi {i}"}, {"speaker": "bot", "text": "hello"}][: 2 - (i == 7) * 2]
        conversation = {"type": "conversation", "study": "s", "id": f"c{i}", "models": ["bot", "qc"][: 1 + i % 2],
                        "worker_id": f"w{i % 4}", "turns": turns, "task": "live_chat_da"}
        if i % 3 == 0:
            conversation.update(slot=i % 6, duration=12.5 + i, status="incomplete")
        records.append(conversation)
        records.append({"type": "rating", "study": "s", "conversation_id": f"c{i}", "worker_id": f"w{i % 4}",
                        "model": "bot", "criterion": "fun", "scale": "likert", "scale_min": 1, "scale_max": 5,
                        "value": 1 + i % 5, **({"turn_index": i % 2} if i % 2 else {})})
        records.append({"type": "rating", "study": "s", "conversation_id": f"c{i}", "worker_id": f"w{i % 4}",
                        "model": "bot", "criterion": "robotic", "scale": "continuous", "scale_min": 0,
                        "scale_max": 100.5, "value": [3, 47.25, 100][i % 3], "duration": 2.5})
        records.append({"type": "comparison", "study": "s", "item_id": f"i{i}", "worker_id": f"w{i % 4}",
                        "model_a": "bot", "model_b": "qc", "choice": ("a", "b", "tie")[i % 3], "question": "which?",
                        **({"automatic": True} if i % 4 == 0 else {}),
                        **({"onboarding": i % 2 == 0} if i % 5 == 0 else {})})
    return records


def nested_records() -> list[dict]:
    """Values the columns cannot hold exactly: turns with time and meta, meta and persona dicts,
    list contexts. The fast path re-reads them from their lines."""
    records = varied_records()
    records[1]["turns"][0].update(time=3, meta={"topic": "cats", "scores": [1, 2.5]})
    records[1]["turns"][1]["time"] = 4.5
    records[1]["meta"] = {"source": "hit 1", "n": 2}
    records[5]["personas"] = {"bot": ["i like cats"]}
    records[4]["context"] = [{"speaker": "human", "text": "hey"}]
    records[8]["context"] = [{"speaker": "bot", "text": "ho"}, {"speaker": "human", "text": "hm", "time": 2}]
    return records


def frames_equal(fast, detailed) -> None:
    for name in ("conversations", "ratings", "comparisons"):
        pd.testing.assert_frame_equal(getattr(fast, name), getattr(detailed, name))
    assert fast.studies == detailed.studies


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache folder, used for files of any size."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(columnar, "_CACHE_MIN_BYTES", 0)
    return tmp_path / "cache" / "parlai_dialeval" / "columnar"


@pytest.mark.parametrize("records", [varied_records, nested_records])
def test_both_paths_give_equal_frames(tmp_path, cache, records):
    path = tmp_path / "data.jsonl"
    write_jsonl(records(), path)
    assert columnar.read_file(path, str(path)) is not None  # the fast path took it, not a fallback
    detailed = read_jsonl([path], columnar=False)
    frames_equal(read_jsonl([path]), detailed)
    frames_equal(read_jsonl([path]), detailed)  # again, from the cache
    assert len(list(cache.glob("*.arrow"))) == 1
    # spot checks of what the detailed path keeps (so the comparison is not between two wrong frames)
    ratings = detailed.ratings.set_index(["conversation_id", "criterion"])
    assert ratings.loc[("c0", "fun"), "value"] == 1 and detailed.ratings["value"].dtype == "float64"
    assert detailed.conversations["models"][1] == ["bot", "qc"] and detailed.conversations["turns"][7] == []
    assert detailed.comparisons["automatic"].tolist()[:2] == [True, None]


@pytest.mark.parametrize("late_field", [False, True])
def test_many_blocks_equal_whether_or_not_later_blocks_bring_new_fields(tmp_path, cache, monkeypatch, late_field):
    """The threaded streaming reader takes its columns from the first block; a field first seen in a later
    block (here a comparison's ``context``, in the last of some 40 blocks of 4 KB) must still be read, by
    the whole-file reader it then falls back to."""
    monkeypatch.setattr(columnar, "_BLOCK", 1 << 12)
    records = [STUDY] + [r for offset in range(0, 240, 12) for r in varied_records(offset)[1:]]
    if late_field:
        assert records[-1]["type"] == "comparison"
        records[-1]["context"] = "what the bots answered"
    path = tmp_path / "data.jsonl"
    write_jsonl(records, path)
    assert path.stat().st_size > 40 * (1 << 12)
    whole_file_reads = []
    read_json = columnar.pa_json.read_json
    monkeypatch.setattr(columnar.pa_json, "read_json", lambda *a, **k: whole_file_reads.append(1) or read_json(*a, **k))
    assert columnar.read_file(path, str(path), use_cache=False) is not None  # the fast path, not the detailed one
    assert len(whole_file_reads) == late_field  # the streaming reader alone, unless a later block differs
    detailed = read_jsonl([path], columnar=False)
    frames_equal(read_jsonl([path]), detailed)
    contexts = detailed.comparisons["context"] if "context" in detailed.comparisons else pd.Series([], dtype=object)
    assert contexts.dropna().tolist() == (["what the bots answered"] if late_field else [])


def test_nested_values_are_kept_exactly(tmp_path, cache):
    path = tmp_path / "data.jsonl"
    write_jsonl(nested_records(), path)
    data = read_jsonl([path])
    first = data.conversations.iloc[0]
    assert first["turns"][0] == {"speaker": "human", "text": "hi 0", "time": 3,
                                 "meta": {"topic": "cats", "scores": [1, 2.5]}}
    assert type(first["turns"][0]["time"]) is int and first["meta"] == {"source": "hit 1", "n": 2}
    assert data.conversations["personas"][1] == {"bot": ["i like cats"]}
    assert data.comparisons["context"].tolist()[1][1] == {"speaker": "human", "text": "hm", "time": 2}


def test_several_files_equal_on_both_paths(tmp_path, cache):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(varied_records(), first)
    write_jsonl(varied_records(offset=100)[1:], second)
    frames_equal(read_jsonl([first, second]), read_jsonl([first, second], columnar=False))


def test_floats_read_to_the_same_double(tmp_path, cache):
    """pyarrow's number parsing must round every decimal as orjson does (correctly rounded)."""
    rng = np.random.default_rng(0)
    # below 2**53: larger doubles are whole numbers, which the fast path leaves to the detailed one
    durations = rng.normal(0, 1, 2000) * 10.0 ** rng.integers(-300, 12, 2000)
    records = [{"type": "rating", "conversation_id": f"c{i}", "worker_id": "w", "model": "m", "criterion": "fun",
                "scale": "continuous", "value": 0.5, "duration": float(d)} for i, d in enumerate(durations)]
    path = tmp_path / "data.jsonl"
    write_jsonl(records, path)
    with open(path, "a") as handle:  # more digits than a double holds, and the smallest doubles
        for i, text in enumerate(["0.1000000000000000055511151231257827", "2.2250738585072011e-308",
                                  "123456.78901234567890123", "4.9e-324"]):
            handle.write(f'{{"type": "rating", "format_version": "1.0", "conversation_id": "x{i}", "worker_id": "w", '
                         f'"model": "m", "criterion": "fun", "scale": "continuous", "value": 0.5, "duration": {text}}}\n')
    assert columnar.read_file(path, str(path)) is not None
    frames_equal(read_jsonl([path]), read_jsonl([path], columnar=False))


RATING = {"type": "rating", "format_version": "1.0", "conversation_id": "c", "worker_id": "w", "model": "m",
          "criterion": "fun", "scale": "continuous", "value": 1.0}


@pytest.mark.parametrize("values, between", [
    ([1.0, 3.0], ""),  # floats the columns would not tell from ints: the detailed path keeps 1.0
    ([1.0, float("nan")], ""),  # pyarrow reads NaN; JSON has none
    ([1.0, 2.5], "\n  \n"),  # blank lines: rows are no longer lines
], ids=["integral-floats", "nan", "blank-lines"])
def test_what_the_columns_cannot_hold_goes_to_the_detailed_path(tmp_path, cache, values, between):
    path = tmp_path / "data.jsonl"
    lines = [json.dumps(dict(RATING, conversation_id=f"c{i}", value=v)) for i, v in enumerate(values)]
    path.write_text(lines[0] + "\n" + between + lines[1] + "\n")
    assert columnar.read_file(path, str(path)) is None
    try:
        detailed = read_jsonl([path], columnar=False)
    except DataError as error:
        assert "NaN" in str(error)
        with pytest.raises(DataError) as fast:
            read_jsonl([path])
        assert str(fast.value) == str(error)
    else:
        frames_equal(read_jsonl([path]), detailed)
        assert detailed.ratings["value"].tolist() == values


def test_cache_follows_the_file(tmp_path, cache):
    path = tmp_path / "data.jsonl"
    records = varied_records()
    write_jsonl(records, path)
    assert read_jsonl([path]).ratings["worker_id"].iloc[0] == "w0"
    stat = path.stat()
    # an edit that keeps the size and the modification time: caught by the content check
    path.write_bytes(path.read_bytes().replace(b'"worker_id":"w0"', b'"worker_id":"w9"'))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    assert read_jsonl([path]).ratings["worker_id"].iloc[0] == "w9"
    write_jsonl(records[:-4], path)  # a shorter file: the last conversation and its records gone
    assert read_jsonl([path]).counts() == {"study": 1, "conversation": 11, "rating": 22, "comparison": 11}
    assert len(list(cache.glob("*.arrow"))) == 1  # replaced, not piled up
    next(cache.glob("*.arrow")).write_bytes(b"damaged")
    frames_equal(read_jsonl([path]), read_jsonl([path], columnar=False))


def test_entries_unused_for_a_month_are_pruned(tmp_path, cache):
    cache.mkdir(parents=True)
    old, recent = cache / ("0" * 32 + ".arrow"), cache / ("1" * 32 + ".arrow")
    for entry, days in ((old, 31), (recent, 29)):
        entry.write_bytes(b"an entry of a file analysed earlier")
        os.utime(entry, (time.time() - days * 86400,) * 2)
    path = tmp_path / "data.jsonl"
    write_jsonl(varied_records(), path)
    read_jsonl([path])
    assert not old.exists() and recent.exists() and len(list(cache.glob("*.arrow"))) == 2


def edit(records: list[dict], index: int, **changes) -> list[dict]:
    records = [dict(r) for r in records]
    records[index].update(changes)
    for key, value in changes.items():
        if value is None:
            del records[index][key]
    return records


BAD = {
    "missing-worker": lambda r: edit(r, 3, worker_id=None),
    "unknown-choice": lambda r: edit(r, 4, choice="both"),
    "self-comparison": lambda r: edit(r, 8, model_b="bot"),
    "above-scale": lambda r: edit(r, 6, value=6),
    "undeclared-criterion": lambda r: edit(r, 7, criterion="charm"),
    "unknown-field": lambda r: edit(r, 2, colour="red"),
    "empty-name": lambda r: edit(r, 3, model=" "),
    "string-value": lambda r: edit(r, 2, value="high"),
    "turn-without-text": lambda r: edit(r, 5, turns=[{"speaker": "human"}]),
    "duplicate-id": lambda r: edit(r, 9, id="c0"),
    "bad-status": lambda r: edit(r, 5, status="lost"),
    "wrong-version": lambda r: edit(r, 6, format_version="2.0"),
    "no-turns": lambda r: edit(r, 9, turns=None),
    "null-turn": lambda r: edit(r, 9, turns=[{"speaker": "human", "text": "hi"}, None]),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_record_same_message_on_both_paths(tmp_path, cache, kind):
    path = tmp_path / "bad.jsonl"
    write_jsonl(BAD[kind](varied_records()), path)
    with pytest.raises(DataError) as detailed:
        read_jsonl([path], columnar=False)
    with pytest.raises(DataError) as fast:
        read_jsonl([path])
    assert str(fast.value) == str(detailed.value)
    assert f"{path}:" in str(detailed.value)  # names the file and line
    parts = columnar.read_file(path, str(path))
    if parts is not None:  # the rules run on the fast path's own frames give the same message
        with pytest.raises(DataError) as own:
            assemble(*parts, True)
        assert str(own.value) == str(detailed.value)


def test_duplicate_across_files_same_message(tmp_path, cache):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(varied_records(), first)
    write_jsonl(varied_records(offset=11)[1:], second)  # c11 in both
    with pytest.raises(DataError) as detailed:
        read_jsonl([first, second], columnar=False)
    with pytest.raises(DataError) as fast:
        read_jsonl([first, second])
    assert str(fast.value) == str(detailed.value)
    assert "c11" in str(detailed.value) and f"{first}:" in str(detailed.value)


def test_unwritable_cache_only_costs_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(columnar, "_CACHE_MIN_BYTES", 0)
    path = tmp_path / "data.jsonl"
    write_jsonl(varied_records(), path)
    assert columnar.read_file(path, str(path)) is not None
    frames_equal(read_jsonl([path]), read_jsonl([path], columnar=False))


@pytest.mark.parametrize("field", ["model", "justification", "text"])
def test_bytes_that_are_not_utf8_are_named_on_both_paths(tmp_path, cache, field):
    # pyarrow's JSON reader keeps invalid UTF-8 in string columns; such a file used to load (a wrong
    # "valid") or crash later with a traceback, where the detailed path names the line
    path = tmp_path / "latin1.jsonl"
    write_jsonl(varied_records(), path)
    record = {"comparison": dict(varied_records()[4], item_id="latin", justification="caf\u00e9"),
              "rating": dict(varied_records()[2], conversation_id="latin", model="caf\u00e9"),
              "conversation": dict(varied_records()[1], id="latin", turns=[{"speaker": "human", "text": "caf\u00e9"}])}
    kind = {"model": "rating", "justification": "comparison", "text": "conversation"}[field]
    with open(path, "ab") as handle:
        line = json.dumps({"format_version": "1.0", **record[kind]}, ensure_ascii=False)
        handle.write(line.encode("latin-1") + b"\n")
    assert columnar.read_file(path, str(path)) is None
    with pytest.raises(DataError) as detailed:
        read_jsonl([path], columnar=False)
    with pytest.raises(DataError) as fast:
        read_jsonl([path])
    assert str(fast.value) == str(detailed.value)
    assert f"{path}:{len(varied_records()) + 1}: not UTF-8 text" in str(fast.value)
