"""Mephisto world of PW-Turn: onboarding (Appendix A) and the per-turn pairwise chat.

The page (crowdsourcing/frontend/src/tasks/pw_turn) is driven by ``task_data``: ``phase`` is
``onboarding`` -> (``chat`` <-> ``choose``) -> done. The world keeps the whole state in
``PairwiseTurnSession`` and saves it with the unit (``prep_save_data``), and after every event in the
worker's data folder, so partial work survives a worker who leaves and a worker back after a crash carries
on where they stopped (platform/resume.py).
"""
from __future__ import annotations

import random
import time

from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.answer_record import clean_judgment
from parlai_dialeval.crowdsourcing.platform.participant_input import (FloodGuard, Refused, bounded_text, limits_of,
                                                                     screen)
from parlai_dialeval.crowdsourcing.platform.session_world import (SYSTEM_ID, SessionWorld, blind_history,
                                                                  hit_models, wait_for_act)
from parlai_dialeval.crowdsourcing.pw_turn.protocol import (FIXED_OPENING, OnboardingGrader, PairwiseTurnSession,
                                                            onboarding_task, question_text)

RECORD_FILE = "dialeval_pw_turn.json"
CHOOSE_EVERY = "Please choose one response for every turn."
LAST_TRY = "Some of your choices were not the better response. Please look again: this is your last try."
CHOOSE_WHY = "Please choose a response and say why."


def get_world_params() -> dict:
    return {"agent_count": 1}


def make_world(opt: dict, agents: list, initialization_data=None) -> "PairwiseTurnWorld":
    return PairwiseTurnWorld(opt, agents[0], models=hit_models(initialization_data))


def make_onboarding_world(opt: dict, agent, initialization_data=None) -> "OnboardingWorld":
    return OnboardingWorld(opt, agent)


def onboarding_result(data: dict) -> dict | None:
    """What ``OnboardingWorld.prep_save_data`` saved in an onboarding agent's state (None: never finished).
    Only the last message counts, the one Mephisto appends once the world has ended: the worker's own acts
    are kept in the same list and may carry a WORLD_DATA of their own."""
    messages = (data.get("outputs") or {}).get("messages") or []
    last = messages[-1] if messages else {}
    world_data = last.get("WORLD_DATA") if last.get("id") == "SUBMIT_WORLD_DATA" else None
    return world_data["onboarding"] if isinstance(world_data, dict) and "onboarding" in world_data else None


def validate_onboarding(data: dict) -> bool:
    """Mephisto calls this with the onboarding agent's state; True lets the worker in."""
    result = onboarding_result(data)
    return bool(result and result["passed"])


class OnboardingWorld:
    """Four response pairs with one clearly better answer; all four right within two tries."""

    def __init__(self, opt: dict, agent):
        self.agent = agent
        self.question = opt.get("question")
        self.turn_timeout = opt["turn_timeout"]
        self.task = onboarding_task(random.Random(opt.get("seed")))
        self.grader = OnboardingGrader(self.task["answers"], max_tries=int(opt.get("onboarding_tries", 2)))
        self.passed: bool | None = None
        self.limits = limits_of(opt)
        self.flood = FloodGuard(self.limits)
        self._send(warning=None)

    def _send(self, warning) -> None:
        self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": {
            "phase": "onboarding", "pairs": self.task["pairs"], "try": len(self.grader.tries) + 1,
            "max_tries": self.grader.max_tries, "warning": warning}})

    def parley(self) -> None:
        taken = screen(wait_for_act(self.agent, self.turn_timeout), self.agent, self.limits, self.flood,
                       lambda warning: self._send(warning=warning))
        if taken is None:
            return
        data = taken[1]
        choices = data.get("choices")
        if data.get("action") != "onboarding" or not isinstance(choices, list) or len(choices) != len(
                self.task["answers"]) or any(c not in ("left", "right") for c in choices):
            self._send(warning=CHOOSE_EVERY)
            return
        outcome = self.grader.submit(choices)
        if outcome == "retry":
            self._send(warning=LAST_TRY)
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


class PairwiseTurnWorld(SessionWorld):
    record_file = RECORD_FILE

    def __init__(self, opt: dict, agent, models: list[str] | None = None):
        super().__init__(opt, agent, num_models=2, models=models)
        bots = {name: self.pool.new_bot(name) for name in self.models}
        self.session = PairwiseTurnSession(bots, opt["question"], int(opt["num_turns"]),
                                           rng=random.Random(self.pool.randint(0, 2 ** 31)))
        args = checks.ChecksArgs(**(opt.get("checks") or {}))
        self.rule = checks.rule(args)
        self.session.attention, self.session.gold = checks.plan(args, self.session.num_turns, self.session.rng)
        if self.saved is None:
            self._ask(FIXED_OPENING, fixed=True)
        else:
            self._carry_on(self.saved["record"])

    def _carry_on(self, record: dict) -> None:
        """The saved conversation after a crash, where it stopped: the models are stateless between turns
        (protocol.py), so fresh ones go on; a message stored before its two replies were shown is asked again."""
        session = self.session
        session.turns, session.choices, session.pending = record["turns"], record["choices"], record.get("pending")
        session.attention, session.gold = list(record.get("attention") or []), list(record.get("gold") or [])
        if session.pending is not None:
            session.pending["shown_at"] = time.time()
            self._show_choice({side: session.pending["responses"][session.pending[side]] for side in ("left", "right")})
        elif session.done:
            self._finish("complete")
        elif session.turns and session.turns[-1]["speaker"] == "human":
            last = session.turns.pop()
            self._ask(last["text"], fixed=bool((last.get("meta") or {}).get("fixed")))
        elif session.turns:
            self._send("chat")
        else:
            self._ask(FIXED_OPENING, fixed=True)

    def record(self) -> dict:
        # the two replies waiting for a choice, so that a relaunch shows the same ones
        return {**super().record(), "pending": self.session.pending, "checks": self.rule}

    def _send(self, phase: str, **state) -> None:
        state.setdefault("warning", None)
        state.setdefault("attention", None)
        state.update(streaming_left=None, streaming_right=None)
        self.observe_state({"phase": phase, "history": blind_history(self.session.turns),
                            "question": question_text(self.session.question),
                            "turn": len(self.session.choices) + 1, "num_turns": self.session.num_turns, **state})

    def _ask(self, text: str, fixed: bool = False, provenance: dict | None = None) -> None:
        """The worker's message to both bots, then their two replies to choose from."""
        self.session.add_human_message(text, fixed=fixed, provenance=provenance)
        if not fixed:  # stored and shown as sent before the two replies, which may take a minute
            self.save_and_confirm()
            self.show({"history": blind_history(self.session.turns), "warning": None})
        # both candidates show as they arrive, each on the side where it stays (task_data.streaming_left/right)
        shown = self.bot_turn(lambda: self.session.bot_replies(
            stream=lambda side, bot: self.streaming(bot, key=f"streaming_{side}")))
        if shown is not None:
            self._show_choice(shown)

    def _show_choice(self, shown: dict, warning=None) -> None:
        # an attention check's instruction replaces the question on the page (platform/checks.py)
        self._send("choose", left=shown["left"], right=shown["right"], warning=warning,
                   attention=(self.session.pending or {}).get("attention"))

    def parley(self) -> None:
        taken = self.take()
        if taken is None:
            return
        text, data = taken
        if self.session.pending is not None:
            self._choose(data)
            return
        text = text.strip()
        if text:
            self._ask(text, provenance=self.answer_record(data, text))

    def _choose(self, data: dict) -> None:
        pending = self.session.pending
        choice = data.get("choice")
        try:
            justification = bounded_text(data.get("justification"), self.limits.max_free_text_chars, "explanation")
            if data.get("action") != "choose" or choice not in ("left", "right") or not justification.strip():
                raise Refused(CHOOSE_WHY)
        except Refused as refusal:
            self._show_choice({"left": pending["responses"][pending["left"]],
                               "right": pending["responses"][pending["right"]]}, warning=str(refusal))
            return
        self.session.choose(choice, justification, clean_judgment(data.get("provenance"), justification=justification,
                                                                  elapsed=self.elapsed))
        if self.session.done:
            # the page's history ends with the reply just chosen, as after every other turn
            self.show({"history": blind_history(self.session.turns), "warning": None})
            self._finish("complete")
        else:
            self._send("chat")
