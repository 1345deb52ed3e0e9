"""Format versions (issue 50 item 2, parlai_dialeval/data/versions.py): exports written by earlier releases'
own code (tests/fixtures/earlier_releases/, make_live_chat.py says how) are read as they were meant, and a
version this release does not know is refused in one line."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from parlai_dialeval.analysis import live_chat
from parlai_dialeval.data import FORMAT_VERSION, read_jsonl, write_jsonl
from parlai_dialeval.errors import DataError

EARLIER = Path(__file__).parent / "fixtures" / "earlier_releases"
# commit 61c2ab8: before the conversation field `submission` (f0ee1d4); d138b2d: with it, still stamped 1.0
BEFORE_SUBMISSION, WITH_SUBMISSION = EARLIER / "live_chat_61c2ab8.jsonl", EARLIER / "live_chat_d138b2d.jsonl"


def test_the_fixtures_are_what_those_releases_wrote():
    before = [json.loads(line) for line in BEFORE_SUBMISSION.read_text().splitlines()]
    leaver = [r for r in before if r["type"] == "conversation" and r["worker_id"] == "W3"]
    assert {r["format_version"] for r in before} == {"1.0"} and not any("submission" in r for r in before)
    assert {r["meta"]["agent_status"] for r in leaver} == {"disconnect"}
    assert sorted(r["status"] for r in leaver) == ["complete", "complete", "incomplete", "incomplete",
                                                   "incomplete", "incomplete"]


@pytest.mark.parametrize("columnar", [True, False])
def test_a_leaver_of_the_release_before_submission_is_read_as_one_who_did_not_submit(columnar):
    data = read_jsonl([BEFORE_SUBMISSION], columnar=columnar)
    submission = data.conversations.groupby("worker_id")["submission"].agg(set)
    assert submission.to_dict() == {"W1": {"submitted"}, "W2": {"submitted"}, "W3": {"disconnected"}}
    assert set(data.conversations["format_version"]) == {FORMAT_VERSION}  # in memory: the current meaning
    result = live_chat.analyze(data)
    # was: "3 workers submitted 3 assignments", W3 "failed quality control: no quality-control conversation rated"
    assert (result.summary["n_workers"], result.summary["n_assignments"]) == (2, 2)
    assert result.summary["assignments_not_submitted"] == {"disconnected": 1}
    outcomes = result.outcomes.set_index("worker_id")["outcome"]
    assert outcomes["W3"] == "did not submit: disconnected"
    assert set(result.workers["worker_id"]) == {"W1", "W2"}


def test_exports_before_and_after_the_field_analyse_alike():
    before, after = (live_chat.analyze(read_jsonl([path])) for path in (BEFORE_SUBMISSION, WITH_SUBMISSION))
    pd.testing.assert_frame_equal(before.system_scores, after.system_scores)
    pd.testing.assert_frame_equal(before.outcomes, after.outcomes)
    assert before.summary == after.summary


def test_a_current_record_is_read_as_written(tmp_path):
    # in 1.1 a conversation without `submission` was submitted, whatever note meta.agent_status keeps
    records = [json.loads(line) for line in BEFORE_SUBMISSION.read_text().splitlines()]
    current = [{k: v for k, v in r.items() if k != "format_version"} for r in records]
    path = tmp_path / "current.jsonl"
    write_jsonl(current, path)
    assert {json.loads(line)["format_version"] for line in path.read_text().splitlines()} == {FORMAT_VERSION}
    assert read_jsonl([path]).conversations["submission"].isna().all()


@pytest.mark.parametrize("version", ["1.7", "2.0", "0.9", "1"])
@pytest.mark.parametrize("columnar", [True, False])
def test_a_version_this_release_does_not_know_is_refused_in_one_line(tmp_path, version, columnar):
    lines = WITH_SUBMISSION.read_text().splitlines()
    lines[4] = lines[4].replace('"format_version":"1.0"', f'"format_version":"{version}"')
    path = tmp_path / "newer.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as error:
        read_jsonl([path], columnar=columnar)
    message = str(error.value)
    assert message.startswith(f"{path}:5: field 'format_version': unsupported format version (expected one of "
                              "1.0, 1.1") and message.endswith(f"got '{version}')")
    assert "\n" not in message
