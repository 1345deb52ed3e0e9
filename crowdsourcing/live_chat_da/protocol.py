"""Live-chat direct assessment (Ji et al. 2022, Sec. 3) as plain Python, driven by the Mephisto world.

One HIT = one worker, ``num_slots`` blind conversations, then feedback. Each slot goes through the
phases topic -> chat -> rate (or failed, when its bot stops working); the worker needs ``min_inputs``
messages before rating and may change the topic mid-chat; the seven statements are rated on 0-100
sliders (wordings in parlai_dialeval.protocols.ji2022). One QC bot per HIT, never first or last.

The whole HIT lives in ``LiveChatSession.record``, the dict the world saves after every event and
``export.py`` reads; ``LiveChatSession.continued`` carries on a record left by an interrupted run.
"""
from __future__ import annotations

import time

from parlai_dialeval.crowdsourcing.live_chat_da.criteria import ATTITUDES, CRITERION_NAMES
from parlai_dialeval.crowdsourcing.platform.bots import turn_meta
from parlai_dialeval.crowdsourcing.platform.resume import history_observation

TASK_TYPE = "live_chat_da"
TOPIC_MISSING = "Please enter a topic and say how you feel about it."
RATING_MISSING = "Please move every slider."
TOO_FEW_INPUTS = "Please type at least {minimum} inputs before moving on (you have typed {inputs})."
OVER = ("complete", "failed")  # a conversation in these states is over for good


def plan_hit(pool, num_slots: int) -> list[str]:
    """The model of each slot: genuine models in random order, one QC bot never first or last."""
    if num_slots < 3:
        raise ValueError("a live-chat HIT needs at least 3 conversations (the QC bot is never first or last)")
    plan = pool.shuffle(pool.reserve(num_slots - 1))
    qc = pool.reserve(1, qc=True)[0]
    plan.insert(pool.randint(1, num_slots - 2), qc)
    return plan


def new_conversation(slot: int, model: str, qc: bool, attention: dict | None = None) -> dict:
    """A slot's conversation; ``attention``: its rating screen's attention check ({value, position}), or None."""
    return {"slot": slot, "model": model, "qc": qc, "status": "pending", "turns": [], "topic": None,
            "topic_attitude": None, "persona": None, "topic_changes": [], "started": None, "ended": None,
            "ratings": None, "rating_started": None, "rating_ended": None, "error": None, "attention": attention,
            "rating_provenance": None}


def parse_rating(values) -> dict[str, float]:
    """The seven slider values -> {criterion: value}; ValueError unless seven numbers in 0..100."""
    if not (isinstance(values, list) and len(values) == len(CRITERION_NAMES) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 100 for v in values)):
        raise ValueError(RATING_MISSING)
    return dict(zip(CRITERION_NAMES, (float(v) for v in values)))


class LiveChatSession:
    """One worker's HIT: ``record`` (saved as it is), the ``slot`` and ``phase`` it is in, the slot's bot."""

    def __init__(self, record: dict, min_inputs: int, slot: int = 0, phase: str = "topic"):
        self.record, self.min_inputs, self.slot, self.phase = record, min_inputs, slot, phase
        self.bot = None
        self.resumed = False  # the slot's bot is new to a conversation under way (after a crash)

    @classmethod
    def new(cls, models: list[str], qc_models: list[str], min_inputs: int, ice_breaker: bool,
            attention: dict[int, dict] | None = None, checks_rule: dict | None = None) -> "LiveChatSession":
        """A fresh HIT with one slot per model (``plan_hit``), waiting for the first slot's topic; ``attention``:
        slot -> its rating screen's attention check ({value, position}); ``checks_rule``: the launch's
        (platform/checks.py ``rule``), kept for the export."""
        now = time.time()
        attention = attention or {}
        record = {"dialeval_task": TASK_TYPE, "version": 1, "started": now, "ended": None, "last_event": now,
                  "qc_models": list(qc_models), "ice_breaker": ice_breaker, "min_inputs": min_inputs,
                  "feedback": None, "feedback_provenance": None, "finished": False, "checks": checks_rule,
                  "conversations": [new_conversation(slot, name, name in qc_models, attention.get(slot))
                                    for slot, name in enumerate(models)]}
        return cls(record, min_inputs)

    @classmethod
    def continued(cls, record: dict, min_inputs: int) -> "LiveChatSession":
        """Carry on a saved HIT where it stopped: same slots and model order, every turn kept; a half chat
        goes on with a fresh bot given the conversation so far (``resumed``), one waiting for its rating
        goes on to the rating. The phase is ``done`` when the worker had already given their feedback."""
        conversations = record["conversations"]
        waiting = [conv["slot"] for conv in conversations if conv["status"] not in OVER]
        last = len(conversations) - 1
        if record.get("finished"):
            return cls(record, min_inputs, last, "done")
        if not waiting:
            return cls(record, min_inputs, last, "feedback")
        slot = waiting[0]
        conv = conversations[slot]
        if conv["status"] == "incomplete":  # a run stopped less abruptly marked it so (``stop``)
            conv["status"] = "rating" if conv["rating_started"] else "chatting" if conv["started"] else "pending"
        phase = {"rating": "rate", "chatting": "chat"}.get(conv["status"], "topic")
        session = cls(record, min_inputs, slot, phase)
        session.resumed = phase == "chat" and bool(conv["turns"])
        return session

    # ---------------------------------------------------------------- what the page shows
    @property
    def conversation(self) -> dict:
        return self.record["conversations"][self.slot]

    @property
    def num_slots(self) -> int:
        return len(self.record["conversations"])

    @property
    def inputs(self) -> int:
        """The worker's messages in this conversation: the page shows this count, never its own."""
        return sum(turn["speaker"] == "human" for turn in self.conversation["turns"])

    @property
    def current_topic(self) -> str:
        conv = self.conversation
        return conv["topic_changes"][-1]["topic"] if conv["topic_changes"] else conv["topic"]

    # ---------------------------------------------------------------- one slot
    def start_slot(self, persona: str | None) -> None:
        """The slot waits for its topic; ``persona``: the ice-breaker statement prescribed as the topic."""
        self.phase = "topic"
        if self.record["ice_breaker"]:
            self.conversation["persona"] = persona

    def choose_topic(self, action, topic: str, attitude) -> str:
        """The worker's topic (the prescribed persona in ice-breaker mode) and attitude; the chat starts."""
        conv = self.conversation
        topic = conv["persona"] if conv["persona"] else topic.strip()
        if action != "topic" or not topic or attitude not in ATTITUDES:
            raise ValueError(TOPIC_MISSING)
        conv.update(topic=topic, topic_attitude=attitude, started=time.time(), status="chatting")
        self.phase = "chat"
        return topic

    def meet(self, bot):
        """The slot's bot (a fresh ParlAI agent of its model); returns it."""
        self.bot = bot
        return bot

    def change_topic(self, topic: str) -> str | None:
        """A new topic mid-chat, kept with the turn it came after; None when empty."""
        topic = topic.strip()
        if not topic:
            return None
        conv = self.conversation
        conv["topic_changes"].append({"topic": topic, "time": time.time(), "after_turn": len(conv["turns"])})
        return topic

    def human_says(self, text: str, provenance: dict | None = None) -> None:
        """The worker's message; ``provenance``: how the page saw it made (platform/answer_record.py)."""
        turn = {"speaker": "human", "text": text, "time": time.time()}
        if provenance is not None:
            turn["provenance"] = provenance
        self.conversation["turns"].append(turn)

    def bot_replies(self) -> dict:
        """The bot's answer to the worker's last message, added as a turn; raises when the bot fails or
        answers no text (an empty text is kept as it is)."""
        conv = self.conversation
        # context: the topic (or ice-breaker persona) for bots that place it (dialeval:openai_chat)
        self.bot.observe(history_observation(conv["turns"] if self.resumed else conv["turns"][-1:],
                                             self.current_topic))
        self.resumed = False
        reply = self.bot.act()
        reply_text = (reply or {}).get("text")
        if not isinstance(reply_text, str):
            raise RuntimeError(f"the bot returned no text: {reply!r}")
        turn = {"speaker": conv["model"], "text": reply_text, "time": time.time()}
        if turn_meta(reply):
            turn["meta"] = turn_meta(reply)
        conv["turns"].append(turn)
        return turn

    def end_chat(self) -> None:
        """'Next chatbot': on to the rating, once the worker typed ``min_inputs`` messages."""
        if self.inputs < self.min_inputs:
            raise ValueError(TOO_FEW_INPUTS.format(minimum=self.min_inputs, inputs=self.inputs))
        now = time.time()
        self.conversation.update(ended=now, rating_started=now, status="rating")
        self.phase = "rate"

    def rate(self, values, attention=None, provenance: dict | None = None) -> None:
        """The seven values; ``attention``: the attention slider's value where the screen had one (required
        then: the page shows it among the others); ``provenance``: the screen's record."""
        conv = self.conversation
        check = conv.get("attention")
        if check is not None and not (isinstance(attention, (int, float)) and not isinstance(attention, bool)
                                      and 0 <= attention <= 100):
            raise ValueError(RATING_MISSING)
        ratings = parse_rating(values)
        if check is not None:
            conv["attention"] = {**check, "answer": float(attention)}
        conv.update(ratings=ratings, rating_ended=time.time(), status="complete", rating_provenance=provenance)

    def fail(self, error: str) -> str:
        """The slot's bot stopped working: its conversation ends as failed; returns its model."""
        conv = self.conversation
        conv.update(status="failed", ended=time.time(), error=error)
        self.bot, self.phase = None, "failed"
        return conv["model"]

    # ---------------------------------------------------------------- the HIT
    def next_slot(self) -> bool:
        """Move on to the next slot (True; the caller starts it) or, after the last, to feedback (False)."""
        self.bot = None
        if self.slot + 1 < self.num_slots:
            self.slot += 1
            return True
        self.phase = "feedback"
        return False

    def give_feedback(self, feedback: str, provenance: dict | None = None) -> None:
        self.record.update(feedback=feedback, ended=time.time(), finished=True, feedback_provenance=provenance)
        self.phase = "done"

    def stop(self) -> list[str]:
        """The HIT ends: conversations neither rated nor failed become ``incomplete``; returns their models."""
        unfinished = [conv for conv in self.record["conversations"] if conv["status"] not in OVER]
        for conv in unfinished:
            conv["status"] = "incomplete"
        return [conv["model"] for conv in unfinished]
