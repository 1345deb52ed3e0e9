"""Live-chat DA rules (Ji et al. 2022, Sec. 3) as plain Python: LiveChatSession driven without Mephisto."""
from __future__ import annotations

import copy

import pytest
from parlai.agents.repeat_query.repeat_query import RepeatQueryAgent

from parlai_dialeval.crowdsourcing.live_chat_da.criteria import CRITERION_NAMES
from parlai_dialeval.crowdsourcing.live_chat_da.protocol import LiveChatSession, plan_hit
from parlai_dialeval.crowdsourcing.platform.bots import BotPool

ECHO = {"opt": {"model": "repeat_query"}}
MODELS = ["a", "qc", "b", "c"]


class SilentBot:
    """A bot whose act carries no text (an endpoint answering nothing usable)."""

    def observe(self, observation):
        self.observation = observation

    def act(self):
        return {"id": "silent", "episode_done": False}


def chat(session: LiveChatSession, messages: list[str], topic="books") -> None:
    session.choose_topic("topic", topic, "like")
    session.meet(RepeatQueryAgent({}))
    for text in messages:
        session.human_says(text)
        session.bot_replies()


@pytest.mark.parametrize("seed", range(12))
def test_plan_puts_one_qc_bot_never_first_or_last_and_each_genuine_model_once(seed):
    pool = BotPool({"qc": ECHO, "a": ECHO, "b": ECHO, "c": ECHO, "d": ECHO}, ["qc"], seed=seed)
    plan = plan_hit(pool, 5)
    assert plan.count("qc") == 1 and plan[0] != "qc" and plan[-1] != "qc"
    assert sorted(m for m in plan if m != "qc") == ["a", "b", "c", "d"]
    assert sum(pool.assigned.values()) == 5  # every slot's model is reserved (released if never rated)


def test_plan_needs_room_for_the_qc_bot_between_two_genuine_models():
    pool = BotPool({"qc": ECHO, "a": ECHO}, ["qc"], seed=0)
    with pytest.raises(ValueError, match="at least 3 conversations"):
        plan_hit(pool, 2)


def test_a_whole_hit_topic_chat_rate_for_every_slot_then_feedback():
    session = LiveChatSession.new(MODELS, ["qc"], min_inputs=2, ice_breaker=False)
    record = session.record
    assert [c["qc"] for c in record["conversations"]] == [False, True, False, False]
    assert (session.phase, session.slot, session.num_slots) == ("topic", 0, 4)
    for slot in range(4):
        chat(session, [f"hello {slot}", f"more {slot}"])
        session.end_chat()
        assert session.phase == "rate" and session.conversation["status"] == "rating"
        session.rate([10 * slot + k for k in range(7)])
        assert session.conversation["ratings"] == {c: float(10 * slot + k) for k, c in enumerate(CRITERION_NAMES)}
        assert session.next_slot() is (slot < 3)
    assert session.phase == "feedback" and session.slot == 3
    session.give_feedback("fine")
    assert session.phase == "done" and record["finished"] and record["feedback"] == "fine"
    assert [c["status"] for c in record["conversations"]] == ["complete"] * 4
    # the echo bot answers every message with the message: human and bot alternate, bot named by its model
    assert [(t["speaker"], t["text"]) for t in record["conversations"][1]["turns"]] == [
        ("human", "hello 1"), ("qc", "hello 1"), ("human", "more 1"), ("qc", "more 1")]
    assert session.stop() == []  # a finished HIT gives no model back


def test_topic_attitude_minimum_inputs_and_rating_are_checked():
    session = LiveChatSession.new(MODELS, ["qc"], min_inputs=2, ice_breaker=False)
    for action, topic, attitude in (("topic", "  ", "like"), ("topic", "books", "adore"), ("message", "books", "like")):
        with pytest.raises(ValueError, match="enter a topic and say how you feel"):
            session.choose_topic(action, topic, attitude)
    assert session.phase == "topic" and session.conversation["status"] == "pending"
    chat(session, ["only one"], topic=" books ")
    assert session.conversation["topic"] == "books" and session.conversation["topic_attitude"] == "like"
    with pytest.raises(ValueError, match=r"at least 2 inputs before moving on \(you have typed 1\)"):
        session.end_chat()
    assert session.phase == "chat"
    for bad in ([50] * 6, [50] * 6 + [101], [50] * 6 + [True], None, [50] * 6 + ["50"]):
        with pytest.raises(ValueError, match="move every slider"):
            session.rate(bad)
    assert session.conversation["ratings"] is None


def test_topic_changes_keep_the_turn_they_came_after_and_become_the_bots_context():
    session = LiveChatSession.new(MODELS, ["qc"], min_inputs=1, ice_breaker=False)
    chat(session, ["first"])
    assert session.change_topic("   ") is None and session.current_topic == "books"
    assert session.change_topic(" films ") == "films"
    session.human_says("second")
    session.bot_replies()
    assert [(c["topic"], c["after_turn"]) for c in session.conversation["topic_changes"]] == [("films", 2)]
    assert session.bot.observation["context"] == "films" and session.current_topic == "films"
    assert session.inputs == 2


def test_ice_breaker_persona_is_the_topic_whatever_the_worker_typed():
    session = LiveChatSession.new(MODELS, ["qc"], min_inputs=1, ice_breaker=True)
    session.start_slot("I have two dogs.")
    assert session.choose_topic("topic", "something else", "ambivalent") == "I have two dogs."
    assert session.conversation["persona"] == session.conversation["topic"] == "I have two dogs."
    plain = LiveChatSession.new(MODELS, ["qc"], min_inputs=1, ice_breaker=False)
    plain.start_slot("ignored")
    assert plain.conversation["persona"] is None


def test_a_failed_bot_ends_its_slot_only_keeping_the_unanswered_message():
    session = LiveChatSession.new(MODELS, ["qc"], min_inputs=1, ice_breaker=False)
    session.choose_topic("topic", "books", "like")
    session.meet(SilentBot())
    session.human_says("hello?")
    with pytest.raises(RuntimeError, match="returned no text"):
        session.bot_replies()
    assert session.fail("RuntimeError: the bot returned no text") == "a"
    conv = session.conversation
    assert (session.phase, session.bot, conv["status"]) == ("failed", None, "failed")
    assert [t["text"] for t in conv["turns"]] == ["hello?"] and conv["error"].startswith("RuntimeError")
    assert session.next_slot() and session.slot == 1  # the HIT goes on with the next chatbot
    session.start_slot(None)
    assert session.phase == "topic" and session.conversation["status"] == "pending"


def test_an_empty_reply_is_kept_as_a_turn():
    class EmptyBot(SilentBot):
        def act(self):
            return {"id": "empty", "text": "", "episode_done": False}

    session = LiveChatSession.new(MODELS, ["qc"], min_inputs=1, ice_breaker=False)
    session.choose_topic("topic", "books", "like")
    session.meet(EmptyBot())
    session.human_says("hi")
    assert session.bot_replies()["text"] == ""
    assert [t["speaker"] for t in session.conversation["turns"]] == ["human", "a"]


def test_a_worker_who_leaves_gives_back_the_models_not_rated_or_failed():
    session = LiveChatSession.new(MODELS, ["qc"], min_inputs=1, ice_breaker=False)
    chat(session, ["x"])
    session.end_chat()
    session.rate([50] * 7)
    session.next_slot()
    session.start_slot(None)
    session.choose_topic("topic", "books", "like")
    session.fail("RuntimeError: boom")
    session.next_slot()
    session.start_slot(None)
    chat(session, ["half"])
    assert session.stop() == ["b", "c"]
    assert [c["status"] for c in session.record["conversations"]] == ["complete", "failed", "incomplete", "incomplete"]


def saved_hit(third_status: str) -> dict:
    """A record left by an interrupted run: slot 0 rated, slot 1 failed, slot 2 ``third_status``, slot 3 not reached."""
    session = LiveChatSession.new(MODELS, ["qc"], min_inputs=1, ice_breaker=False)
    convs = session.record["conversations"]
    convs[0].update(status="complete", ratings={c: 50.0 for c in CRITERION_NAMES})
    convs[1].update(status="failed", error="RuntimeError: boom")
    convs[2].update(status=third_status, topic="books", turns=[{"speaker": "human", "text": "half", "time": 1.0},
                                                               {"speaker": "b", "text": "half", "time": 2.0}])
    return copy.deepcopy(session.record)


class Recorder:
    """A bot that notes what it observes and answers 'ok'."""

    def __init__(self):
        self.observed = []

    def observe(self, message):
        self.observed.append(message)

    def act(self):
        return {"text": "ok"}


@pytest.mark.parametrize("status", ["chatting", "incomplete"])  # incomplete: a run stopped less abruptly
def test_continuing_carries_on_a_half_chat_with_a_fresh_bot_given_the_conversation_so_far(status):
    saved = saved_hit(status)
    saved["conversations"][2]["started"] = 1.0
    session = LiveChatSession.continued(copy.deepcopy(saved), min_inputs=1)
    convs = session.record["conversations"]
    assert (session.phase, session.slot, session.inputs) == ("chat", 2, 1)
    assert [c["model"] for c in convs] == MODELS and [c["qc"] for c in convs] == [False, True, False, False]
    assert convs[:2] == saved["conversations"][:2]  # finished conversations kept as they were
    assert convs[2]["status"] == "chatting" and [t["text"] for t in convs[2]["turns"]] == ["half", "half"]
    bot = session.meet(Recorder())
    session.human_says("and then?")
    session.bot_replies()
    session.human_says("really?")
    session.bot_replies()
    # the fresh bot gets the whole conversation once (ParlAI's newline delimiter), then each message
    assert [m["text"] for m in bot.observed] == ["half\nhalf\nand then?", "really?"]
    assert [t["text"] for t in convs[2]["turns"]] == ["half", "half", "and then?", "ok", "really?", "ok"]


def test_continuing_a_conversation_waiting_for_its_rating_goes_on_to_the_rating():
    session = LiveChatSession.continued(saved_hit("rating"), min_inputs=1)
    assert (session.phase, session.slot) == ("rate", 2)
    assert session.inputs == 1  # the chat is kept whole
    session.rate([60] * 7)
    assert session.next_slot() and session.slot == 3


def test_continuing_after_every_slot_ended_asks_for_feedback_and_after_feedback_is_done():
    record = saved_hit("complete")
    record["conversations"][3]["status"] = "failed"
    session = LiveChatSession.continued(copy.deepcopy(record), min_inputs=1)
    assert (session.phase, session.slot) == ("feedback", 3)
    record["finished"] = True
    assert LiveChatSession.continued(record, min_inputs=1).phase == "done"
