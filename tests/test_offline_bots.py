"""Offline bots: built locally, loaded from model files, shared across copies, chatting with each
other through `dialeval self_chat`, and the result importable as canonical data."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import parlai_dialeval  # noqa: F401  (registers the dialeval: prefix)
from parlai.core.agents import create_agent_from_model_file, create_agent_from_shared

from parlai_dialeval.agents.hf_lm.config import TrainConfig
from parlai_dialeval.agents.qc_bot.corpus import load_corpus
from parlai_dialeval.cli import main as dialeval
from parlai_dialeval.data import read_jsonl
from parlai_dialeval.agents.quality_levels import compare
from parlai_dialeval.scripts.build_offline_bots import build, measure, message_pairs

QUICK = TrainConfig(epochs=1, max_steps=15, n_layer=1, n_embd=64, vocab_size=500)


@pytest.fixture(scope="module")
def bots(tmp_path_factory):
    out = tmp_path_factory.mktemp("offline_bots")
    return out, build(out, config=QUICK, evaluate=False)


def reply(agent, text):
    agent.reset()
    agent.observe({"text": text, "episode_done": False})
    return agent.act()


def test_build_writes_model_files_and_reuses_the_trained_model(bots):
    out, result = bots
    for name in ("qc_bot", "retrieval", "hf_lm"):
        assert json.loads((out / name / "model.opt").read_text())["model"].startswith("dialeval:")
    assert result["training"]["steps"] == 15
    assert build(out, config=QUICK, evaluate=False)["training"]["cached"] is True


def test_bots_load_from_model_files_and_copies_share_their_model(bots):
    _, result = bots
    lm = create_agent_from_model_file(result["paths"]["hf_lm"])
    copy = create_agent_from_shared(lm.share())
    assert copy.lm is lm.lm
    assert reply(lm, "do you like pizza?")["text"] == reply(copy, "do you like pizza?")["text"]
    retrieval = create_agent_from_model_file(result["paths"]["retrieval"])
    assert create_agent_from_shared(retrieval.share()).index is retrieval.index
    # response matching returns a response sharing the message's rarest word
    assert "squirrels" in reply(retrieval, "squirrels")["text"].lower()
    neighbour = create_agent_from_model_file(result["paths"]["retrieval"], {"retrieval_match": "message"})
    # "Tell me a joke" is a chatterbot prompt: the nearest neighbour is that very prompt
    assert reply(neighbour, "tell me a joke")["retrieval_audit"]["matched"].lower() == "tell me a joke"
    qc = create_agent_from_model_file(result["paths"]["qc_bot"])
    assert "qc_audit" in reply(qc, "hi")


def test_retrieval_is_measurably_better_than_the_qc_bot(bots):
    # All held-out chatterbot test pairs; the full three-level ordering (with the LM trained for the
    # full schedule) is measured by `dialeval build_offline_bots` (docs/bots_and_teachers.md).
    # Both bots are deterministic (fixed seed), so the scores are too.
    _, result = bots
    test = load_corpus(datatype="test")
    scores = measure({name: result["paths"][name] for name in ("qc_bot", "retrieval")}, test)["all"]["scores"]
    assert scores["qc_bot"]["f1"] < scores["retrieval"]["f1"]
    assert scores["qc_bot"]["tfidf_similarity"] < scores["retrieval"]["tfidf_similarity"]
    neighbour = create_agent_from_model_file(result["paths"]["retrieval"], {"retrieval_match": "message"})
    assert compare({"neighbour": neighbour}, message_pairs(test))["neighbour"]["f1"] > scores["qc_bot"]["f1"] + 0.3


def test_self_chat_qc_bot_with_retrieval_converts_to_canonical_data(bots, tmp_path):
    _, result = bots
    log = tmp_path / "selfchat"
    assert dialeval(["self_chat", "-m", "dialeval:qc_bot", "--qc-seed", "5",
                     "--partner-model-file", result["paths"]["retrieval"], "--num-self-chats", "2",
                     "--selfchat-max-turns", "3", "--outfile", str(log), "--save-format", "conversations",
                     "--display-examples", "false"]) == 0
    lines = [json.loads(line) for line in (tmp_path / "selfchat.jsonl").read_text().splitlines()]
    assert len(lines) == 2
    for conversation in lines:
        qc_turns = [turn for exchange in conversation["dialog"] for turn in exchange if "qc_audit" in turn]
        # each exchange: the QC bot speaks, the retrieval bot answers
        assert len(qc_turns) == len(conversation["dialog"]) >= 2
        assert all(exchange[1]["id"].startswith("TfidfRetrieval") for exchange in conversation["dialog"])
        assert all(turn["qc_audit"]["distorted"] for turn in qc_turns)
    canonical = tmp_path / "canonical.jsonl"
    assert dialeval(["convert", "--data", str(tmp_path / "selfchat.jsonl"), "--out", str(canonical)]) == 0
    assert dialeval(["validate", "--data", str(canonical)]) == 0
    data = read_jsonl([canonical])
    assert len(data.conversations) == 2
    texts = [turn["text"] for turns in data.conversations["turns"] for turn in turns]
    assert texts == [turn["text"] for c in lines for exchange in c["dialog"] for turn in exchange]
    # each bot is named by its own model, and the QC bot's audit survives in the turn's meta
    retrieval_name = Path(result["paths"]["retrieval"]).parent.name
    for turns, models in zip(data.conversations["turns"], data.conversations["models"]):
        assert models == ["dialeval:qc_bot", retrieval_name]
        assert [t["speaker"] for t in turns[:2]] == ["dialeval:qc_bot", retrieval_name]
        assert turns[0]["meta"]["qc_audit"]["distorted"]


def test_retrieval_answers_the_last_message_of_a_dialogue_given_as_one(tmp_path):
    """PW-Turn (and a conversation carried on after a crash) shows a bot the dialogue so far as one message,
    turns joined by newlines: the retrieval bot answers the last one. Matched against the whole text, the
    opening "Hi!" drew "Hi" whatever was said next (issue 41)."""
    from parlai.core.agents import create_agent

    corpus = tmp_path / "pairs.txt"
    corpus.write_text("Hi!\nHi\n\nDo you like football?\nI am not really into football.\n")
    bot = create_agent({"model": "dialeval:tfidf_retrieval", "retrieval_file": str(corpus),
                        "retrieval_match": "message"})
    assert reply(bot, "Hi!\nHi\nDo you like football?")["text"] == "I am not really into football."
    assert reply(bot, "Do you like football?\nI am not really into football.\nHi!")["text"] == "Hi"


def test_an_hf_lm_bot_with_no_room_to_reply_is_refused_when_made():
    """--hf-max-new-tokens below 1 (from a command line or a task's YAML): one line, before any model loads."""
    from parlai.core.agents import create_agent

    from parlai_dialeval.errors import DialevalError

    with pytest.raises(DialevalError, match="^hf_lm: --hf-max-new-tokens 0: expected an integer >= 1$"):
        create_agent({"model": "dialeval:hf_lm", "hf_max_new_tokens": 0})
