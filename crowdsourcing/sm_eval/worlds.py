"""Mephisto world of SM-Turn + SM-Dialog: chat with one model, tick every bot message, rate at the end.

Phases sent to the page as ``task_data.phase``: annotate (the latest bot message) -> chat -> annotate
... -> rate -> done. The whole state lives in ``SingleModelSession``; it is saved with the unit and
after every event in the worker's data folder, so partial work survives a worker who leaves.
"""
from __future__ import annotations

import time

from mephisto.data_model.exceptions import AbsentAgentError

from parlai_dialeval.analysis.worker_checks import check_messages, violations, worker_messages
from parlai_dialeval.crowdsourcing.pw_turn.worlds import POLL_SECONDS, block_worker, save_record
from parlai_dialeval.crowdsourcing.sm_eval.protocol import (CRITERIA, LIKERT_MAX, LIKERT_MIN, LIKERT_PROMPT,
                                                            LIKERT_QUESTIONS, TURN_LABELS, SingleModelSession)

RECORD_FILE = "dialeval_sm_eval.json"
SYSTEM_ID = "System"


def get_world_params() -> dict:
    return {"agent_count": 1}


def make_world(opt: dict, agents: list, initialization_data=None) -> "SingleModelWorld":
    return SingleModelWorld(opt, agents[0])


class SingleModelWorld:
    def __init__(self, opt: dict, agent):
        self.opt = opt
        self.agent = agent
        self.pool = opt["pool"]
        self.model = self.pool.reserve(1)[0]
        personas = opt.get("worker_personas") or []
        persona = list(self.pool.choice(personas)) if personas else []
        self.session = SingleModelSession(self.pool.new_bot(self.model), self.model, int(opt["num_turns"]), persona)
        self.status, self.started, self.ended, self.blocked = "incomplete", time.time(), None, False
        self.session.start()
        self._send("annotate")

    def _send(self, phase: str, warning=None) -> None:
        self.phase = phase
        history = [{"speaker": "human" if t["speaker"] == "human" else "bot", "text": t["text"]}
                   for t in self.session.turns]
        state = {"phase": phase, "history": history, "persona": self.session.persona,
                 "turn": len(self.session.bot_turns), "num_turns": self.session.num_turns, "warning": warning,
                 "labels": TURN_LABELS}
        if phase == "annotate":
            state["turn_index"] = self.session.bot_turns[-1]
        if phase == "rate":
            state.update(prompt=LIKERT_PROMPT, questions=[{"criterion": c, "question": LIKERT_QUESTIONS[c]}
                                                          for c in CRITERIA], min=LIKERT_MIN, max=LIKERT_MAX)
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": state})
        save_record(self.agent, self.record(), RECORD_FILE)

    def parley(self) -> None:
        try:
            act = self.agent.act(timeout=POLL_SECONDS)
        except AbsentAgentError:
            self._finish("incomplete")
            raise
        if act is None:
            return
        data = act.get("task_data") or {}
        try:
            if self.phase == "annotate":
                self.session.annotate(self.session.bot_turns[-1], list(data.get("checked") or []))
                self._send("rate" if self.session.chat_done else "chat")
            elif self.phase == "chat":
                text = (act.get("text") or "").strip()
                if text:
                    self.session.human_says(text)
                    self._send("annotate")
            elif self.phase == "rate":
                self.session.rate({k: v for k, v in (data.get("ratings") or {}).items()})
                self._finish("complete")
        except ValueError as error:  # the page keeps the worker from sending these; say so if it happens
            self._send(self.phase, warning=str(error))

    def episode_done(self) -> bool:
        return self.ended is not None

    def shutdown(self) -> None:
        if self.ended is None:
            self._finish("incomplete")

    def prep_save_data(self, agents) -> dict:
        return {"sm_eval": self.record()}

    def record(self) -> dict:
        return {**self.session.state(), "status": self.status, "started": self.started, "ended": self.ended,
                "blocked": self.blocked}

    def _finish(self, status: str) -> None:
        self.status, self.ended = status, time.time()
        if status != "complete":
            self.pool.release(self.model)
        elif self.opt.get("block_on_worker_checks"):
            self.blocked = bool(violations(check_messages(worker_messages(self.session.turns))))
            if self.blocked:
                block_worker(self.agent, self.opt["block_qualification"])
        save_record(self.agent, self.record(), RECORD_FILE)
