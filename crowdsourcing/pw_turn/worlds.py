"""Mephisto world of PW-Turn: onboarding (Appendix A) and the per-turn pairwise chat.

The page (crowdsourcing/frontend/src/tasks/pw_turn) is driven by ``task_data``: ``phase`` is
``onboarding`` -> (``chat`` <-> ``choose``) -> done. The world keeps the whole state in
``PairwiseTurnSession`` and saves it with the unit (``prep_save_data``), and after every event in the
worker's data folder, so partial work survives a worker who leaves.
"""
from __future__ import annotations

import random
import time

from mephisto.data_model.exceptions import AbsentAgentError

from parlai_dialeval.analysis.worker_checks import check_messages, violations, worker_messages
from parlai_dialeval.crowdsourcing.pw_turn.protocol import (FIXED_OPENING, OnboardingGrader, PairwiseTurnSession,
                                                            onboarding_task, question_text)

RECORD_FILE = "dialeval_pw_turn.json"
SYSTEM_ID = "System"
# act() without a timeout returns at once when the worker has not answered, and Mephisto calls
# parley() in a tight loop: waiting up to this long per call keeps an idle HIT off the CPU.
POLL_SECONDS = 1.0


def get_world_params() -> dict:
    return {"agent_count": 1}


def make_world(opt: dict, agents: list, initialization_data=None) -> "PairwiseTurnWorld":
    return PairwiseTurnWorld(opt, agents[0])


def make_onboarding_world(opt: dict, agent, initialization_data=None) -> "OnboardingWorld":
    return OnboardingWorld(opt, agent)


def onboarding_result(data: dict) -> dict | None:
    """What ``OnboardingWorld.prep_save_data`` saved in an onboarding agent's state (None: never finished)."""
    for message in reversed((data.get("outputs") or {}).get("messages") or []):
        world_data = message.get("WORLD_DATA")
        if world_data and "onboarding" in world_data:
            return world_data["onboarding"]
    return None


def validate_onboarding(data: dict) -> bool:
    """Mephisto calls this with the onboarding agent's state; True lets the worker in."""
    result = onboarding_result(data)
    return bool(result and result["passed"])


def save_record(agent, record: dict, name: str = RECORD_FILE) -> None:
    """Write ``record`` as JSON file ``name`` in the worker's Mephisto data folder (read back by export)."""
    mephisto_agent = getattr(agent, "mephisto_agent", None)
    if mephisto_agent is not None:
        mephisto_agent.db.write_dict(f"{mephisto_agent.get_data_dir()}/{name}", record)


class OnboardingWorld:
    """Four response pairs with one clearly better answer; all four right within two tries."""

    def __init__(self, opt: dict, agent):
        self.agent = agent
        self.question = opt.get("question")
        self.task = onboarding_task(random.Random(opt.get("seed")))
        self.grader = OnboardingGrader(self.task["answers"], max_tries=int(opt.get("onboarding_tries", 2)))
        self.passed: bool | None = None
        self._send(warning=None)

    def _send(self, warning) -> None:
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": {
            "phase": "onboarding", "pairs": self.task["pairs"], "try": len(self.grader.tries) + 1,
            "max_tries": self.grader.max_tries, "warning": warning}})

    def parley(self) -> None:
        act = self.agent.act(timeout=POLL_SECONDS)
        if act is None:
            return
        data = act.get("task_data") or {}
        choices = data.get("choices")
        if data.get("action") != "onboarding" or not isinstance(choices, list) or len(choices) != len(
                self.task["answers"]) or any(c not in ("left", "right") for c in choices):
            self._send(warning="Please choose one response for every turn.")
            return
        outcome = self.grader.submit(choices)
        if outcome == "retry":
            self._send(warning="Some of your choices were not the better response. Please look again: "
                               "this is your last try.")
            return
        self.passed = outcome == "pass"
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": {"phase": "onboarding_done",
                                                                       "passed": self.passed}})

    def episode_done(self) -> bool:
        return self.passed is not None

    def shutdown(self) -> None:
        pass

    def prep_save_data(self, agents) -> dict:
        return {"onboarding": {"passed": bool(self.passed), "answers": self.task["answers"],
                               "pairs": self.task["pairs"], "tries": self.grader.tries, "question": self.question}}


class PairwiseTurnWorld:
    def __init__(self, opt: dict, agent):
        self.opt = opt
        self.agent = agent
        self.pool = opt["pool"]
        self.models = self.pool.reserve(2)
        bots = {name: self.pool.new_bot(name) for name in self.models}
        self.session = PairwiseTurnSession(bots, opt["question"], int(opt["num_turns"]),
                                           rng=random.Random(self.pool.randint(0, 2 ** 31)))
        self.status = "incomplete"
        self.started = time.time()
        self.ended = None
        self.blocked = False
        self._show_choice(self.session.human_says(FIXED_OPENING, fixed=True))

    # ---------------------------------------------------------------- page updates
    def _history(self) -> list[dict]:
        # the page never learns model names: speakers are 'human' or 'bot'
        return [{"speaker": "human" if t["speaker"] == "human" else "bot", "text": t["text"]}
                for t in self.session.turns]

    def _send(self, phase: str, **state) -> None:
        state.setdefault("warning", None)
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": {
            "phase": phase, "history": self._history(), "question": question_text(self.session.question),
            "turn": len(self.session.choices) + 1, "num_turns": self.session.num_turns, **state}})
        save_record(self.agent, self.record())

    def _show_choice(self, shown: dict, warning=None) -> None:
        self._send("choose", left=shown["left"], right=shown["right"], warning=warning)

    # ---------------------------------------------------------------- ParlAI world API
    def parley(self) -> None:
        try:
            act = self.agent.act(timeout=POLL_SECONDS)
        except AbsentAgentError:
            self._finish("incomplete")
            raise
        if act is None:
            return
        data = act.get("task_data") or {}
        if self.session.pending is not None:
            choice, justification = data.get("choice"), str(data.get("justification") or "")
            if data.get("action") != "choose" or choice not in ("left", "right") or not justification.strip():
                pending = self.session.pending
                self._show_choice({"left": pending["responses"][pending["left"]],
                                   "right": pending["responses"][pending["right"]]},
                                  warning="Please choose a response and say why.")
                return
            self.session.choose(choice, justification)
            if self.session.done:
                self._finish("complete")
            else:
                self._send("chat")
            return
        text = (act.get("text") or "").strip()
        if text:
            self._show_choice(self.session.human_says(text))

    def episode_done(self) -> bool:
        return self.ended is not None

    def shutdown(self) -> None:
        if self.ended is None:
            self._finish("incomplete")

    def prep_save_data(self, agents) -> dict:
        return {"pw_turn": self.record()}

    # ---------------------------------------------------------------- end
    def record(self) -> dict:
        return {**self.session.state(), "status": self.status, "started": self.started, "ended": self.ended,
                "blocked": self.blocked}

    def _finish(self, status: str) -> None:
        self.status, self.ended = status, time.time()
        if status != "complete":
            for name in self.models:
                self.pool.release(name)
        elif self.opt.get("block_on_worker_checks"):
            self.blocked = bool(violations(check_messages(worker_messages(self.session.turns))))
            if self.blocked:
                block_worker(self.agent, self.opt["block_qualification"])
        save_record(self.agent, self.record())


def block_worker(agent, qualification: str) -> None:
    """Soft block: grant the run's block qualification, which Mephisto refuses on later units."""
    from parlai_dialeval.crowdsourcing.platform.quality import soft_block

    mephisto_agent = getattr(agent, "mephisto_agent", None)
    if mephisto_agent is not None:
        soft_block(mephisto_agent.db, [mephisto_agent.get_worker().worker_name], qualification)
