"""dialeval publish keeps only a coarse form of how the answers were made, and none of the answers to check items
(publish/coarse.py; docs/publishing.md, "How answers were made"): the privacy of the recording of issue 51."""
from __future__ import annotations

from parlai_dialeval.data import write_jsonl
from parlai_dialeval.importers import load
from parlai_dialeval.publish.coarse import pasted_share
from parlai_dialeval.scripts.publish import run

from test_publish import _opt

TEXT_RECORD = {"typed": 9, "pasted": 31, "dropped": 0, "deleted": 2, "pastes": [31], "drops": [], "keys": 9,
               "compose_seconds": 4.2, "key_interval_ms": 173.0, "pauses": 1, "longest_pause": 2.5, "away": 1,
               "away_seconds": 12.5}
SCREEN_RECORD = {"seconds": 23.4, "reread": True, "changes": 1, "away": 2, "away_seconds": 40.1}
# values that must not leave the machine: each is in the raw records only once, as a number JSON would write
DETAIL = ("compose_seconds", "key_interval_ms", "longest_pause", "away_seconds", "reread", "173.0", "23.4", "40.1",
          "12.5", "pastes", "attention")


def _study(tmp_path):
    records = [
        {"type": "study", "name": "s", "criteria": [{"name": "engaging", "positive": True, "scale": "likert",
                                                      "min": 1, "max": 5}]},
        {"type": "conversation", "study": "s", "id": "c1", "models": ["bot"], "worker_id": "W1", "task": "pw_turn",
         "turns": [{"speaker": "human", "text": "I like long walks by the sea, do you", "provenance": TEXT_RECORD},
                   {"speaker": "bot", "text": "Yes, very much."}],
         "feedback": "fine", "provenance": {"feedback": {**TEXT_RECORD, "pasted": 0, "pastes": []}}},
        {"type": "rating", "study": "s", "conversation_id": "c1", "worker_id": "W1", "model": "bot",
         "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 4,
         "provenance": SCREEN_RECORD},
        {"type": "rating", "study": "s", "conversation_id": "c1", "worker_id": "W1", "model": "bot",
         "criterion": "attention", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 2,
         "check": {"kind": "attention", "passed": False, "expected": [3]}},
        {"type": "comparison", "study": "s", "item_id": "i1", "worker_id": "W1", "model_a": "bot", "model_b": "other",
         "choice": "a", "justification": "more natural reply", "provenance": {**SCREEN_RECORD, "justification": {
             **TEXT_RECORD, "typed": 40, "pasted": 0, "pastes": []}}},
        {"type": "comparison", "study": "s", "item_id": "i2", "worker_id": "W1", "model_a": "bot", "model_b": "gold_bad",
         "choice": "b", "check": {"kind": "gold", "passed": False, "expected": "a"}},
    ]
    (tmp_path / "raw").mkdir()
    path = tmp_path / "raw" / "study.jsonl"  # publish never writes beside the raw data
    write_jsonl(records, path)
    return path


def test_published_folder_keeps_only_the_rounded_pasted_share_and_no_check_answers(tmp_path):
    path = _study(tmp_path)
    raw = path.read_text()
    assert all(value in raw for value in DETAIL)  # the raw export holds them all
    published = run(_opt([path], tmp_path / "out", key_file=str(tmp_path / "keys" / "k.key"), pairs_workers="all"), log=None)
    everything = b"".join(p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file())
    for value in DETAIL:
        assert value.encode() not in everything, value
    back = load([tmp_path / "out"], log=None)
    turns = back.conversations.iloc[0]["turns"]
    assert turns[0]["provenance"] == {"pasted_share": 0.75}  # 31 of 40 characters pasted: 0.775, to a quarter
    assert "provenance" not in turns[1]
    assert back.conversations.iloc[0]["provenance"] == {"feedback": {"pasted_share": 0.0}}
    assert list(back.ratings["criterion"]) == ["engaging"] and back.ratings["provenance"].isna().all()
    assert list(back.comparisons["item_id"]) == ["i1"]
    assert back.comparisons.iloc[0]["provenance"] == {"justification": {"pasted_share": 0.0}}
    assert "check" not in back.comparisons.columns or back.comparisons["check"].isna().all()
    assert published.counts["ratings"] == 1 and published.counts["comparisons"] == 1


def test_pasted_share_is_rounded_to_a_quarter_and_absent_without_characters():
    assert pasted_share({"typed": 10, "pasted": 0}) == {"pasted_share": 0.0}
    assert pasted_share({"typed": 1, "pasted": 9, "dropped": 0}) == {"pasted_share": 1.0}
    assert pasted_share({"typed": 5, "pasted": 2, "dropped": 3}) == {"pasted_share": 0.5}
    assert pasted_share({"typed": 0, "pasted": 0}) is None and pasted_share({"seconds": 3.0}) is None
    assert pasted_share(None) is None
