"""Mephisto world of live-chat direct assessment: one HIT = one worker, N blind conversations, then feedback.

Phases sent to the page as ``task_data.phase``: topic -> chat -> rate (or failed) for each slot,
then feedback. The whole state lives in ``LiveChatSession`` (protocol.py); the world sends it to the
page and saves its record in the worker's data folder after every event (platform/session_world.py),
so a worker who disconnects or returns mid-HIT leaves their partial data behind, and ``export.py``
turns it into canonical records marked incomplete. A bot that fails ends its slot only; a worker back
after a crash carries on the same HIT where it stopped, half chat included (platform/resume.py).
"""
from __future__ import annotations

import random
import time

from parlai_dialeval.crowdsourcing.live_chat_da.criteria import STATEMENTS
from parlai_dialeval.crowdsourcing.live_chat_da.protocol import LiveChatSession, plan_hit
from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.participant_input import Refused, bounded_text
from parlai_dialeval.crowdsourcing.platform.session_world import SessionWorld

RECORD_FILE = "dialeval_live_chat.json"
BOT_ID = "Chatbot"
MAX_INPUTS = 100  # the default of live_chat.max_inputs
TOO_MANY_INPUTS = "This conversation has reached its {limit} messages: please press 'Next chatbot'."
FAILURE_TEXT = ("Sorry, this chatbot has stopped working. Your conversation so far has been saved and "
                "you will not be penalised. Please continue with the next chatbot.")
ATTENTION_VALUES = (10, 20, 30, 40, 60, 70, 80, 90)  # an attention slider's instructed value (never 50: its start)


def get_world_params() -> dict:
    return {"agent_count": 1}


def make_world(opt: dict, agents: list, initialization_data=None) -> "LiveChatWorld":
    return LiveChatWorld(opt, agents[0])


class LiveChatWorld(SessionWorld):
    record_file = RECORD_FILE

    def __init__(self, opt: dict, agent):
        super().__init__(opt, agent)
        min_inputs = int(opt["min_inputs"])
        if self.saved is None:
            self.session = LiveChatSession.new(self.models, self.pool.qc_models, min_inputs,
                                               bool(opt.get("ice_breaker")), *self._plan_checks())
            self._start_slot()
            return
        self.session = LiveChatSession.continued(dict(self.saved["record"]), min_inputs)
        phase = self.session.phase
        if phase == "done":
            self._finish("complete")
        elif phase == "topic":
            self._start_slot()
        elif phase == "chat":
            self._carry_on_chat()
        else:
            self._send(**(self._rating_state() if phase == "rate" else {}))

    def _plan_checks(self) -> tuple[dict[int, dict], dict]:
        """(slot -> the attention slider of its rating screen, the launch's checks rule): platform/checks.py."""
        args = checks.ChecksArgs(**(self.opt.get("checks") or {}))
        rng = random.Random(self.pool.randint(0, 2 ** 31))
        slots = checks.positions(args.attention, list(args.attention_at), len(self.models), rng, "attention")
        return ({slot: {"value": rng.choice(ATTENTION_VALUES), "position": rng.randint(0, len(STATEMENTS))}
                 for slot in slots}, checks.rule(args))

    def _rating_state(self) -> dict:
        """What the rating screen shows: the statements and, where planned, the attention slider (not its answer)."""
        attention = self.session.conversation.get("attention")
        return {"statements": list(STATEMENTS),
                "attention": {k: attention[k] for k in ("value", "position")} if attention else None}

    def _carry_on_chat(self) -> None:
        """A half chat after a crash: the page shows it again and a fresh bot goes on with it, answering
        first when the worker's last message was stored without its reply."""
        conv = self.session.conversation
        self._send(clear_messages=True, topic=self.session.current_topic, ice_breaker=bool(conv["persona"]),
                   persona=conv["persona"])
        self.show_history(conv["turns"], BOT_ID)
        if self.bot_turn(lambda: self.session.meet(self.pool.new_bot(conv["model"]))) is not None and (
                conv["turns"] and conv["turns"][-1]["speaker"] == "human"):
            self._reply()
        self.save()

    # ---------------------------------------------------------------- SessionWorld hooks
    def saved_models(self, record: dict) -> list[str]:
        """The saved HIT goes on: same slots, same model order."""
        return [conv["model"] for conv in record["conversations"]]

    def choose_models(self, num_models: int) -> list[str]:
        return plan_hit(self.pool, int(self.opt["num_slots"]))

    def record(self) -> dict:
        return {**self.session.record, "last_event": time.time(), "dropped_acts": self.flood.dropped,
                **self.resume_fields()}

    def bot_failed(self, error: str) -> None:
        """A bot that fails (or cannot even start) ends its conversation only; the HIT goes on."""
        self.release(self.session.fail(error))
        self._send(failure_text=FAILURE_TEXT)

    def end_session(self, status: str) -> list[str]:
        """Models whose conversation was neither rated nor failed (a failed one went back when it failed)."""
        return self.session.stop()

    # ---------------------------------------------------------------- page updates
    def _send(self, **state) -> None:
        session = self.session
        self.observe_state({"phase": session.phase, "slot": session.slot, "num_slots": session.num_slots,
                            "min_inputs": session.min_inputs, "inputs": session.inputs, "bot_id": BOT_ID,
                            "warning": None, "streaming": None, "attention": None, **state})

    def _start_slot(self) -> None:
        persona = None
        if self.session.record["ice_breaker"]:
            sentences = self.pool.personas.get(self.session.conversation["model"]) or self.opt.get("ice_breakers") or []
            persona = self.pool.choice(sentences) if sentences else None
        self.session.start_slot(persona)
        self._send(clear_messages=True, ice_breaker=persona is not None, persona=persona, topic=None)

    def _next_slot(self) -> None:
        if self.session.next_slot():
            self._start_slot()
        else:
            self._send()

    # ---------------------------------------------------------------- ParlAI world API
    def parley(self) -> None:
        taken = self.take()
        if taken is None:
            return
        text, data = taken
        handler = getattr(self, f"_on_{self.session.phase}")
        try:
            handler(data.get("action"), text, data)
        except Refused as refusal:
            self.refuse(str(refusal))
            return
        self.save()

    def _topic(self, data: dict) -> str:
        return bounded_text(data.get("topic"), self.limits.max_topic_chars, "topic")

    # ---------------------------------------------------------------- phases
    def _on_topic(self, action, text, data) -> None:
        try:
            topic = self.session.choose_topic(action, self._topic(data), data.get("attitude"))
        except ValueError as warning:
            self._send(warning=str(warning))
            return
        model = self.session.conversation["model"]
        if self.bot_turn(lambda: self.session.meet(self.pool.new_bot(model))) is not None:
            self._send(topic=topic)

    def _on_chat(self, action, text, data) -> None:
        if action == "topic_change":
            topic = self.session.change_topic(self._topic(data))
            if topic is not None:
                self._send(topic=topic)
            return
        if action == "next":
            try:
                self.session.end_chat()
            except ValueError as warning:
                self._send(topic=self.session.current_topic, warning=str(warning))
                return
            self._send(**self._rating_state())
            return
        if not text.strip():
            return
        if self.session.inputs >= int(self.opt.get("max_inputs") or MAX_INPUTS):
            raise Refused(TOO_MANY_INPUTS.format(limit=self.session.inputs))
        self.session.human_says(text, self.answer_record(data, text))
        if self.resent:  # sent before a relaunch: the reloaded page lost it from its chat log
            self.show_history(self.session.conversation["turns"][-1:], BOT_ID)
        self.save_and_confirm()  # the message shows as sent, and counted, before the reply streams
        self.show({"inputs": self.session.inputs, "warning": None})
        self._reply()

    def _reply(self) -> None:
        # the reply shows as it arrives (task_data.streaming), then once whole as the bot's message
        with self.streaming(self.session.bot):
            turn = self.bot_turn(self.session.bot_replies)
        if turn is not None:
            # an empty reply is recorded as it is, and shown as an empty bubble so the worker sees a turn
            # a reply the token limit cut mid-sentence is marked on the page (its meta keeps finish_reason)
            cut = turn.get("meta", {}).get("finish_reason") == "length"
            self.agent.observe({"id": BOT_ID, "text": turn["text"] if turn["text"].strip() else " ",
                                "dialeval_cut": cut,
                                "task_data": {"inputs": self.session.inputs, "warning": None, "streaming": None}})

    def _on_rate(self, action, text, data) -> None:
        try:
            self.session.rate(data.get("values") if action == "rating" else None, data.get("attention"),
                              self.answer_record(data))
        except ValueError as warning:
            self._send(**self._rating_state(), warning=str(warning))
            return
        self._next_slot()

    def _on_failed(self, action, text, data) -> None:
        if action == "next":
            self._next_slot()

    def _on_feedback(self, action, text, data) -> None:
        if action == "feedback":
            feedback = bounded_text(data.get("feedback"), self.limits.max_free_text_chars, "feedback")
            self.session.give_feedback(feedback, self.answer_record(data, feedback))
            self._finish("complete")
