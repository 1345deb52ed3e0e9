"""Importers of Ji et al. (2022): raw MTurk batch CSVs (ji2022-mturk) and released dialogue JSON
(ji2022-dialogues). Counts are those of the released data (../shared/data/README.md, section ji2022)."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from crowdsourcing.zygote import dialeval_run
from parlai_dialeval.errors import DataError
from parlai_dialeval.importers import detect_format, import_paths, load
from parlai_dialeval.importers.formats import ji2022

RUN1 = "ji2022/raw_mturk_csv/FreeTopicRound1"
RUN2 = "ji2022/raw_mturk_csv/FreeTopicRound2"
RELEASE = "ji2022/dialogue_data"
STATEMENTS = ["interesting", "fun", "consistent", "fluent", "topic", "robotic", "repetitive"]


@pytest.fixture(scope="module")
def run1(shared_data):
    return import_paths([shared_data / RUN1], ji2022.MTURK)


def test_free_run1_reads_305_assignments_from_249_workers(run1):
    assert (run1.read, run1.kept, len(run1.skipped)) == (305, 304, 1)
    assert len(run1.workers_read) == 249
    assert len(run1.workers_kept) == 248  # the empty submission's worker did nothing else
    where, why = run1.skipped[0]
    assert "row 64" in where and "3GLB5JMZFYRCT6S4UDQ68C21I00GD2" in where and "AALP4034U041N" in where
    assert why.startswith("empty submission")
    summary = run1.summary()
    assert summary.startswith("ji2022-mturk: read 305, kept 304, skipped 1")
    assert "from 249 workers" in summary and "empty submission" in summary
    assert (run1.conversations, run1.ratings) == (304 * 6, 304 * 6 * 7)


def test_study_record_declares_statements_qc_bot_and_empty_submissions(run1):
    studies = [r for r in run1.records if r["type"] == "study"]
    assert len(studies) == 1
    study = studies[0]
    assert study["name"] == "ji2022-FreeTopicRound1"
    assert [c["name"] for c in study["criteria"]] == STATEMENTS
    assert {c["name"] for c in study["criteria"] if not c["positive"]} == {"robotic", "repetitive"}
    assert all(c["scale"] == "continuous" and (c["min"], c["max"]) == (0, 100) and c["question"]
               for c in study["criteria"])
    assert study["qc_models"] == ["qc"]
    empty = study["meta"]["empty_submissions"]
    assert [e["worker_id"] for e in empty] == ["AALP4034U041N"]
    assert sorted(empty[0]["models"]) == sorted(["lan_model", "seq2seq", "polyencoder", "kvmemnn", "qc", "biencoder"])
    assert study["meta"]["model_labels"]["biencoder_p"] == "Ap"


def test_conversations_and_raw_ratings_follow_the_canonical_mapping(run1):
    conversations = {r["id"]: r for r in run1.records if r["type"] == "conversation"}
    ratings = [r for r in run1.records if r["type"] == "rating"]
    first = conversations["3JBT3HLQF9YL9KQZPE5QTDZW7A1ZPU_0"]  # row 2, slot 0: kvmemnn with seed 320
    assert first["models"] == ["kvmemnn_p"] and first["meta"]["seed"] == 320 and first["meta"]["persona"]
    assert (first["task"], first["slot"], first["worker_id"], first["hit_id"]) == (
        "live_chat_da", 0, "A2ZAL0HAIBS9QH", "3XABXM4AJ11P2GSXQZF0SEWG05K8QI")
    assert first["turns"][0] == {"speaker": "human", "text": "I hope the coronavirus pandemic ends soon."}
    assert first["turns"][1]["speaker"] == "kvmemnn_p" and len(first["turns"]) == 20
    assert (first["topic"], first["topic_attitude"], first["assignment_duration"]) == ("coronavirus", "dislike", 2672)
    assert first["meta"]["topic_changes"][0] == {"round": 2, "change": "bot change", "attitude": "dislike"}
    # score0 of that row is "100#37#47#10#100#92#16#": robotic, interesting, fun, consistent, fluent,
    # repetitive, topic, stored raw (not reversed)
    values = {r["criterion"]: r["value"] for r in ratings if r["conversation_id"] == first["id"]}
    assert values == {"robotic": 100, "interesting": 37, "fun": 47, "consistent": 10, "fluent": 100,
                      "repetitive": 92, "topic": 16}
    qc = conversations["3JBT3HLQF9YL9KQZPE5QTDZW7A1ZPU_1"]
    assert qc["models"] == ["qc"] and qc["turns"][1]["speaker"] == "qc"
    models = {c["models"][0] for c in conversations.values()}
    assert models == {"qc"} | {m + s for m in ji2022.MODELS for s in ("", "_p")}
    # every conversation has >= 10 worker inputs, as the task required
    assert min(sum(t["speaker"] == "human" for t in c["turns"]) for c in conversations.values()) >= 10


def test_folder_or_csv_file_give_the_same_records(shared_data, run1):
    csv_file = next((shared_data / RUN1).glob("Combined_Batches_*.csv"))
    assert import_paths([csv_file], ji2022.MTURK).records == run1.records


def test_formats_are_detected(shared_data):
    folder = shared_data / RUN1
    assert detect_format(folder) == ji2022.MTURK
    assert detect_format(next(folder.glob("*.csv"))) == ji2022.MTURK
    assert detect_format(shared_data / RELEASE) == ji2022.DIALOGUES
    assert detect_format(shared_data / RELEASE / "pass_free(run1).json") == ji2022.DIALOGUES


def test_free_run2_keeps_rejected_assignments_and_skips_two_empty_submissions(shared_data):
    report = import_paths([shared_data / RUN2], ji2022.MTURK)
    assert (report.read, report.kept, len(report.skipped)) == (296, 294, 2)
    assert len(report.workers_read) == 248
    assert all("only feedback" in why for _, why in report.skipped)
    statuses = {r["meta"]["assignment_status"] for r in report.records if r["type"] == "conversation"}
    assert statuses == {"Submitted", "Approved", "Rejected"}


def test_released_dialogues_match_the_mturk_csv(shared_data, run1):
    """The release reverses robotic and repetitive (100 - x); the importer undoes it, so both importers
    give the same raw ratings, conversations and model names."""
    files = [shared_data / RELEASE / f"{o}_free(run1).json" for o in ("pass", "fail")]
    release = import_paths(files, ji2022.DIALOGUES)
    assert (release.read, release.kept, len(release.skipped)) == (304, 304, 0)
    assert release.studies == ["ji2022-FreeTopicRound1"]

    def ratings(report):
        return {(r["conversation_id"], r["criterion"]): (r["value"], r["model"], r["worker_id"])
                for r in report.records if r["type"] == "rating"}

    assert ratings(release) == ratings(run1)
    ours = {r["id"]: r for r in run1.records if r["type"] == "conversation"}
    for conversation in (r for r in release.records if r["type"] == "conversation"):
        other = ours[conversation["id"]]
        for key in ("models", "turns", "topic", "topic_attitude", "worker_id", "hit_id", "slot"):
            assert conversation.get(key) == other.get(key), (conversation["id"], key)
        assert conversation["meta"]["topic_changes"] == other["meta"]["topic_changes"]
        # the release writes "None" for no feedback, so a worker who typed "None" is read as no feedback
        if other.get("feedback") != "None":
            assert conversation.get("feedback") == other.get("feedback")
        assert conversation["meta"]["released_qc"] in ("pass", "fail")


def test_load_validates_the_import(shared_data):
    data = load([shared_data / RUN1], log=None)
    assert data.counts() == {"study": 1, "conversation": 1824, "rating": 12768, "comparison": 0}


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


GOOD_ANSWER = json.dumps([{
    **{f"task{i}": m for i, m in enumerate(["biencoder", "qc", "kvmemnn", "seq2seq", "lan_model", "polyencoder"])},
    **{f"seed{i}": str(100 * (i + 1)) for i in range(6)},
    **{f"dialogue{i}": "u: hi###b: hello###" for i in range(6)},
    **{f"score{i}": "10#20#30#40#50#60#70#" for i in range(6)},
    **{f"topic{i}": "#0@dogs" for i in range(6)},
    **{f"topic_opinion{i}": "#0@like" for i in range(6)},
}])
HEADER = ["HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "WorkTimeInSeconds",
          *[f"Input.u{i}" for i in range(6)], "Answer.taskAnswers"]


def _row(answer=GOOD_ANSWER, worker="W1", assignment="A1"):
    return ["H1", assignment, worker, "Submitted", "600",
            "biencoder", "qc", "kvmemnn", "seq2seq", "lan_model", "polyencoder", answer]


def test_a_csv_with_a_missing_column_names_file_row_and_column(tmp_path):
    header = [h for h in HEADER if h != "WorkerId"]
    path = _write_csv(tmp_path / "Combined_Batches_bad.csv", header,
                      [[v for h, v in zip(HEADER, _row()) if h != "WorkerId"]])
    with pytest.raises(DataError) as error:
        import_paths([path], ji2022.MTURK)
    message = str(error.value)
    assert str(path) in message and "row 1" in message and "WorkerId" in message


def test_bad_json_and_bad_scores_name_the_row(tmp_path):
    path = _write_csv(tmp_path / "Combined_Batches_json.csv", HEADER,
                      [_row(), _row(answer="[{not json", assignment="A2")])
    with pytest.raises(DataError) as error:
        import_paths([path], ji2022.MTURK)
    assert str(path) in str(error.value) and "row 3" in str(error.value) and "Answer.taskAnswers" in str(error.value)

    bad = json.loads(GOOD_ANSWER)
    bad[0]["score2"] = "10#20#30#"
    path = _write_csv(tmp_path / "Combined_Batches_score.csv", HEADER, [_row(answer=json.dumps(bad))])
    with pytest.raises(DataError) as error:
        import_paths([path], ji2022.MTURK)
    assert "row 2" in str(error.value) and "score2" in str(error.value)


def test_small_synthetic_csv_round_trip(tmp_path):
    run = tmp_path / "MyRun"
    run.mkdir()
    _write_csv(run / "Combined_Batches_2hits.csv", HEADER,
               [_row(), _row(answer="[{}]", worker="W2", assignment="A2")])
    report = import_paths([run], ji2022.MTURK)
    assert (report.read, report.kept, len(report.skipped)) == (2, 1, 1)
    study = report.records[0]
    assert study["name"] == "ji2022-MyRun" and len(study["meta"]["empty_submissions"]) == 1
    names = [r["models"][0] for r in report.records if r["type"] == "conversation"]
    # seeds 100..600: <= 500 is the persona variant
    assert names == ["biencoder_p", "qc", "kvmemnn_p", "seq2seq_p", "lan_model_p", "polyencoder"]


@pytest.mark.slow
def test_convert_cli_reports_what_it_read_and_skipped(shared_data, tmp_path):
    out = tmp_path / "run1.jsonl"
    result = dialeval_run(["convert", "--from", "ji2022-mturk", "--data", str(shared_data / RUN1), "--out", str(out)],
                           timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout + result.stderr
    assert "read 305, kept 304, skipped 1" in printed
    assert "305 assignments from 249 workers" in printed
    assert "empty submission" in printed and "AALP4034U041N" in printed
    from parlai_dialeval.data import read_jsonl

    assert read_jsonl([out]).counts() == {"study": 1, "conversation": 1824, "rating": 12768, "comparison": 0}


@pytest.mark.parametrize("score, words", [
    ("10#20#abc#40#50#60#70#", "not a number"),
    ('{"r": 5}', "score field does not hold seven ratings"),
    ("10#20#150#40#50#60#70#", "rating outside 0-100"),
])
def test_bad_mturk_scores_name_csv_file_row_and_field(tmp_path, score, words):
    """Issue 18 item 11: a non-numeric score crashed with a TypeError; 150 was reported at a record index."""
    bad = json.loads(GOOD_ANSWER)
    bad[0]["score1"] = score if not score.startswith("{") else json.loads(score)
    path = _write_csv(tmp_path / "Combined_Batches_s.csv", HEADER, [_row(), _row(answer=json.dumps(bad),
                                                                                assignment="A2")])
    with pytest.raises(DataError, match=rf"^{path}, row 3: field 'Answer.taskAnswers\[score1\]': {words}"):
        load([path], fmt=ji2022.MTURK, log=None)


def test_mturk_records_that_fail_validation_name_the_csv_row(tmp_path):
    # the same assignment twice passes the importer and is refused by the data model's checks
    path = _write_csv(tmp_path / "Combined_Batches_m.csv", HEADER, [_row(), _row()])
    with pytest.raises(DataError, match=rf"^{path}, row 3: field 'id': conversation id 'A1_0' given twice"):
        load([path], fmt=ji2022.MTURK, log=None)


@pytest.mark.parametrize("change, field, words", [
    ({"task3": "", "seed3": ""}, r"Answer.taskAnswers\[task3\]", "not a model name"),
    ({"task3": ""}, r"Answer.taskAnswers\[task3\]", "not a model name"),  # once model "_p"
    ({"task3": ["seq2seq"]}, r"Answer.taskAnswers\[task3\]", "not a model name"),  # once "['seq2seq']_p"
    ({"dialogue2": ["u: hi", "b: hello"]}, r"Answer.taskAnswers\[dialogue2\]", "not a dialogue text"),
    ({"work_time": "-50"}, "WorkTimeInSeconds", "negative work time"),  # once assignment_duration -50
])
def test_mturk_model_name_dialogue_and_work_time_are_checked_naming_row_and_field(tmp_path, change, field, words):
    bad = json.loads(GOOD_ANSWER)
    work_time = change.pop("work_time", "600")
    bad[0].update(change)
    row = _row(answer=json.dumps(bad), assignment="A2")
    row[HEADER.index("WorkTimeInSeconds")] = work_time
    path = _write_csv(tmp_path / "Combined_Batches_m.csv", HEADER, [_row(), row])
    with pytest.raises(DataError, match=rf"^{path}, row 3: field '{field}': {words}"):
        load([path], fmt=ji2022.MTURK, log=None)


@pytest.mark.parametrize("value, words", [("high", "score is not a number 0-100"), (150, "score is not a number")])
def test_bad_release_scores_name_file_hit_and_field(tmp_path, value, words):
    scores = {c["name"]: 50 for c in ji2022.CRITERIA}
    hits = [{"AssignmentId": "A1", "HITId": "H1", "WorkerId": "W1",
             "data": [{"model": "A", "raw scores": scores, "dialogue": []},
                      {"model": "B_p", "raw scores": dict(scores, robotic=value), "dialogue": []}]}]
    path = tmp_path / "pass_free(run1).json"
    path.write_text(json.dumps(hits))
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}, HIT 0 conversation 1: field 'raw scores.robotic': "
                                        f"{words}"):
        load([path], fmt=ji2022.DIALOGUES, log=None)
