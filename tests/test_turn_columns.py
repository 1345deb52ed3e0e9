"""Turns kept in columns (parlai_dialeval/data/turns.py): the columnar loader hands plain turns over as
Arrow columns, ``EvalData.conversations`` builds the same dicts the record-by-record loader does on
first reading, ``EvalData.turns()`` gives the same long table from either, and the live-chat analysis
never builds the dicts."""
from __future__ import annotations

import json

import numpy as np
import orjson
import pandas as pd
import pytest

from parlai_dialeval.analysis import live_chat
from parlai_dialeval.analysis.live_chat import descriptive
from parlai_dialeval.data import columnar, read_jsonl, write_jsonl
from parlai_dialeval.data.turns import TurnColumns
from parlai_dialeval.errors import DataError
from parlai_dialeval.scripts.command_line import load_data
from test_columnar_load import varied_records


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(columnar, "_CACHE_MIN_BYTES", 0)


def _kept_in_columns(path) -> bool:
    parts = columnar.read_file(path, str(path))
    return parts is not None and parts[2] is not None and "turns" not in parts[1]["conversation"].columns


def _same_data(path, paths=None):
    """The columnar load against the detailed one: turn tables (before and after the dicts exist),
    conversation fields and frames."""
    paths = paths or [path]
    fast, detailed = read_jsonl(paths), read_jsonl(paths, columnar=False)
    for speaker in (None, "human"):
        pd.testing.assert_frame_equal(fast.turns(speaker), detailed.turns(speaker))
    pd.testing.assert_frame_equal(fast.conversation_fields(), detailed.conversations.drop(columns="turns"))
    pd.testing.assert_frame_equal(fast.conversations, detailed.conversations)
    pd.testing.assert_frame_equal(fast.turns(), detailed.turns())  # the dicts built: the same table
    return fast, detailed


def test_plain_turns_stay_in_columns_and_equal_the_dicts(tmp_path):
    path = tmp_path / "data.jsonl"
    write_jsonl(varied_records(), path)
    assert _kept_in_columns(path)
    fast, detailed = _same_data(path)
    table = detailed.turns()
    # checked against the records themselves, not only against the other loader
    conversations = [r for r in varied_records() if r["type"] == "conversation"]
    assert len(table) == sum(len(c["turns"]) for c in conversations) == 22
    assert table.loc[2, ["conversation_id", "turn_index", "speaker", "text"]].tolist() == ["c1", 0, "human", "hi 1"]
    assert fast.turns("human")["text"].tolist() == [f"hi {i}" for i in range(12) if i != 7]
    assert fast.turns("nobody").empty and list(fast.turns("nobody").columns) == list(table.columns)


def test_many_chunks(tmp_path, monkeypatch):
    """A large file is parsed in blocks, so the turns arrive in many chunks (here about one per record)."""
    monkeypatch.setattr(columnar, "_BLOCK", 300)
    path = tmp_path / "data.jsonl"
    write_jsonl(varied_records(), path)
    parts = columnar.read_file(path, str(path), use_cache=False)
    assert parts[2].text.num_chunks > 10
    for _ in range(2):  # parsed, then from the cache
        _same_data(path)


def test_turns_table_codes_are_conversation_positions(tmp_path):
    """conversation_id is categorical over the conversations' ids: its codes are their positions."""
    path = tmp_path / "data.jsonl"
    write_jsonl(varied_records(), path)
    data = read_jsonl([path])
    ids = data.turns()["conversation_id"]
    assert ids.cat.categories.tolist() == data.conversation_fields()["id"].tolist()
    assert (data.conversation_fields()["id"].to_numpy()[ids.cat.codes.to_numpy()] == ids.astype(str).to_numpy()).all()


def test_key_order_of_the_file_is_kept(tmp_path):
    """Turns written text first come back text first, and are saved again as the detailed loader's are."""
    records = varied_records()
    for record in records:
        if record["type"] == "conversation":
            record["turns"] = [{"text": t["text"], "speaker": t["speaker"]} for t in record["turns"]]
    path = tmp_path / "data.jsonl"
    write_jsonl(records, path)
    assert _kept_in_columns(path)
    fast, detailed = _same_data(path)
    assert list(fast.conversations["turns"][0][0]) == ["text", "speaker"]
    saved, saved_detailed = tmp_path / "fast.jsonl", tmp_path / "detailed.jsonl"
    fast.save(saved)
    detailed.save(saved_detailed)
    assert saved.read_bytes() == saved_detailed.read_bytes()
    assert b'"turns":[{"text":"hi 0","speaker":"human"}' in saved.read_bytes()


def test_several_files_join_their_columns(tmp_path):
    first, second, timed = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    write_jsonl(varied_records(), first)
    second_records = varied_records(offset=100)[1:]
    for record in second_records:  # other speakers, so the speaker dictionaries must be unified
        if record["type"] == "conversation":
            record["turns"] = [dict(t, speaker="moderator") for t in record["turns"]]
    write_jsonl(second_records, second)
    timed_records = varied_records(offset=200)[1:]
    timed_records[0]["turns"][0]["time"] = 2.5  # not plain: this file's turns are read as dicts
    write_jsonl(timed_records, timed)
    fast, _ = _same_data(first, [first, second])
    assert set(fast.turns()["speaker"]) == {"human", "bot", "moderator"}
    _same_data(first, [first, second, timed])  # columns and dicts mixed: the dicts for all files


def test_files_with_different_key_orders(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(varied_records(), first)
    records = varied_records(offset=100)[1:]
    for record in records:
        if record["type"] == "conversation":
            record["turns"] = [{"text": t["text"], "speaker": t["speaker"]} for t in record["turns"]]
    write_jsonl(records, second)
    fast, _ = _same_data(first, [first, second])
    assert list(fast.conversations["turns"][0][0]) == ["speaker", "text"]
    assert list(fast.conversations["turns"].iloc[-1][0]) == ["text", "speaker"]


def test_a_conversation_without_turns_is_named_as_before(tmp_path):
    """A conversation that lacks its turns (missing or null) keeps the detailed loader's message."""
    for change in ({"turns": None}, {}):
        records = varied_records()
        conversation = next(r for r in records if r["type"] == "conversation" and r["id"] == "c3")
        conversation.pop("turns")
        conversation.update(change)
        path = tmp_path / "data.jsonl"
        write_jsonl(records, path)
        with pytest.raises(DataError) as detailed:
            read_jsonl([path], columnar=False)
        with pytest.raises(DataError) as fast:
            read_jsonl([path])
        assert str(fast.value) == str(detailed.value)
        assert "missing required field" in str(fast.value) and "turns" in str(fast.value)


def test_concat_and_assignment(tmp_path):
    path = tmp_path / "data.jsonl"
    write_jsonl(varied_records(), path)
    fast, detailed = read_jsonl([path]), read_jsonl([path], columnar=False)
    pd.testing.assert_frame_equal(fast.concat(fast).turns(), detailed.concat(detailed).turns())
    assert fast.counts() == detailed.counts()
    fast.conversations = detailed.conversations.iloc[:2]
    assert fast.turns()["conversation_id"].astype(str).unique().tolist() == ["c0", "c1"]


def test_live_chat_analysis_never_builds_turn_dicts(tmp_path, monkeypatch):
    path = tmp_path / "data.jsonl"
    write_jsonl(_live_chat_records(), path)
    expected = live_chat.analyze(read_jsonl([path], columnar=False))

    def refuse(self):
        raise AssertionError("the analysis built one dict per turn")

    monkeypatch.setattr(TurnColumns, "lists", refuse)
    result = live_chat.analyze(read_jsonl([path]))
    pd.testing.assert_frame_equal(result.inputs, expected.inputs)
    pd.testing.assert_frame_equal(result.system_scores, expected.system_scores)
    # and as the commands load it: setting aside unverified work and check answers builds no turn either (asking
    # for the ratings built every conversation's turns, and doubled the warm load of a 616 MB study)
    from parlai_dialeval.scripts.command_line import load_data

    loaded = load_data({"data": [str(path)]}, log=None)
    loaded.without_checks()
    pd.testing.assert_frame_equal(live_chat.analyze(loaded).system_scores, expected.system_scores)
    # the worker's inputs: 3 per conversation, "how are you" and the like: 3 words, 11-13 characters
    assert result.inputs.set_index("workers").loc["all", "median_words_per_input"] == 3
    assert result.inputs.set_index("workers").loc["all", "median_words_per_conversation"] == 9


def _live_chat_records() -> list[dict]:
    criteria = [{"name": "fun", "positive": True, "min": 0, "max": 100}]
    records = [{"type": "study", "name": "s", "criteria": criteria, "qc_models": ["qc"]}]
    for w in range(6):
        for slot, model in enumerate(["a", "b", "qc"]):
            cid = f"w{w}_{slot}"
            turns = [t for i in range(3) for t in ({"speaker": "human", "text": f"how are you{'?' * i}"},
                                                   {"speaker": model, "text": "fine thanks"})]
            records.append({"type": "conversation", "study": "s", "id": cid, "models": [model], "worker_id": f"w{w}",
                            "assignment_id": f"h{w}", "turns": turns})
            value = {"a": 80, "b": 60, "qc": 10}[model] + w + slot
            records.append({"type": "rating", "study": "s", "conversation_id": cid, "worker_id": f"w{w}", "model": model,
                            "criterion": "fun", "scale": "continuous", "scale_min": 0, "scale_max": 100,
                            "value": value, "assignment_id": f"h{w}"})
    return records


def test_real_study_through_both_loaders(shared_data, tmp_path):
    """Ji et al.'s free run 1 (imported from the released MTurk CSV, saved as canonical JSON Lines)."""
    imported = load_data({"data": [str(shared_data / "ji2022" / "raw_mturk_csv" / "FreeTopicRound1")]}, log=None)
    path = tmp_path / "run1.jsonl"
    imported.save(path)
    assert _kept_in_columns(path)
    fast, detailed = _same_data(path)
    assert len(fast.turns()) == sum(map(len, imported.conversations["turns"])) > 10_000
    # the dicts equal the importer's own, field by field and in key order
    assert [orjson.dumps(t) for t in fast.conversations["turns"]] == \
        [orjson.dumps(t) for t in imported.conversations["turns"]]
    texts = fast.turns("human")["text"]
    assert texts.tolist() == [t["text"] for turns in imported.conversations["turns"] for t in turns
                              if t["speaker"] == "human"]
    assert json.loads(path.read_text().splitlines()[1])["type"] == "conversation"


def test_word_counts_equal_str_split():
    """Table 12's words are Python's whitespace tokens; the byte-level count must agree on every kind of
    space (ASCII ones, the file separators str.split also takes, and Unicode ones), on empty texts and on
    texts split over several slices."""
    rng = np.random.default_rng(1)
    alphabet = [" ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1f", "a", "b", "é", "\u3000", "\xa0", "\x85",
                "z", "\u200b", "x"]
    texts = ["".join(rng.choice(alphabet, rng.integers(0, 12))) for _ in range(5000)] + ["", " ", "a", " a b "]
    series = pd.Series(texts, dtype="str")
    expected = np.array([len(t.split()) for t in texts])
    assert (descriptive.word_counts(series) == expected).all()
    assert (descriptive.word_counts(series.iloc[7:4000:3]) == expected[7:4000:3]).all()  # a view into the buffer
    assert descriptive.word_counts(series.iloc[:0]).tolist() == []
    assert descriptive.word_counts(pd.Series(["a b\x1cc", "d\u3000e f"], dtype="str")).tolist() == [3, 3]


def test_word_counts_over_several_slices(monkeypatch):
    monkeypatch.setattr(descriptive, "_SLICE", 7)
    texts = [" ".join(["w"] * (i % 5)) + " " * (i % 3) for i in range(50)]
    assert descriptive.word_counts(pd.Series(texts, dtype="str")).tolist() == [len(t.split()) for t in texts]
