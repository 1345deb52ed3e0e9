"""ParlAI importers on ParlAI's own fixtures (mock workers), with counts cross-checked by reading the
files directly here and against ParlAI's recorded analysis output."""
from __future__ import annotations

import ast
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from crowdsourcing.zygote import dialeval_run
from parlai_dialeval.errors import DataError
from parlai_dialeval.importers.registry import detect_format, import_paths, load

DIALEVAL = Path(sys.executable).with_name("dialeval")
ACUTE_CONFIG = Path("parlai/crowdsourcing/tasks/acute_eval/task_config")
ACUTE_TESTS = Path("tests/crowdsourcing/tasks/acute_eval")
MODEL_CHAT = Path("tests/crowdsourcing/tasks/model_chat/analysis_samples")
PER_TURN = Path("tests/crowdsourcing/tasks/turn_annotations_static")


@pytest.fixture(scope="module")
def parlai_data(shared_data):
    return shared_data / "parlai"


def test_conversations_self_chat_file(parlai_data):
    path = parlai_data / ACUTE_CONFIG / "self_chats/model1.blended_skill_talk.jsonl"
    assert detect_format(path) == "parlai-conversations"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    report = import_paths([path], "parlai-conversations")
    assert (report.read, report.kept, report.skipped) == (len(lines), len(lines), [])
    data = load([path], log=None)
    first = data.conversations.iloc[0]
    # ACUTE's layout self_chats/<model>.<task>.jsonl names the model; both self-chat speakers are it.
    assert first["models"] == ["model1"] and first["task"] == "self_chat"
    expected_texts = [m["text"] for exchange in lines[0]["dialog"] for m in exchange]
    assert [t["text"] for t in first["turns"]] == expected_texts
    assert {t["speaker"] for t in first["turns"]} == {"model1"}
    assert "i have a few pet iguanas." in first["personas"]["TransformerGenerator_1"]


def test_conversations_human_model_logs_keep_context_apart(parlai_data):
    path = parlai_data / PER_TURN / "task_config/sample_conversations.jsonl"
    data = load([path], log=None)
    first = data.conversations.iloc[0]
    raw = json.loads(path.read_text().splitlines()[0])
    messages = [m for exchange in raw["dialog"] for m in exchange if m["id"] != "context"]
    assert len(first["turns"]) == len(messages) and first["turns"][0] == {
        "speaker": "human", "text": "Hi!", "meta": {"id": "human_evaluator"}}
    assert first["models"] == ["sample_model"] and first["meta"]["context"]


def test_acute_results_csv(parlai_data):
    path = parlai_data / ACUTE_TESTS / "test_fast_acute_dataset/test_full_csv.csv"
    assert detect_format(path) == "parlai-acute"
    data = load([path], log=None)
    comparisons = data.comparisons
    rows = list(csv.DictReader(path.open()))
    assert len(comparisons) == len(rows) == 4
    # ParlAI's own significance table for this run: convai2_logs 2 wins, ed_logs 2 wins, 4 ratings.
    significance = next(csv.DictReader((path.parent / "test_significance_csv.csv").open()))
    winners = [c["model_a"] if c["choice"] == "a" else c["model_b"] for _, c in comparisons.iterrows()]
    assert winners.count(significance["model1"]) == int(significance["numwins1"])
    assert winners.count(significance["model2"]) == int(significance["numwins2"])
    first = comparisons.iloc[0]
    pair = ast.literal_eval(rows[0]["pairs_to_eval"])
    assert first["conversation_a"] == f"convai2_logs-{pair['dialogue_ids'][0]}"
    assert first["justification"] == "Makes more sense" and not first["onboarding"]
    # every conversation a comparison points at was imported
    assert set(comparisons["conversation_a"]) | set(comparisons["conversation_b"]) <= set(data.conversations["id"])


def test_acute_pairings(parlai_data):
    path = parlai_data / ACUTE_CONFIG / "pairings.jsonl"
    assert detect_format(path) == "parlai-acute"
    pairings = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    data = load([path], log=None)
    assert len(data.conversations) == sum(len(p["dialogue_dicts"]) for p in pairings)
    onboarding = data.conversations[data.conversations["status"] == "onboarding"]
    assert set(onboarding["id"]) == {d["id"] for d in pairings[0]["dialogue_dicts"]}
    abc = data.conversations.set_index("id").loc["ABCDEF"]
    assert abc["models"] == ["modela"] and abc["turns"][1]["speaker"] == "human"


def test_model_chat_buckets_and_final_rating(parlai_data):
    folder = parlai_data / MODEL_CHAT / "with_personas_and_buckets"
    assert detect_format(folder) == "parlai-model-chat"
    files = sorted(folder.rglob("*.json"))
    raw = [json.loads(f.read_text()) for f in files]
    annotated = [m for d in raw for m in d["dialog"] if isinstance(m.get("problem_data"), dict)]
    data = load([folder], log=None)
    ratings = data.ratings
    binary = ratings[ratings["scale"] == "binary"]
    # five problem buckets per annotated bot message; none_all_good is implied by all-zero buckets
    assert len(binary) == 5 * len(annotated) and set(binary["criterion"]) == {f"bucket_{i}" for i in range(5)}
    ticks = sum(bool(v) for m in annotated for k, v in m["problem_data"].items() if k.startswith("bucket"))
    assert binary["value"].sum() == ticks
    final = ratings[ratings["scale"] == "likert"]
    assert final["value"].tolist() == [int(m["final_rating"]) for d in raw for m in d["dialog"] if "final_rating" in m]
    conv = data.conversations.iloc[0]
    assert conv["worker_id"] == "WORKER_1" and conv["models"] == ["blender_90M"]
    assert conv["personas"]["human"] == raw[0]["personas"][0] and conv["turns"][0]["meta"]["fake_start"]
    # turn_index points at the rated bot message
    first = binary.iloc[0]
    assert conv["turns"][int(first["turn_index"])]["speaker"] == "blender_90M"


def test_model_chat_duplicate_ids_are_reported(parlai_data):
    folder = parlai_data / MODEL_CHAT / "basic"
    report = import_paths([folder, folder], "parlai-model-chat")
    assert [why for _, why in report.skipped].count("duplicate conversation id '2020_12_29/20201229_173200_1_live' "
                                                    "(already imported)") == 1


def test_per_turn_matches_parlai_analysis(parlai_data):
    folder = parlai_data / PER_TURN / "analysis_samples"
    assert detect_format(folder) == "parlai-per-turn"
    report = import_paths([folder], "parlai-per-turn")
    # ParlAI's analysis of these files (test_stdout.txt) dropped 1 inconsistently annotated utterance.
    stdout = (parlai_data / PER_TURN / "test_turn_annotations_static_analysis/test_stdout.txt").read_text()
    assert "Dropped 1 inconsistently annotated utterances" in stdout
    assert len(report.skipped) == 1 and "inconsistent" in report.skipped[0][1]
    data = load([folder], log=None)
    ratings = data.ratings
    onboarding = ratings["meta"].map(lambda m: m["onboarding"])
    # 4 workers x 2 real subtasks = 8 annotated utterances, 7 kept ("Now have 7 utterances"), 5 buckets each;
    # the 4 onboarding subtasks (last of each file) are kept and marked.
    assert "Now have 7 utterances" in stdout
    assert (~onboarding).sum() == 7 * 5 and onboarding.sum() == 4 * 5
    expected = list(csv.DictReader((parlai_data / PER_TURN / "test_turn_annotations_static_analysis/"
                                    "expected_results.csv").open()))
    assert {r["conversation_id"] for r in expected} <= set(data.conversations["id"])
    assert set(ratings["worker_id"]) == {r["worker_id"] for r in expected}


def test_detection_does_not_misfire(parlai_data, shared_data):
    from parlai_dialeval.importers.registry import IMPORTERS, load_importer_modules

    load_importer_modules()

    samples = {
        "parlai-conversations": parlai_data / ACUTE_CONFIG / "self_chats/model2.blended_skill_talk.jsonl",
        "parlai-acute": parlai_data / ACUTE_CONFIG / "pairings.jsonl",
        "parlai-model-chat": parlai_data / MODEL_CHAT / "basic",
        "parlai-per-turn": parlai_data / PER_TURN / "analysis_samples",
    }
    for name, path in samples.items():
        for other in samples:
            assert IMPORTERS[other].detect(path) == (other == name), (other, path)
    for foreign in (shared_data / "fed/fed_data.json", shared_data / "chateval/amt_ab_2018",
                    parlai_data / ACUTE_CONFIG / "onboarding.json",
                    parlai_data / ACUTE_CONFIG / "self_chats/model1.blended_skill_talk.metadata"):
        if foreign.exists():
            assert not any(IMPORTERS[name].detect(foreign) for name in samples), foreign


def test_bad_lines_are_skipped_with_reasons(tmp_path):
    path = tmp_path / "chats.jsonl"
    good = {"dialog": [[{"id": "bot_a", "text": "hi"}, {"id": "human_evaluator", "text": "hello"}]]}
    path.write_text(json.dumps(good) + "\n{broken\n" + json.dumps({"dialog": []}) + "\n")
    report = import_paths([path], "parlai-conversations")
    assert (report.read, report.kept) == (3, 1)
    assert [w for w, _ in report.skipped] == [f"{path}:2", f"{path}:3"]


def test_cli_self_chat_then_convert(tmp_path):
    out = tmp_path / "x"
    chat = subprocess.run([str(DIALEVAL), "self_chat", "-m", "repeat_query", "--num-self-chats", "2",
                           "--outfile", str(out) + ".jsonl"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert chat.returncode == 0, chat.stderr[-2000:]
    canonical = tmp_path / "x.canonical.jsonl"
    result = dialeval_run(["convert", "--data", str(out) + ".jsonl", "--from", "parlai-conversations", "--out",
                           str(canonical)], timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "parlai-conversations: read 2, kept 2, skipped 0" in result.stdout
    records = [json.loads(line) for line in canonical.read_text().splitlines()]
    assert [r["type"] for r in records] == ["conversation", "conversation"]
    # the .metadata ParlAI writes beside the file says self-chat with model repeat_query
    assert records[0]["models"] == ["repeat_query"] and records[0]["task"] == "self_chat"
    first_line = json.loads(out.with_suffix(".jsonl").read_text().splitlines()[0])
    assert len(records[0]["turns"]) == 2 * len(first_line["dialog"])


def _model_chat(tmp_path, dialog):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"dialog": dialog, "workers": ["w1"], "task_description": {"model_nickname": "m"}}))
    return path


def test_model_chat_bad_messages_name_file_and_message(tmp_path):
    """Issue 18 item 11: an importer names the place of bad input (here the message), never crashes."""
    path = _model_chat(tmp_path, [{"agent_idx": 0, "text": "hi"}, "not a message"])
    with pytest.raises(DataError, match=rf"^{path}, message 1: unexpected content"):
        load([path], fmt="parlai-model-chat", log=None)
    path = _model_chat(tmp_path, [{"agent_idx": 0, "text": "hi"}, {"agent_idx": 1, "text": "yo", "final_rating": "9"}])
    with pytest.raises(DataError, match=rf"^{path}, message 1: field 'value': value is above the scale's scale_max"):
        load([path], fmt="parlai-model-chat", log=None)


def _acute_row(number, worker_name, worker="", winner_dialogue=None):
    dialogue = winner_dialogue or [{"id": "alpha_as_human", "text": "Hi"}, {"id": "alpha", "text": "Hello"}]
    pair = {"speakers_to_eval": ["alpha", "beta"], "dialogue_ids": [10 + number, 20 + number]}
    return {"run_id": "r", "worker": worker, "worker_name": worker_name, "question": "Who is better?",
            "unit_id": str(number), "winner": "alpha", "loser": "beta", "eval_choice_0": "alpha",
            "eval_choice_1": "beta", "reason": "", "is_onboarding": "False", "pairing_id": str(number),
            "pairs_to_eval": repr(pair), "winner_dialogue": repr({"dialogue": dialogue}),
            "loser_dialogue": repr({"dialogue": [{"id": "beta_as_human", "text": "Hi"},
                                                 {"id": "beta", "text": "Hey"}]})}


def _write_acute_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_acute_results_row_without_worker_is_skipped_not_worker_none(tmp_path):
    # two such rows were both worker "None" and then refused as one worker's duplicate vote
    path = _write_acute_csv(tmp_path / "results_full.csv", [
        _acute_row(1, "W1"), _acute_row(2, ""), _acute_row(3, "", worker=""), _acute_row(4, "", worker="7")])
    report = import_paths([path], "parlai-acute")
    assert (report.read, report.kept) == (4, 2)
    assert report.skipped == [(f"{path}:3", "no worker: worker_name and worker are empty"),
                              (f"{path}:4", "no worker: worker_name and worker are empty")]
    data = load([path], log=None)
    assert list(data.comparisons["worker_id"]) == ["W1", "7"]


def test_acute_results_dialogue_without_speaker_ids_is_not_kept(tmp_path):
    path = _write_acute_csv(tmp_path / "results_full.csv", [
        _acute_row(1, "W1", winner_dialogue=[{"text": "Hi"}, {"id": "alpha", "text": "Hello"}])])
    report = import_paths([path], "parlai-acute")
    assert report.skipped == [(f"{path}:2", "winner_dialogue: message 0 has no speaker id (conversation not kept)")]
    data = load([path], log=None)
    assert list(data.conversations["id"]) == ["beta-21"]
    assert len(data.comparisons) == 1 and data.comparisons["conversation_a"].isna().all()


def test_acute_pairings_with_an_empty_dialogue_or_a_message_without_id_are_skipped(tmp_path):
    def dialogue(conv_id, model, messages):
        return {"id": conv_id, "speakers": [model, "human_evaluator"], "dialogue": messages}

    good = [{"id": "human_evaluator", "text": "Hi"}, {"id": "modela", "text": "Hello"}]
    pairings = [
        {"speakers_to_eval": ["modela", "modelb"],
         "dialogue_dicts": [dialogue("A1", "modela", good), dialogue("B1", "modelb", [])]},
        {"speakers_to_eval": ["modela", "modelb"],
         "dialogue_dicts": [dialogue("A2", "modela", good),
                            dialogue("B2", "modelb", [{"text": "Hi"}, {"id": "modelb", "text": "Yo"}])]},
        {"speakers_to_eval": ["modela", "modelb"],
         "dialogue_dicts": [dialogue("A3", "modela", good), dialogue("B3", "modelb", [
             {"id": "human_evaluator", "text": "Hi"}, {"id": "modelb", "text": "Yo"}])]},
    ]
    path = tmp_path / "pairings.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairings))
    report = import_paths([path], "parlai-acute")
    assert (report.read, report.kept) == (3, 1)
    assert report.skipped == [(f"{path}:1", "dialogue_dicts[1]: an empty dialogue"),
                              (f"{path}:2", "dialogue_dicts[1]: message 0 has no speaker id")]
    assert [r["id"] for r in report.records if r["type"] == "conversation"] == ["A3", "B3"]
