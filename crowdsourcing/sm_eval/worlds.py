"""Mephisto world of SM-Turn + SM-Dialog: chat with one model, tick every bot message, rate at the end.

Phases sent to the page as ``task_data.phase``: annotate (the latest bot message) -> chat -> annotate
... -> rate -> done. The whole state lives in ``SingleModelSession``; it is saved with the unit and
after every event in the worker's data folder, so partial work survives a worker who leaves and a worker
back after a crash carries on where they stopped (platform/resume.py).
"""
from __future__ import annotations

import random

from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.participant_input import Refused
from parlai_dialeval.crowdsourcing.platform.session_world import SessionWorld, blind_history
from parlai_dialeval.crowdsourcing.sm_eval.protocol import (CRITERIA, LIKERT_MAX, LIKERT_MIN, LIKERT_PROMPT,
                                                            LIKERT_QUESTIONS, TURN_LABELS, SingleModelSession)

RECORD_FILE = "dialeval_sm_eval.json"
TICK_ONE = "Please tick the boxes that apply (or 'none of the above')."
RATE_ALL = "Please answer every question."


def get_world_params() -> dict:
    return {"agent_count": 1}


def make_world(opt: dict, agents: list, initialization_data=None) -> "SingleModelWorld":
    return SingleModelWorld(opt, agents[0])


class SingleModelWorld(SessionWorld):
    record_file = RECORD_FILE

    def __init__(self, opt: dict, agent):
        super().__init__(opt, agent, num_models=1)
        self.model = self.models[0]
        personas = opt.get("worker_personas") or []
        persona = list(self.pool.choice(personas)) if personas else []
        self.session = SingleModelSession(self.pool.new_bot(self.model), self.model, int(opt["num_turns"]), persona,
                                          rng=random.Random(self.pool.randint(0, 2 ** 31)))
        self._plan_checks()
        if self.saved is not None and self.saved["record"].get("turns"):
            self._carry_on(self.saved["record"])
        elif self._streamed(self.session.start) is not None:
            self._send("annotate")

    def _plan_checks(self) -> None:
        """Which bot turns' annotation screens are attention checks (the criterion to tick alone) and which
        replies a known-bad one replaces (platform/checks.py); the positions count the bot turns."""
        args = checks.ChecksArgs(**(self.opt.get("checks") or {}))
        self.rule = checks.rule(args)
        rng = self.session.rng
        attention, gold = checks.plan(args, self.session.num_turns, rng)
        self.session.attention = {turn: rng.choice(CRITERIA) for turn in attention}
        self.session.gold = gold

    def record(self) -> dict:
        return {**super().record(), "checks": self.rule}

    def _carry_on(self, record: dict) -> None:
        """The saved conversation after a crash, where it stopped; the fresh bot gets it whole with the
        worker's next message (protocol.py)."""
        session = self.session
        session.carry_on(record)
        if session.final_ratings:
            self.phase = "rate"
            self._finish("complete")
        elif session.turns[-1]["speaker"] == "human":  # stored before the crash, its reply never came
            self.phase = "chat"
            self._reply()
        elif any(i not in session.annotations for i in session.bot_turns):
            self._send("annotate")
        else:
            self._send("rate" if session.chat_done else "chat")

    def _reply(self) -> None:
        if self._streamed(self.session.bot_replies) is not None:
            self._send("annotate")

    def _streamed(self, step):
        """A bot turn whose reply the page shows as it arrives (task_data.streaming)."""
        with self.streaming(self.session.agent):
            return self.bot_turn(step)

    def _send(self, phase: str, warning=None) -> None:
        self.phase = phase
        state = {"phase": phase, "history": blind_history(self.session.turns), "persona": self.session.persona,
                 "turn": len(self.session.bot_turns), "num_turns": self.session.num_turns, "warning": warning,
                 "labels": TURN_LABELS, "streaming": None}
        state["attention"] = None
        if phase == "annotate":
            state["turn_index"] = self.session.bot_turns[-1]
            tick = self.session.attention_of(state["turn_index"])
            state["attention"] = {"tick": tick} if tick else None
        if phase == "rate":
            state.update(prompt=LIKERT_PROMPT, questions=[{"criterion": c, "question": LIKERT_QUESTIONS[c]}
                                                          for c in CRITERIA], min=LIKERT_MIN, max=LIKERT_MAX)
        self.observe_state(state)

    def parley(self) -> None:
        taken = self.take()
        if taken is None:
            return
        text, data = taken
        try:
            if self.phase == "annotate":
                self.session.annotate(self.session.bot_turns[-1], string_list(data.get("checked"), TICK_ONE),
                                      self.answer_record(data))
                self._send("rate" if self.session.chat_done else "chat")
            elif self.phase == "chat":
                text = text.strip()
                if text:
                    self.session.add_human_message(text, provenance=self.answer_record(data, text))
                    self.save_and_confirm()  # stored and shown as sent before the reply, which may take a minute
                    self.show({"history": blind_history(self.session.turns), "warning": None})
                    self._reply()
            elif self.phase == "rate":
                ratings = data.get("ratings")
                if not isinstance(ratings, dict):
                    raise Refused(RATE_ALL)
                self.session.rate(dict(ratings), self.answer_record(data))
                self._finish("complete")
        except ValueError as error:  # the page keeps the worker from sending these; say so if it happens
            self._send(self.phase, warning=str(error))


def string_list(value, message: str) -> list[str]:
    """A list of strings from the page (None: empty); Refused with ``message`` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Refused(message)
    return value
