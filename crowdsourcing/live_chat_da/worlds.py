"""The live-chat direct-assessment world: one HIT = one worker, N blind conversations, then feedback.

Phases sent to the page as ``task_data.phase``: topic -> chat -> rate (or failed) for each slot,
then feedback. The world keeps a record of everything (``record``) and writes it to the worker's
Mephisto data folder after every event, so a worker who disconnects or returns mid-HIT leaves
their partial data behind, and ``export.py`` turns it into canonical records marked incomplete.
"""
from __future__ import annotations

import time
from typing import Any

from mephisto.data_model.exceptions import AbsentAgentError

from parlai_dialeval.crowdsourcing.live_chat_da.criteria import ATTITUDES, CRITERION_NAMES, STATEMENTS
from parlai_dialeval.crowdsourcing.platform.bots import turn_meta
from parlai_dialeval.crowdsourcing.platform.resume import CONTINUED_FROM, take_resumable
from parlai_dialeval.crowdsourcing.platform.session_world import SYSTEM_ID, save_record

TASK_TYPE = "live_chat_da"
RECORD_FILE = "dialeval_live_chat.json"
BOT_ID = "Chatbot"
FAILURE_TEXT = ("Sorry, this chatbot has stopped working. Your conversation so far has been saved and "
                "you will not be penalised. Please continue with the next chatbot.")


def get_world_params() -> dict:
    return {"agent_count": 1}


def make_world(opt: dict, agents: list, initialization_data=None) -> "LiveChatWorld":
    return LiveChatWorld(opt, agents[0])


def plan_hit(pool, num_slots: int) -> list[tuple[str, bool]]:
    """(model, is_qc) per slot: genuine models in random order, one QC bot never first or last."""
    if num_slots < 3:
        raise ValueError("a live-chat HIT needs at least 3 conversations (the QC bot is never first or last)")
    genuine = pool.shuffle(pool.reserve(num_slots - 1))
    qc = pool.reserve(1, qc=True)[0]
    position = pool.randint(1, num_slots - 2)
    plan = [(name, False) for name in genuine]
    plan.insert(position, (qc, True))
    return plan


def new_conversation(slot: int, model: str, qc: bool) -> dict:
    return {"slot": slot, "model": model, "qc": qc, "status": "pending", "turns": [], "topic": None,
            "topic_attitude": None, "persona": None, "topic_changes": [], "started": None, "ended": None,
            "ratings": None, "rating_started": None, "rating_ended": None, "error": None}


class LiveChatWorld:
    def __init__(self, opt: dict, agent):
        self.opt = opt
        self.agent = agent
        self.pool = opt["pool"]
        self.min_inputs = int(opt["min_inputs"])
        self.timeout = opt.get("turn_timeout")
        self.bot = None
        self._done = False
        saved = take_resumable(opt, agent)
        if saved is not None:
            self._continue(saved)
            return
        self.plan = plan_hit(self.pool, int(opt["num_slots"]))
        self.reserved = [name for name, _ in self.plan]  # given back to the pool if never rated
        now = time.time()
        self.record: dict[str, Any] = {
            "dialeval_task": TASK_TYPE, "version": 1, "started": now, "ended": None, "last_event": now,
            "qc_models": list(self.pool.qc_models), "ice_breaker": bool(opt.get("ice_breaker")),
            "min_inputs": self.min_inputs, "feedback": None, "finished": False,
            "conversations": [new_conversation(slot, name, is_qc) for slot, (name, is_qc) in enumerate(self.plan)],
        }
        self.slot = 0
        self._start_slot()

    def _continue(self, saved: dict) -> None:
        """Carry on the worker's unit of an interrupted run (platform/resume.py): same slots and model order,
        finished conversations kept; a conversation waiting for its rating goes on to the rating; a half
        chat cannot (its bot's state died with the old process), so it is kept apart as ``incomplete``
        (exported with the unit) and its slot starts again."""
        self.record = saved["record"]
        self.record[CONTINUED_FROM] = saved["agent_id"]
        self.record.setdefault("restarted", [])
        conversations = self.record["conversations"]
        self.plan = [(conv["model"], conv["qc"]) for conv in conversations]
        self.reserved = []  # this launch's pool never counted these models
        for conv in conversations:
            if conv["status"] in ("complete", "failed", "rating"):
                continue
            if conv["turns"]:
                self.record["restarted"].append({**conv, "status": "incomplete"})
            conversations[conv["slot"]] = new_conversation(conv["slot"], conv["model"], conv["qc"])
        waiting = [conv["slot"] for conv in conversations if conv["status"] not in ("complete", "failed")]
        if self.record.get("finished"):
            self.slot, self.phase, self._done = len(conversations) - 1, "done", True
        elif not waiting:
            self.slot, self.phase = len(conversations) - 1, "feedback"
            self._send_state()
        elif conversations[waiting[0]]["status"] == "rating":
            self.slot, self.phase = waiting[0], "rate"
            self._send_state(statements=list(STATEMENTS))
        else:
            self.slot = waiting[0]
            self._start_slot()
        self._save()

    def _release(self, model: str) -> None:
        if model in self.reserved:
            self.reserved.remove(model)
            self.pool.release(model)

    # ---------------------------------------------------------------- page updates
    @property
    def conversation(self) -> dict:
        return self.record["conversations"][self.slot]

    def _send_state(self, **state) -> None:
        state.setdefault("warning", None)
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": {
            "phase": self.phase, "slot": self.slot, "num_slots": len(self.plan),
            "min_inputs": self.min_inputs, "inputs": self._inputs(), "bot_id": BOT_ID, **state}})

    def _inputs(self) -> int:
        """The worker's messages in this conversation: the page shows this count, never its own."""
        return sum(turn["speaker"] == "human" for turn in self.conversation["turns"])

    def _save(self) -> None:
        self.record["last_event"] = time.time()
        save_record(self.agent, self.record, RECORD_FILE)

    def _start_slot(self) -> None:
        self.phase = "topic"
        conv = self.conversation
        persona = None
        if self.record["ice_breaker"]:
            sentences = self.pool.personas.get(conv["model"]) or self.opt.get("ice_breakers") or []
            persona = self.pool.choice(sentences) if sentences else None
            conv["persona"] = persona
        self._save()
        self._send_state(clear_messages=True, ice_breaker=persona is not None, persona=persona, topic=None)

    # ---------------------------------------------------------------- ParlAI world API
    def parley(self) -> None:
        try:
            act = self.agent.act(timeout=self.timeout)
        except AbsentAgentError:
            self._abandon()
            raise
        if act is None:
            return
        data = act.get("task_data") or {}
        handler = getattr(self, f"_on_{self.phase}")
        handler(data.get("action"), act.get("text") or "", data)
        self._save()

    def episode_done(self) -> bool:
        return self._done

    def shutdown(self) -> None:
        if not self._done:
            self._abandon()

    def prep_save_data(self, agents) -> dict:
        # Mephisto sends this to the worker's page too: name the record file, never the models in it.
        return {"dialeval_record_file": RECORD_FILE}

    # ---------------------------------------------------------------- phases
    def _on_topic(self, action, text, data) -> None:
        conv = self.conversation
        topic = conv["persona"] if conv["persona"] else str(data.get("topic") or "").strip()
        attitude = data.get("attitude")
        if action != "topic" or not topic or attitude not in ATTITUDES:
            self._send_state(warning="Please enter a topic and say how you feel about it.")
            return
        conv.update(topic=topic, topic_attitude=attitude, started=time.time(), status="chatting")
        self.phase = "chat"
        try:
            self.bot = self.pool.new_bot(conv["model"])
        except Exception as error:  # a model that cannot even start fails its conversation only
            self._fail(error)
            return
        self._send_state(topic=topic)

    def _on_chat(self, action, text, data) -> None:
        conv = self.conversation
        if action == "topic_change":
            topic = str(data.get("topic") or "").strip()
            if topic:
                conv["topic_changes"].append({"topic": topic, "time": time.time(),
                                              "after_turn": len(conv["turns"])})
                self._send_state(topic=topic)
            return
        if action == "next":
            inputs = self._inputs()
            if inputs < self.min_inputs:
                self._send_state(topic=self._current_topic(), warning=(
                    f"Please type at least {self.min_inputs} inputs before moving on "
                    f"(you have typed {inputs})."))
                return
            conv.update(ended=time.time(), rating_started=time.time(), status="rating")
            self.phase = "rate"
            self._send_state(statements=list(STATEMENTS))
            return
        if not text.strip():
            return
        conv["turns"].append({"speaker": "human", "text": text, "time": time.time()})
        self._save()
        try:
            # context: the topic (or ice-breaker persona) for bots that place it (dialeval:openai_chat)
            self.bot.observe({"id": "human", "text": text, "episode_done": False, "context": self._current_topic()})
            reply = self.bot.act()
            reply_text = (reply or {}).get("text")
            if not isinstance(reply_text, str):
                raise RuntimeError(f"the bot returned no text: {reply!r}")
        except Exception as error:  # any bot failure ends this conversation, never the HIT
            self._fail(error)
            return
        turn = {"speaker": conv["model"], "text": reply_text, "time": time.time()}
        if turn_meta(reply):
            turn["meta"] = turn_meta(reply)
        conv["turns"].append(turn)
        # an empty reply is recorded as it is, and shown as an empty bubble so the worker sees a turn
        self.agent.observe({"id": BOT_ID, "text": reply_text if reply_text.strip() else " ",
                            "task_data": {"inputs": self._inputs(), "warning": None}})

    def _on_rate(self, action, text, data) -> None:
        values = data.get("values")
        ok = (action == "rating" and isinstance(values, list) and len(values) == len(CRITERION_NAMES)
              and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 100 for v in values))
        if not ok:
            self._send_state(statements=list(STATEMENTS), warning="Please move every slider.")
            return
        conv = self.conversation
        conv.update(ratings=dict(zip(CRITERION_NAMES, (float(v) for v in values))),
                    rating_ended=time.time(), status="complete")
        self._next_slot()

    def _on_failed(self, action, text, data) -> None:
        if action == "next":
            self._next_slot()

    def _on_feedback(self, action, text, data) -> None:
        if action != "feedback":
            return
        self.record.update(feedback=str(data.get("feedback") or ""), ended=time.time(), finished=True)
        self.phase = "done"
        self._done = True

    # ---------------------------------------------------------------- transitions
    def _current_topic(self) -> str:
        conv = self.conversation
        return conv["topic_changes"][-1]["topic"] if conv["topic_changes"] else conv["topic"]

    def _fail(self, error: Exception) -> None:
        conv = self.conversation
        conv.update(status="failed", ended=time.time(), error=f"{type(error).__name__}: {error}")
        self._release(conv["model"])
        self.bot = None
        self.phase = "failed"
        self._save()
        self._send_state(failure_text=FAILURE_TEXT)

    def _next_slot(self) -> None:
        self.bot = None
        if self.slot + 1 < len(self.plan):
            self.slot += 1
            self._start_slot()
        else:
            self.phase = "feedback"
            self._send_state()

    def _abandon(self) -> None:
        """The worker left: keep what exists, mark unfinished slots, give their models back."""
        if self._done:
            return
        self._done = True
        for conv in self.record["conversations"]:
            if conv["status"] not in ("complete", "failed"):
                conv["status"] = "incomplete"
                self._release(conv["model"])
        self._save()
