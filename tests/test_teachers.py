"""The evaluation corpora as ParlAI teachers (`-t dialeval:NAME`)."""
from __future__ import annotations

import json

import pytest

import parlai_dialeval  # noqa: F401  (registers the dialeval: prefix)
from parlai.core.params import ParlaiParser
from parlai.core.teachers import create_task_agent_from_taskname

from parlai_dialeval.cli import main as dialeval
from parlai_dialeval.errors import DialevalError


def examples(task: str, *args: str, datatype: str = "valid") -> list[dict]:
    """Every example of one pass over ``task``'s ``datatype``."""
    opt = ParlaiParser(True, False).parse_args(["--task", task, "--datatype", datatype, *args])
    teacher = create_task_agent_from_taskname(opt)[0]
    out = []
    while not teacher.epoch_done():
        act = dict(teacher.act())
        if "eval_labels" in act:  # ParlAI hides labels outside training
            act["labels"] = act.pop("eval_labels")
        out.append(act)
    return out


def display(capsys, task: str, *args: str) -> tuple[int, str, str]:
    """`dialeval display_data -t task -n 2 ...`, in-process: (exit status, stdout, stderr)."""
    status = dialeval(["display_data", "-t", task, "-n", "2", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_display_data_fed_and_ji2022(shared_data, capsys):
    status, out, err = display(capsys, "dialeval:fed", "--fed-datafile", str(shared_data / "fed" / "fed_data.json"))
    assert status == 0, err[-2000:]
    # first FED item (fed_data.json[0]) opens with "User: Hi!" / "System: Hi! What's up?"
    assert "human: Hi!" in out and "Meena: Hi! What's up?" in out
    status, out, err = display(capsys, "dialeval:ji2022",
                               "--ji2022-datapath", str(shared_data / "ji2022" / "dialogue_data"))
    assert status == 0, err[-2000:]
    assert "- - - NEW EPISODE: ji2022 - - -" in out


def test_missing_data_says_where_to_get_it_and_which_option(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DIALEVAL_SHARED_DATA", str(tmp_path))
    status, _, err = display(capsys, "dialeval:fed")
    assert status == 2
    assert "--fed-datafile" in err and "FED_Replication" in err
    with pytest.raises(DialevalError, match="--ji2022-datapath"):
        examples("dialeval:ji2022", "--ji2022-datapath", str(tmp_path / "absent"))


def test_fed_items_and_labels_match_the_raw_file(shared_data):
    path = shared_data / "fed" / "fed_data.json"
    raw = json.loads(path.read_text())
    items = examples("dialeval:fed", "--fed-datafile", str(path))
    # README: 375 turn-level and 125 dialog-level items
    assert len(items) == len(raw) == 500
    assert sum(item["level"] == "turn" for item in items) == 375
    turn, item = raw[0], items[0]
    assert item["response"] == turn["response"].removeprefix("System: ")
    overall = [v for v in turn["annotations"]["Overall"] if isinstance(v, int)]
    assert item["labels"] == [f"{sum(overall) / len(overall):.2f}"]
    assert item["ratings"]["interesting"] == turn["annotations"]["Interesting"]
    dialog_only = examples("dialeval:fed", "--fed-datafile", str(path), "--fed-level", "dialog")
    assert len(dialog_only) == 125 and "response" not in dialog_only[0]


def test_ji2022_conversations_carry_their_ratings(shared_data):
    path = shared_data / "ji2022" / "dialogue_data" / "pass_free(run1).json"
    raw = json.loads(path.read_text())
    items = examples("dialeval:ji2022", "--ji2022-datapath", str(path))
    first = raw[0]["data"][0]
    assert items[0]["text"] == first["dialogue"][0]["user"]
    assert items[0]["labels"] == [first["dialogue"][0]["bot"]]
    # the released file holds the 0-100 raw scores, robotic and repetitive already reversed (README)
    released = first["raw scores"]
    values = released if isinstance(released, list) else list(released.values())
    assert items[0]["ratings"]["interesting"] == [values[1]]
    episodes = sum(item["episode_done"] for item in items)
    assert episodes == sum(len(hit["data"]) for hit in raw)


@pytest.mark.parametrize("name, count, first_text, first_label", [
    # first lines of ChatEval's files (shared/data/chateval/eval_sets)
    ("ncm", 200, "what is two plus two ?", "four"),
    ("dbdc", 200, "What 's your favorite hobby ?", None),
    ("twitter", 200, "need to date a photographer so he can take pictures of me all day", None),
    ("opensubtitles", 200, "Unusual ?", None),
])
def test_chateval_single_turn_sets(shared_data, name, count, first_text, first_label):
    items = examples(f"dialeval:chateval:{name}",
                     "--chateval-datapath", str(shared_data / "chateval" / "eval_sets"))
    assert len(items) == count
    assert items[0]["text"] == first_text
    if first_label:
        assert items[0]["labels"] == [first_label]


def test_chateval_multi_turn_sets(shared_data):
    folder = str(shared_data / "chateval" / "eval_sets")
    esl3 = examples("dialeval:chateval:esl3", "--chateval-datapath", folder)
    assert esl3[0]["text"].split("\n") == ["It's been very sunny lately, hasn't it?",
                                          "Yes, it has. Some rain would be very nice.",
                                          "I don't think it will rain for quite some time."]
    assert all(len(item["text"].split("\n")) == 3 for item in esl3)
    movie2 = examples("dialeval:chateval:movie2", "--chateval-datapath", folder)
    assert len(movie2) == 200 and all(len(item["text"].split("\n")) == 2 for item in movie2)


def test_chatterbot_needs_no_download_and_splits_disjointly():
    train = examples("dialeval:chatterbot", datatype="train:ordered")
    valid = examples("dialeval:chatterbot", datatype="valid")
    test = examples("dialeval:chatterbot", datatype="test")
    assert train[0]["text"] == "What is AI?"  # ai.yml, first conversation
    assert len(valid) > 100 and len(test) > 100
    assert len(train) > 6 * len(test)


def test_chatterbot_folder_is_parsed_once_and_again_when_a_file_changes(tmp_path):
    """A launch's bots each read the corpus: parsed once per process (issue 39), yet never stale."""
    from tasks.chatterbot.agents import read_conversations

    corpus = tmp_path / "ai.yml"
    corpus.write_text("conversations:\n- - Hi\n  - Hello\n")
    first = read_conversations(tmp_path)
    first[0].append("changed by a caller")
    assert read_conversations(tmp_path) == [["Hi", "Hello"]]  # each caller gets its own lists
    corpus.write_text("conversations:\n- - Hi\n  - Hello there\n- - Bye\n  - See you\n")
    assert read_conversations(tmp_path) == [["Hi", "Hello there"], ["Bye", "See you"]]


def test_icebreakers_pick_one_persona_statement(shared_data):
    items = examples("dialeval:icebreakers",
                     "--icebreakers-datapath", str(shared_data / "ji2022" / "dialogue_data" / "HIT_detail"))
    assert len(items) > 50
    for item in items:
        assert item["labels"][0] in item["persona"]
        assert item["text"].count("your persona: ") == len(item["persona"])
    assert len({tuple(item["persona"]) for item in items}) == len(items)


def test_icebreakers_from_a_persona_file(tmp_path):
    path = tmp_path / "personas.txt"
    path.write_text("i like cats.\ni live in paris.\n\ni am a chef.\n")
    items = examples("dialeval:icebreakers", "--icebreakers-datapath", str(path))
    assert [item["persona"] for item in items] == [["i like cats.", "i live in paris."], ["i am a chef."]]
