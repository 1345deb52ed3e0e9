"""The arena importer on battles written by hand from the documented layout.

Layout sources: FastChat's fastchat/serve/monitor/clean_battle_data.py (github.com/lm-sys/FastChat: the
keys of each battle dict, winner in model_a / model_b / tie / tie (bothbad), judge "arena_user_<n>",
turn = len(conversation_a) // 2, the "simple" mode dropping question_id and the conversations) and the
dataset card of lmsys/chatbot_arena_conversations on Hugging Face (conversation_a/b as lists of
{role, content}, openai_moderation, toxic_chat_tag, tstamp a float).
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from crowdsourcing.zygote import dialeval_run
from parlai_dialeval.errors import DataError
from parlai_dialeval.importers import detect_format, import_paths, load


def conversation(prompt, reply, *more):
    messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": reply}]
    for user, assistant in zip(more[::2], more[1::2]):
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return messages


def battle(question_id, model_a, model_b, winner, judge, conv_a, conv_b, tstamp, **extra):
    return {"question_id": question_id, "model_a": model_a, "model_b": model_b, "winner": winner, "judge": judge,
            "conversation_a": conv_a, "conversation_b": conv_b, "turn": len(conv_a) // 2, "anony": True,
            "language": "English", "tstamp": tstamp, **extra}


MODERATION = {"categories": {"harassment": False, "violence": False}, "flagged": False}
# conv_release mode / the released dataset: every battle with its conversations.
RELEASED = [
    battle("q1", "vicuna-13b", "koala-13b", "model_a", "arena_user_1",
           conversation("What is 2+2?", "4."), conversation("What is 2+2?", "Five."), 1682351591.1,
           openai_moderation=MODERATION, toxic_chat_tag={"roberta-large": {"flagged": False}}),
    battle("q2", "koala-13b", "alpaca-13b", "model_b", "arena_user_2",
           conversation("Name a colour.", "Blue", "Another?", "Red"),
           conversation("Name a colour.", "Green", "Another?", "Yellow"), 1682351600.0),
    battle("q3", "vicuna-13b", "alpaca-13b", "tie", "arena_user_1",
           conversation("Hi", "Hello!"), conversation("Hi", "Hi there."), 1682351700.5),
    battle("q4", "alpaca-13b", "vicuna-13b", "tie (bothbad)", "arena_user_3",
           conversation("Capital of Peru?", "Quito."), conversation("Capital of Peru?", "Bogota."), 1682351800.0),
    # skipped, each with its reason:
    battle("q5", "vicuna-13b", "vicuna-13b", "model_a", "arena_user_2",
           conversation("x", "y"), conversation("x", "z"), 1682351900.0),
    {"question_id": "q6", "model_a": "vicuna-13b", "winner": "model_a", "judge": "arena_user_4"},
    battle("q1", "vicuna-13b", "koala-13b", "model_b", "arena_user_1",
           conversation("What is 2+2?", "4."), conversation("What is 2+2?", "Five."), 1682352000.0),
    battle("q7", "koala-13b", "vicuna-13b", "model_a", "arena_user_5",
           conversation("Tell me a joke", None), conversation("Tell me a joke", "No."), 1682352100.0),
]


def write_json(path, battles):
    path.write_text(json.dumps(battles, indent=2), encoding="utf-8")  # clean_battle_data.py: json.dump(indent=2)
    return path


def test_released_battles_become_comparisons_and_conversations(tmp_path):
    source = write_json(tmp_path / "clean_battle_conv_20230424.json", RELEASED)
    assert detect_format(source) == "arena"
    report = import_paths([source], "arena")
    assert (report.read, report.kept, len(report.skipped)) == (8, 4, 4)
    reasons = " | ".join(why for _, why in report.skipped)
    for why in ("a model against itself (vicuna-13b)", "missing model_b",
                "arena_user_1 voted on question q1 before", "a message without text"):
        assert why in reasons
    data = load([source], log=None)
    votes = data.comparisons.set_index("item_id")
    assert list(votes["choice"]) == ["a", "b", "tie", "tie"]
    assert votes.loc["q4", "meta"]["bothbad"] is True and "bothbad" not in votes.loc["q3", "meta"]
    assert votes.loc["q1", "worker_id"] == "arena_user_1"
    assert votes.loc["q1", "meta"]["submit_time"] == "2023-04-24T15:53:11.100000+00:00"
    assert votes.loc["q1", "meta"]["openai_moderation"] == MODERATION
    # one-turn battles carry the prompt and both replies; the two-turn one only its conversations
    assert (votes.loc["q1", "context"], votes.loc["q1", "response_a"], votes.loc["q1", "response_b"]) == (
        "What is 2+2?", "4.", "Five.")
    assert pd.isna(votes.loc["q2", "response_a"]) and votes.loc["q2", "conversation_b"] == "q2/b"
    conversations = data.conversations.set_index("id")
    assert len(conversations) == 8
    assert conversations.loc["q2/a", "turns"] == [
        {"speaker": "human", "text": "Name a colour."}, {"speaker": "koala-13b", "text": "Blue"},
        {"speaker": "human", "text": "Another?"}, {"speaker": "koala-13b", "text": "Red"}]


def test_simple_mode_json_lines_and_parquet_read_alike(tmp_path):
    # clean_battle_data.py --mode simple drops question_id and the conversations
    simple = [{k: v for k, v in b.items() if k not in ("question_id", "conversation_a", "conversation_b")}
              for b in RELEASED[:4]]
    lines = tmp_path / "battles.jsonl"
    lines.write_text("\n".join(json.dumps(b) for b in simple) + "\n", encoding="utf-8")
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "battles.parquet"
    pq.write_table(pa.Table.from_pylist(RELEASED[:4]), parquet)
    assert detect_format(lines) == detect_format(parquet) == "arena"
    from_lines = load([lines], log=None).comparisons
    assert list(from_lines["item_id"]) == ["battles.jsonl#1", "battles.jsonl#2", "battles.jsonl#3",
                                           "battles.jsonl#4"]
    assert list(from_lines["choice"]) == ["a", "b", "tie", "tie"] and from_lines["conversation_a"].isna().all()
    from_parquet = load([parquet], log=None)
    assert list(from_parquet.comparisons["choice"]) == ["a", "b", "tie", "tie"]
    assert len(from_parquet.conversations) == 8


@pytest.mark.parametrize("change, named", [
    ({"winner": 1}, "battle 1: field 'winner': unknown winner"),
    ({"winner": "left"}, "battle 1: field 'winner': unknown winner"),
    ({"model_a": ["gpt"]}, "battle 1: field 'model_a': not a non-empty string"),
    ({"judge": "x" * 10_000}, "battle 1: field 'judge': too long (10,000 characters)"),
    ({"conversation_a": "hi"}, "battle 1: field 'conversation_a': not a list of messages"),
    ({"conversation_a": conversation("hi", "y" * 300_000)},
     "battle 1: field 'conversation_a[1].content': unreadable message text"),
    ({"conversation_b": [{"role": "system", "content": "x"}]}, "battle 1: field 'conversation_b[0].role'"),
    ({"tstamp": "yesterday"}, "battle 1: field 'tstamp': not a number"),
])
def test_hostile_battles_stop_with_one_line_naming_file_battle_and_field(tmp_path, change, named):
    source = write_json(tmp_path / "bad.json", [{**RELEASED[0], **change}])
    with pytest.raises(DataError) as error:
        load([source], log=None)
    message = str(error.value)
    assert message.startswith(f"{source}, {named}") and "\n" not in message and len(message) < 400


@pytest.mark.parametrize("tstamp", [1e20, float("inf"), float("-inf"), float("nan"), -1e13])
def test_tstamp_outside_what_a_time_can_be_stops_with_one_line_on_tstamp(tmp_path, tstamp):
    source = write_json(tmp_path / "bad.json", [{**RELEASED[0], "tstamp": tstamp}])
    with pytest.raises(DataError) as error:
        load([source], log=None)
    assert str(error.value).startswith(f"{source}, battle 1: field 'tstamp': not a usable time")


def test_empty_conversation_or_blank_message_is_skipped_with_its_reason(tmp_path):
    source = write_json(tmp_path / "battles.json", [
        {**RELEASED[0], "conversation_a": []},
        {**RELEASED[2], "conversation_b": conversation("Hi", "")},
        {**RELEASED[3], "conversation_a": conversation("Capital of Peru?", "  \n")},
        RELEASED[1]])
    report = import_paths([source], fmt="arena")
    assert (report.read, report.kept) == (4, 1)
    assert [why for _, why in report.skipped] == ["an empty conversation (no messages to judge)"] + [
        "a message without text (a failed reply)"] * 2
    assert [r["id"] for r in report.records if r["type"] == "conversation"] == ["q2/a", "q2/b"]


def test_two_judges_of_one_question_keep_both_votes_and_conversations(tmp_path):
    second = {**RELEASED[0], "judge": "arena_user_9", "winner": "model_b",
              "conversation_b": conversation("What is 2+2?", "Four.")}
    data = load([write_json(tmp_path / "battles.json", [RELEASED[0], second])], log=None)
    comparisons = data.comparisons.set_index("worker_id")
    assert list(comparisons["choice"]) == ["a", "b"] and set(comparisons["item_id"]) == {"q1"}
    assert comparisons.loc["arena_user_9", "conversation_b"] == "q1/arena_user_9/b"
    conversations = data.conversations.set_index("id")
    assert conversations.loc["q1/arena_user_9/b", "turns"][1]["text"] == "Four."
    assert conversations.loc["q1/b", "turns"][1]["text"] == "Five."


def clear_winner(count=40):
    """vicuna beats alpaca in every battle; koala and alpaca split theirs."""
    out = []
    for n in range(count):
        out.append(battle(f"v{n}", *(("vicuna-13b", "alpaca-13b") if n % 2 else ("alpaca-13b", "vicuna-13b")),
                          "model_a" if n % 2 else "model_b", f"arena_user_{n % 7}",
                          conversation(f"Question {n}?", f"Good answer {n}."),
                          conversation(f"Question {n}?", f"Bad {n}"), 1682350000.0 + 60 * n))
        out.append(battle(f"k{n}", "koala-13b", "alpaca-13b", ("model_a", "model_b", "tie")[n % 3],
                          f"arena_user_{n % 5}", conversation(f"Ask {n}", "One."), conversation(f"Ask {n}", "Two."),
                          1682350030.0 + 60 * n))
    return out


def dialeval(*args):
    run = dialeval_run([*map(str, args)], timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return run


@pytest.mark.slow  # a command with the report's figures: 6-20 s on a shared 2-core machine
def test_analyze_pairwise_reads_arena_battles(tmp_path):
    source = write_json(tmp_path / "arena.json", RELEASED + clear_winner())
    out = tmp_path / "out"
    run = dialeval("analyze_pairwise", "--data", source, "--out", out, "--bootstrap-rounds", "20")
    assert "arena: read 88, kept 84, skipped 4" in run.stdout
    rates = pd.read_csv(out / "win_rates.csv")
    assert set(rates["unit"]) == {"dialog"}
    pair = rates[rates["model_a"].eq("vicuna-13b") & rates["model_b"].eq("koala-13b")].iloc[0]
    assert (pair["wins_a"], pair["wins_b"], pair["ties"]) == (1, 0, 0)
    both = ["vicuna-13b", "alpaca-13b"]
    va = rates[rates["model_a"].isin(both) & rates["model_b"].isin(both)].iloc[0]
    # vicuna-13b first appears as model_a against alpaca in q3 (a tie); then 40 wins over alpaca, q4 bothbad a tie
    assert (va["model_a"], va["wins_a"], va["wins_b"], va["ties"]) == ("vicuna-13b", 40, 0, 2)
    ranks = pd.read_csv(out / "rankings.csv")
    assert ranks.sort_values("rank")["model"].iloc[0] == "vicuna-13b"


def test_certify_reads_arena_battles(tmp_path):
    source = tmp_path / "arena.jsonl"
    source.write_text("\n".join(json.dumps(b) for b in clear_winner()) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    dialeval("certify", "--data", source, "--out", out)
    pairs = pd.read_csv(out / "pairs.csv")
    clear = pairs[pairs["model_a"].isin(["vicuna-13b", "alpaca-13b"]) & pairs["model_b"].isin(
        ["vicuna-13b", "alpaca-13b"])].iloc[0]
    # 40 straight wins, bet on in tstamp order: far past K(K-1)/alpha = 120 for 3 models
    assert clear["certified_winner"] == "vicuna-13b" and clear["order"] == "submit time"
    split = pairs[pairs["model_a"].eq("koala-13b")].iloc[0]
    assert pd.isna(split["certified_winner"])
