"""SM-Turn + SM-Dialog world logic (Smith et al. 2022, 3.1.4) and canonical export."""
from __future__ import annotations

import pytest
from parlai.agents.repeat_query.repeat_query import RepeatQueryAgent

from parlai_dialeval.crowdsourcing.sm_eval import export, protocol
from parlai_dialeval.data import from_records

MESSAGES = ["I enjoy cooking Italian food", "Pasta with fresh basil is my favourite", "Do you cook at all?",
            "I also like long walks", "What music do you like?"]
MARKS = [["engaging"], ["none"], ["engaging", "humanlike"], ["interesting"], ["none"], ["humanlike"]]


def full_session():
    session = protocol.SingleModelSession(RepeatQueryAgent({}), "repeat_query", persona=["I like cooking."])
    first = session.start()
    assert first["text"] == "Hi!"  # repeat_query echoes the fixed opening
    session.annotate(first["turn_index"], MARKS[0])
    for text, marks in zip(MESSAGES, MARKS[1:]):
        reply = session.human_says(text)
        session.annotate(reply["turn_index"], marks)
    session.rate({"engaging": 4, "humanlike": 2, "interesting": 5})
    return session


def test_six_turns_each_with_fixed_opening():
    session = full_session()
    assert [t["speaker"] for t in session.turns] == ["human", "repeat_query"] * 6
    assert session.turns[0]["meta"] == {"fixed": True}
    assert session.chat_done
    with pytest.raises(RuntimeError):
        session.human_says("one more")


def test_annotation_rules():
    assert protocol.parse_annotation(["none"]) == {"engaging": 0, "humanlike": 0, "interesting": 0}
    for bad in ([], ["none", "engaging"], ["funny"]):
        with pytest.raises(ValueError):
            protocol.parse_annotation(bad)
    session = protocol.SingleModelSession(RepeatQueryAgent({}), "m")
    session.start()
    with pytest.raises(RuntimeError):  # the bot turn must be annotated first
        session.human_says("next")
    with pytest.raises(RuntimeError):
        session.rate({"engaging": 3, "humanlike": 3, "interesting": 3})


def test_export_binary_turn_ratings_and_likert_dialog_ratings():
    session = full_session()
    data = from_records([export.study_record("s")] + export.unit_records(
        session.state(), study="s", worker_id="w", assignment_id="a", conversation_id="c1", duration=60.0))
    turn = data.ratings[data.ratings["scale"] == "binary"]
    assert len(turn) == 18
    assert sorted(set(turn["turn_index"])) == [1, 3, 5, 7, 9, 11]
    # hand count from MARKS: engaging ticked twice, humanlike twice, interesting once
    assert turn.groupby("criterion")["value"].sum().to_dict() == {"engaging": 2, "humanlike": 2, "interesting": 1}
    dialog = data.ratings[data.ratings["scale"] == "likert"].set_index("criterion")["value"]
    assert dialog.to_dict() == {"engaging": 4, "humanlike": 2, "interesting": 5}
    assert data.ratings.loc[data.ratings["scale"] == "likert", "turn_index"].isna().all()
    conv = data.conversations.iloc[0]
    assert conv["personas"] == {"human": ["I like cooking."]}
    assert not any(conv["meta"]["worker_checks"].values())


class Recorder:
    """A bot that notes what it observes and answers 'ok'."""

    def __init__(self):
        self.observed = []

    def observe(self, message):
        self.observed.append(message["text"])

    def act(self):
        return {"text": "ok"}


def test_a_conversation_carried_on_after_a_crash_gives_the_fresh_bot_all_of_it_once():
    bot = Recorder()
    saved = [{"speaker": "human", "text": "Hi!", "time": 1.0}, {"speaker": "m", "text": "hello", "time": 2.0}]
    session = protocol.SingleModelSession(bot, "m", turns=list(saved), annotations={1: {"engaging": 1}}, resumed=True)
    session.human_says("how are you?")
    session.annotate(3, ["none"])
    session.human_says("fine?")
    # the whole conversation once (ParlAI's newline history), then each message as usual
    assert bot.observed == ["Hi!\nhello\nhow are you?", "fine?"]
