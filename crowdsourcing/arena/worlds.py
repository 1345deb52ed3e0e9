"""Mephisto world of the arena (protocol.py says how a session goes).

The page (crowdsourcing/frontend/src/tasks/arena) is driven by ``task_data``: ``phase`` prompt -> answering
-> vote -> voted -> (answering ... | revealed) -> (prompt ... | done). It is sent the current battle's turns
blind (sides "a"/"b"), never a model's name before the battle ends, nor any model's options (system prompts
stay on the server). Both replies stream at once (``streaming_a`` / ``streaming_b``). The participant's
prompt is stored and confirmed before the models are asked; the record is saved after every event, and a
participant back after a crash carries on (platform/resume.py).

The page records how each prompt and each vote was made (components/answerRecord.js, as every task's page); the
world checks the record (platform/answer_record.py) and keeps it with the turn or the vote (``provenance``).
Attention checks and gold items (platform/checks.py) are battles, planned among the first ``min_battles``: an
attention battle's first vote is told which answer to give; a gold battle pits the drawn model against a bot
whose replies are clearly broken (diagnostic_bots.BrokenReplyAgent), shown as a test reply when it ends.
"""
from __future__ import annotations

import copy
import random
import threading
import time

from parlai_dialeval.crowdsourcing.arena.protocol import SIDES, VOTE_FIRST, ArenaError, ArenaSession, battle_outcome
from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.answer_record import clean_record
from parlai_dialeval.crowdsourcing.platform.diagnostic_bots import BrokenReplyAgent
from parlai_dialeval.crowdsourcing.platform.participant_input import Refused, bounded_text
from parlai_dialeval.crowdsourcing.platform.session_world import SYSTEM_ID, SessionWorld
from parlai_dialeval.protocols.arena import CHOICES

RECORD_FILE = "dialeval_arena.json"
BATTLE_FAILED = ("Sorry, one of the two models stopped working, so this battle ends here and its votes are not "
                 "counted. You can start a new battle.")
CERTIFIED = "The study has all the votes it needs: you can finish now."
ALL_BATTLES = "You have done all {battles} battles: please finish."
WRITE_FIRST = "Please write a message first."
UNREADABLE_ACTION = "Your last action could not be read; please try again."
SAME_PROMPT_MINE = "You asked this (or nearly this) in an earlier battle: please write a new prompt."
SAME_PROMPT_STUDY = "This prompt (or one very like it) was asked in this study already: please write a different one."


def get_world_params() -> dict:
    return {"agent_count": 1}


def make_world(opt: dict, agents: list, initialization_data=None) -> "ArenaWorld":
    return ArenaWorld(opt, agents[0])


def restore_history(bot, turns: list[dict], side: str) -> None:
    """A fresh chat bot (``openai_chat``, ``hf_chat``) given its side's conversation so far, after a relaunch.
    Other ParlAI agents (the offline rehearsal bots) answer the next prompt alone."""
    if isinstance(getattr(bot, "history", None), list):
        for turn in turns:
            if turn.get("replies"):
                bot.history += [{"role": "user", "content": turn["prompt"]},
                                {"role": "assistant", "content": turn["replies"][side]["text"]}]


class ArenaWorld(SessionWorld):
    record_file = RECORD_FILE

    def __init__(self, opt: dict, agent):
        self.arena = opt["arena"]  # task.ArenaShared: sampler, prompt index, rules, display names
        super().__init__(opt, agent, models=["arena"])
        self.session = ArenaSession(opt["min_battles"], opt["max_battles"], opt["max_turns"])
        self.bots: dict = {}
        self._display = threading.Lock()  # the two replies' streams reach the page one update at a time
        args = checks.ChecksArgs(**(opt.get("checks") or {}))
        self.rule = checks.rule(args)
        self.rng = random.Random(self.pool.randint(0, 2 ** 31))
        # 0-based battles that are check items: among the min_battles every participant does, never the first
        self.attention, self.gold = checks.plan(args, opt["min_battles"], self.rng)
        # a prompt's record is checked against the time since the previous prompt was sent, not since the vote
        # between them: a message typed while the models answer waits for the vote (MessageInput's queue)
        self._prompt_since = time.time()
        if self.saved is not None:
            self._carry_on(self.saved["record"])
        else:
            self._send()

    # ------------------------------------------------------------------ state and display
    def saved_models(self, record: dict) -> list[str] | None:
        return ["arena"]

    def record(self) -> dict:
        return {**super().record(), "worker": self.worker_name(), "policy": self.opt.get("arena_policy"),
                "checks": self.rule, "attention": self.attention, "gold": self.gold}

    def worker_name(self) -> str:
        mephisto_agent = getattr(self.agent, "mephisto_agent", None)
        return mephisto_agent.get_worker().worker_name if mephisto_agent is not None else "local"

    def _send(self, stored: bool = False, **extra) -> None:
        """The page's state; ``stored``: the record was just saved, so it is not written again."""
        session, battle = self.session, self.session.battle
        early = self.arena.enough()
        shown = battle if battle is not None and (battle["status"] == "open" or session.phase == "revealed") else None
        state = {"phase": session.phase, "battle": len(session.battles) if shown else len(session.battles) + 1,
                 "battles_done": len(session.ended), "min_battles": session.min_battles,
                 "max_battles": session.max_battles, "max_turns": session.max_turns,
                 "turns": [self._blind(turn) for turn in shown["turns"]] if shown else [],
                 "revealed": self._names(shown) if shown and shown["status"] != "open" else None,
                 "battle_failed": bool(shown and shown["status"] == "failed"),
                 "can_finish": session.can_finish(early), "can_start": session.can_start(early),
                 "can_continue": session.can_continue(), "certified": early, "streaming_a": None, "streaming_b": None,
                 "finished_a": None, "finished_b": None, "warning": None, "attention": session.attention()}
        state.update(extra)
        if stored:
            self.agent.observe({"id": SYSTEM_ID, "text": "", "task_data": {
                **state, "max_message_chars": self.limits.max_message_chars}})
        else:
            self.observe_state(state)

    @staticmethod
    def _blind(turn: dict) -> dict:
        replies = turn.get("replies")
        return {"prompt": turn["prompt"], "vote": (turn.get("vote") or {}).get("choice"),
                "replies": {side: {"text": replies[side]["text"],
                                   "cut": replies[side]["meta"].get("finish_reason") == "length"}
                            for side in SIDES} if replies else None}

    def _names(self, battle: dict) -> dict:
        """Each side's name shown when the battle ends; None for a gold battle's broken bot (a test reply)."""
        return {side: None if battle["models"][side] == checks.GOLD_MODEL else
                self.arena.display_name(battle["models"][side]) for side in SIDES}

    def _bot(self, model: str):
        if model == checks.GOLD_MODEL:
            return BrokenReplyAgent({"seed": self.rng.randint(0, 2 ** 31)})
        return self.pool.new_bot(model)

    def _models(self, battle: dict) -> list[str]:
        """The battle's models of the study (a gold battle's broken bot is none)."""
        return [name for name in battle["models"].values() if name != checks.GOLD_MODEL]

    # ------------------------------------------------------------------ the participant's acts
    def parley(self) -> None:
        taken = self.take()
        if taken is None:
            return
        text, data = taken
        action = data.get("action")
        try:
            if action == "message":
                self._message(bounded_text(text, self.limits.max_message_chars, "message").strip(), data)
            elif action == "vote":
                self._vote(data)
            elif action == "end":
                self._end_battle()
            elif action == "finish":
                self.session.finish(early=self.arena.enough())
                self._finish("complete")
                self._send(stored=True)
            else:
                raise ArenaError(UNREADABLE_ACTION)
        except (ArenaError, Refused) as refusal:
            self._send(warning=str(refusal))

    def _message(self, text: str, data: dict) -> None:
        if not text:
            raise ArenaError(WRITE_FIRST)
        session = self.session
        now = time.time()
        elapsed = None if self.elapsed is None else now - self._prompt_since
        self._prompt_since = now
        provenance = clean_record(data.get("provenance"), text=text, elapsed=elapsed)
        if session.phase == "voted":
            session.continue_battle(text, provenance)
        elif session.phase in ("prompt", "revealed"):
            self._open(text, provenance)
        else:
            raise ArenaError(VOTE_FIRST)
        self.save_and_confirm()  # stored and shown as sent before the replies, which may take a minute
        self._send(stored=True, phase="answering")
        self._answer()

    def _open(self, text: str, provenance: dict | None) -> None:
        session = self.session
        if not session.can_start(self.arena.enough()):
            raise ArenaError(CERTIFIED if self.arena.enough() else
                             ALL_BATTLES.format(battles=session.max_battles))
        decision, match = self.arena.dedup.decide(*self.arena.prompts.find(text, self.worker_name()))
        if decision == "refuse":
            raise ArenaError(SAME_PROMPT_MINE if match.worker == self.worker_name() else SAME_PROMPT_STUDY)
        battle_id = f"{self.agent_ids[0]}-b{len(session.battles) + 1}"  # agent ids are unique in a study
        models, probability, weight = self.arena.sampler.draw(frozenset(self.arena.failing_models()))
        duplicate = None if match is None else {"of": match.battle, "kind": match.kind,
                                                "similarity": round(match.similarity, 3),
                                                "same_participant": match.worker == self.worker_name(),
                                                "void": decision == "void"}
        check = None
        if len(session.battles) in self.gold:  # one side's model gives way to the broken bot
            bad = self.rng.choice(SIDES)
            check = {"kind": "gold", "side": bad, "replaced": models[SIDES.index(bad)]}
            models = tuple(checks.GOLD_MODEL if side == bad else name for side, name in zip(SIDES, models))
        elif len(session.battles) in self.attention:
            check = {"kind": "attention", "choose": self.rng.choice(CHOICES)}
        session.open_battle(battle_id, text, models, probability, weight, duplicate, check, provenance)
        self.arena.prompts.add(battle_id, self.worker_name(), text)
        self.bots = {side: self._bot(name) for side, name in zip(SIDES, models)}

    def _answer(self) -> None:
        def stream(side, bot):
            return self.streaming(bot, key=f"streaming_{side}")

        def finished(side, text):  # the page shows a whole reply while the other comes; the vote waits for both
            self.show({f"streaming_{side}": text, f"finished_{side}": True})

        done = self.bot_turn(lambda: self.session.answer(self.bots, stream, self.arena.rules.names, finished))
        if done is not None:
            for name in self._models(self.session.battle):
                self.arena.model_worked(name)
            self._send()

    def show(self, task_data: dict) -> None:
        with self._display:
            super().show(task_data)

    def bot_failed(self, error: str) -> None:
        """One battle fails, not the session: its votes are left out, the participant starts another."""
        battle = self.session.battle
        for name in self._models(battle):
            self.arena.model_failed(name)
        self.session.end_battle("failed", error)
        self._send(warning=BATTLE_FAILED)

    def _vote(self, data: dict) -> None:
        self.session.vote(data.get("choice"), self.answer_record(data))
        self._send()

    def _end_battle(self) -> None:
        battle = self.session.end_battle()
        outcome = battle_outcome(battle)
        if outcome is not None and not (battle.get("duplicate") or {}).get("void"):
            self.arena.sampler.add_battle(battle["models"]["a"], battle["models"]["b"], outcome, battle["id"])
        self._send()

    # ------------------------------------------------------------------ a relaunch
    def _carry_on(self, record: dict) -> None:
        """The saved session after a crash: a battle waiting for replies is answered by fresh bots given their
        side's conversation so far; one waiting for a vote shows the same replies again."""
        session = self.session
        session.battles, session.phase = copy.deepcopy(record["battles"]), record["phase"]
        self.attention, self.gold = list(record.get("attention") or []), list(record.get("gold") or [])
        battle = session.battle
        if battle is not None and battle["status"] == "open":
            self.bots = {side: self._bot(battle["models"][side]) for side in SIDES}
            for side in SIDES:
                restore_history(self.bots[side], battle["turns"][:-1] if session.phase == "answering"
                                else battle["turns"], side)
        if session.phase == "done":
            self._finish("complete")
        elif session.phase == "answering":
            self._send(stored=True, phase="answering")
            self._answer()
        else:
            if session.phase == "vote":
                battle["turns"][-1]["shown_at"] = time.time()
            self._send()

    def _finish(self, status: str) -> None:
        """Also a battle still open when the session ends (the participant left) is ended, incomplete."""
        battle = self.session.battle
        if status != "complete" and battle is not None and battle["status"] == "open":
            battle.update(status="incomplete", ended=time.time())
        super()._finish(status)
