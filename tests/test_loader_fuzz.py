"""Fuzzing the canonical loader and every importer: any input either loads or fails with a DataError
naming the file, never a crash."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.errors import DataError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10)

FIELD_NAMES = ["type", "id", "models", "turns", "speaker", "text", "conversation_id", "worker_id", "model",
               "criterion", "scale", "value", "scale_min", "scale_max", "turn_index", "item_id", "model_a",
               "model_b", "choice", "name", "criteria", "format_version", "meta", "context"]
records = st.dictionaries(
    st.sampled_from(FIELD_NAMES), json_values, max_size=10).map(
    lambda r: r | {"type": r.get("type") if isinstance(r.get("type"), str) else "rating"})
# Files stamp every record with the format version: mostly the right one, so the fuzz reaches the
# field checks behind it.
typed = st.fixed_dictionaries({"type": st.sampled_from(["study", "conversation", "rating", "comparison"]),
                               "format_version": st.sampled_from(["1.0", "1.0", "1.0", "2.0", 1])},
                              optional={k: json_values for k in FIELD_NAMES[1:] if k != "format_version"})


def _load_or_data_error(path):
    try:
        read_jsonl([path])
    except DataError as error:
        assert str(path) in str(error)


@SETTINGS
@given(st.binary(max_size=300))
def test_arbitrary_bytes(tmp_path, blob):
    path = tmp_path / "f.jsonl"
    path.write_bytes(blob)
    _load_or_data_error(path)


@SETTINGS
@given(st.lists(records | typed, min_size=1, max_size=5))
def test_arbitrary_records(tmp_path, items):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    _load_or_data_error(path)


# ----------------------------------------------------------------------------- every importer
# Each importer is fed files shaped like its format (so the fuzz reaches past the first check) with
# random values at every leaf, and raw JSON of any shape. It must import, or stop with a DataError
# that names the file it read; never a TypeError, KeyError or any other crash.

leaf = st.none() | st.booleans() | st.integers(-5, 300) | st.floats(allow_nan=True) | st.text(max_size=12)
loose = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


def maybe(strategy):
    """A value of the expected shape most of the time, anything at all otherwise."""
    return st.one_of(strategy, strategy, strategy, loose)


turn_text = st.sampled_from(["User: hi", "System: hello", "hi", "", "User:", "System: a\nb"])
fed_items = st.lists(maybe(st.fixed_dictionaries(
    {"context": maybe(turn_text), "system": maybe(st.sampled_from(["Meena", "Human", ""])),
     "annotations": maybe(st.dictionaries(st.sampled_from(["Interesting", "Understandable", "Overall"]),
                                          maybe(st.lists(leaf, max_size=3)), max_size=2))},
    optional={"response": maybe(turn_text)})), max_size=3)

scores = st.one_of(st.lists(st.sampled_from(["0", "50", "100", "150", "-1", "x", "", "7.5"]), max_size=8)
                   .map(lambda parts: "#".join(parts) + "#"), leaf)
answers = st.fixed_dictionaries({}, optional={
    "task0": maybe(st.sampled_from(["biencoder", "qc", ""])), "seed0": maybe(st.sampled_from(["3", "900", "x"])),
    "score0": scores, "dialogue0": maybe(st.sampled_from(["u: hi###b: hello", "", "b: x"])),
    "topic0": maybe(st.sampled_from(["#0@cats", "#x@y", ""])), "topic_opinion0": maybe(st.just("#0@like")),
    "feedback": leaf, "error-message": leaf})
mturk_rows = st.lists(st.fixed_dictionaries({
    "HITId": maybe(st.sampled_from(["H1", ""])), "AssignmentId": maybe(st.sampled_from(["A1", "A2", ""])),
    "WorkerId": maybe(st.sampled_from(["W1", ""])), "WorkTimeInSeconds": maybe(st.sampled_from(["12", "x", ""])),
    "Answer.taskAnswers": st.one_of(answers.map(lambda a: json.dumps([a])), st.text(max_size=10),
                                    loose.map(json.dumps)),
    "Input.u0": st.sampled_from(["biencoder", ""])}), max_size=3)

release_hits = st.lists(maybe(st.fixed_dictionaries({
    "AssignmentId": maybe(st.just("A1")), "HITId": maybe(st.just("H1")), "WorkerId": maybe(st.just("W1")),
    "data": maybe(st.lists(maybe(st.fixed_dictionaries({
        "model": maybe(st.sampled_from(["A", "B_p", "QualityControl", "Z"])),
        "raw scores": maybe(st.dictionaries(st.sampled_from(["interesting", "fun", "robotic", "topic"]), leaf)),
        "dialogue": maybe(st.lists(maybe(st.fixed_dictionaries({"user": leaf, "bot": leaf})), max_size=2)),
        "topic": maybe(st.lists(maybe(st.fixed_dictionaries({"round": leaf, "topic": leaf})), max_size=2)),
        "change of topic": maybe(st.lists(loose, max_size=2)), "feedback": leaf})), max_size=2))})), max_size=2)

conversation_lines = st.lists(maybe(st.fixed_dictionaries({
    "dialog": maybe(st.lists(maybe(st.lists(maybe(st.fixed_dictionaries(
        {"id": maybe(st.sampled_from(["human_evaluator", "bot", "context"])), "text": leaf})), max_size=2)),
        max_size=3))}, optional={"context": loose, "conversation_id": leaf})), min_size=1, max_size=3)

ACUTE_COLUMNS = ["winner", "loser", "eval_choice_0", "eval_choice_1", "pairing_id", "question", "worker_name",
                 "is_onboarding", "pairs_to_eval", "winner_dialogue", "loser_dialogue"]
acute_results = st.lists(st.fixed_dictionaries({
    "winner": st.sampled_from(["m1", "m2", "m3", ""]), "loser": st.sampled_from(["m1", "m2", ""]),
    "eval_choice_0": st.sampled_from(["m1", "m2"]), "eval_choice_1": st.sampled_from(["m1", "m2"]),
    "pairing_id": st.sampled_from(["1", "2", ""]), "question": st.sampled_from(["Who?", ""]),
    "worker_name": st.sampled_from(["w1", "w2", ""]), "is_onboarding": st.sampled_from(["True", "False"]),
    "pairs_to_eval": st.sampled_from(["{'speakers_to_eval': ['m1', 'm2'], 'dialogue_ids': [1, 2]}", "{", "[]",
                                      "{'speakers_to_eval': 5}", ""]),
    "winner_dialogue": st.sampled_from(["{'dialogue': [{'id': 'm1', 'text': 'hi'}]}", "{", "5", ""]),
    "loser_dialogue": st.sampled_from(["{'dialogue': []}", "[1]", ""])}), max_size=3)

acute_pairings = st.lists(maybe(st.fixed_dictionaries({
    "speakers_to_eval": maybe(st.lists(st.sampled_from(["m1", "m2"]), max_size=3)),
    "dialogue_dicts": maybe(st.lists(maybe(st.fixed_dictionaries(
        {"id": leaf, "dialogue": maybe(st.lists(maybe(st.fixed_dictionaries({"id": leaf, "text": leaf})),
                                                max_size=2))})), max_size=3))},
    optional={"dialogue_ids": loose, "is_onboarding": leaf})), min_size=1, max_size=3)

message = st.fixed_dictionaries({"agent_idx": maybe(st.sampled_from([0, 1])), "text": leaf},
                                optional={"problem_data": maybe(st.dictionaries(
                                    st.sampled_from(["bucket_a", "none_all_good"]), leaf, max_size=2)),
                                    "final_rating": maybe(st.sampled_from(["3", "4|5", "x", ""])),
                                    "id": leaf, "fake_start": leaf})
model_chat = st.fixed_dictionaries({
    "dialog": maybe(st.lists(maybe(message), max_size=3)), "workers": maybe(st.lists(leaf, max_size=2)),
    "task_description": maybe(st.fixed_dictionaries({}, optional={"model_nickname": leaf}))},
    optional={"personas": loose, "bad_workers": loose, "assignment_ids": loose, "hit_ids": loose})

per_turn = st.fixed_dictionaries({
    "outputs": st.fixed_dictionaries({"final_data": st.lists(maybe(st.fixed_dictionaries({
        "data": maybe(st.lists(maybe(st.fixed_dictionaries(
            {"agent_idx": maybe(st.sampled_from([0, 1])), "text": leaf},
            optional={"bucket_x": leaf, "none_all_good": leaf, "turn_idx": leaf})), max_size=3))},
        optional={"subtask_index": leaf})), max_size=3)}),
    }, optional={"times": maybe(st.fixed_dictionaries({"task_start": leaf, "task_end": leaf}))})


# Arena battles (FastChat's clean_battle_data.py output, lmsys/chatbot_arena_conversations)
messages = maybe(st.lists(maybe(st.fixed_dictionaries({"role": maybe(st.sampled_from(["user", "assistant", "x"])),
                                                       "content": leaf})), max_size=3))
arena_battles = st.lists(maybe(st.fixed_dictionaries({
    "model_a": maybe(st.sampled_from(["m1", "m2", ""])), "model_b": maybe(st.sampled_from(["m1", "m2", ""])),
    "winner": maybe(st.sampled_from(["model_a", "model_b", "tie", "tie (bothbad)", "x"])),
    "judge": maybe(st.sampled_from(["j1", "j2", ""]))},
    optional={"question_id": leaf, "turn": leaf, "tstamp": leaf, "language": leaf, "anony": leaf,
              "conversation_a": messages, "conversation_b": messages})), max_size=3)

# A folder written by dialeval publish: its manifest and one Parquet table, both fuzzed
published_folders = st.tuples(
    st.one_of(loose, st.fixed_dictionaries({
        "format_version": maybe(st.just("1.0")),
        "configs": maybe(st.dictionaries(st.sampled_from(["comparisons", "ratings", "studies"]),
                                         st.sampled_from(["data/table.parquet", "missing.parquet", "../x", "", "data"]),
                                         max_size=2))})),
    st.lists(st.fixed_dictionaries({}, optional={
        "item_id": st.text(max_size=4), "model_a": st.text(max_size=3), "model_b": st.text(max_size=3),
        "choice": st.sampled_from(["a", "b", "tie", "x"]), "worker_id": st.text(max_size=3),
        "conversation_id": st.text(max_size=3), "value": st.sampled_from(["1", "x"])}), max_size=3))


def _published(root, example):
    import pyarrow as pa
    import pyarrow.parquet as pq

    manifest, rows = example
    (root / "data").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows) if rows else pa.table({"item_id": pa.array([], pa.string())}),
                   root / "data" / "table.parquet")
    (root / "dialeval.json").write_text(json.dumps(manifest))
    return root


def _csv(path, rows, columns):
    import csv

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _chateval(root, results, order, responses):
    folder = root / "AMT_ncm_vs_x"
    folder.mkdir(exist_ok=True)
    (folder / "results.txt").write_text(results)
    (folder / "order.txt").write_text(order)
    (folder / "amt_hit_responses.converted.json").write_text(json.dumps(responses))
    return folder


results_text = st.lists(st.tuples(st.text(max_size=5), st.text(max_size=5), st.sampled_from(
    ["[0, 1, -1]", "[0]", "It's a tie!", "[7]", "x", "[]"])), max_size=3).map(
    lambda blocks: "".join(f"Source: {s}\nCandidate target: {a}\nCandidate target: {a}{b}\nWinner is....: {w}\n"
                           for s, (a, b, w) in zip(range(9), blocks)))
chateval_responses = maybe(st.fixed_dictionaries({"assignments": maybe(st.lists(maybe(st.fixed_dictionaries({
    "WorkerId": maybe(st.just("W1")), "AssignmentId": maybe(st.just("A1")), "SubmitTime": leaf,
    "answers": maybe(st.lists(maybe(st.fixed_dictionaries({"example": maybe(st.sampled_from(["ex-000", "ex-x"])),
                                                           "choice": leaf})), max_size=3))})), max_size=2))}))


def writers():
    """format -> (strategy, function writing one example under a folder and returning the path to load)."""
    def ji_csv(root, rows):
        path = root / "Combined_Batches_1.csv"
        _csv(path, rows, ["HITId", "AssignmentId", "WorkerId", "WorkTimeInSeconds", "Answer.taskAnswers",
                          "Input.u0"])
        return path

    def json_file(name):
        def write(root, obj):
            path = root / name
            path.write_text(json.dumps(obj))
            return path
        return write

    def jsonl_file(name):
        def write(root, objs):
            path = root / name
            path.write_text("".join(json.dumps(o) + "\n" for o in objs))
            return path
        return write

    def acute_csv(root, rows):
        path = root / "acute_full.csv"
        _csv(path, rows, ACUTE_COLUMNS)
        return path

    def per_turn_file(root, obj):
        folder = root / "hit1" / "worker1"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "agent_data.json").write_text(json.dumps(obj))
        return root

    return {
        "fed": (st.one_of(fed_items, loose), json_file("fed_data.json")),
        "ji2022-mturk": (mturk_rows, ji_csv),
        "ji2022-dialogues": (st.one_of(release_hits, loose), json_file("pass_free(run1).json")),
        "parlai-conversations": (conversation_lines, jsonl_file("chats.jsonl")),
        "parlai-acute": (st.one_of(acute_results.map(lambda rows: ("csv", rows)),
                                   acute_pairings.map(lambda lines: ("jsonl", lines))),
                         lambda root, example: (acute_csv if example[0] == "csv" else
                                                jsonl_file("pairings.jsonl"))(root, example[1])),
        "parlai-model-chat": (st.one_of(model_chat, loose), json_file("chat.json")),
        "parlai-per-turn": (st.one_of(per_turn, loose), per_turn_file),
        "arena": (st.one_of(arena_battles, loose), json_file("battles.json")),
        "published": (published_folders, _published),
        "chateval-ab": (st.tuples(results_text, st.sampled_from(["a.txt\nb.txt\n", "a.txt\n", "a.txt\na.txt\n"]),
                                  chateval_responses),
                        lambda root, example: _chateval(root, *example)),
    }


@pytest.mark.parametrize("fmt", sorted(writers()))
def test_every_importer_imports_or_names_the_file(tmp_path_factory, fmt):
    from parlai_dialeval.importers import IMPORTERS, load
    from parlai_dialeval.importers.registry import load_importer_modules

    load_importer_modules()
    assert sorted(writers()) == sorted(IMPORTERS), "every importer must be fuzzed here"
    strategy, write = writers()[fmt]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(example):
        root = tmp_path_factory.mktemp(fmt)
        path = write(root, example)
        try:
            load([path], fmt=fmt, log=None)
        except DataError as error:
            assert str(root) in str(error), f"the error must name the file: {error}"

    run()
