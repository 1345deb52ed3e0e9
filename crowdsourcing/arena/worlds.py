"""Mephisto world of the arena (protocol.py says how a session goes).

The page (crowdsourcing/frontend/src/tasks/arena) is driven by ``task_data``: ``phase`` prompt -> answering
-> vote -> voted -> (answering ... | revealed) -> (prompt ... | done). It is sent the current battle's turns
blind (sides "a"/"b"), never a model's name before the battle ends, nor any model's options (system prompts
stay on the server). Both replies stream at once (``streaming_a`` / ``streaming_b``). The participant's
prompt is stored and confirmed before the models are asked; the record is saved after every event, and a
participant back after a crash carries on (platform/resume.py).

Hook for recording how answers were made (typing, paste, focus; the integrity work): the page sends each act's
``task_data`` whole, and ``_vote`` / ``_message`` keep ``task_data.integrity`` with the vote or the turn when
the page adds one.
"""
from __future__ import annotations

import copy
import threading
import time

from parlai_dialeval.crowdsourcing.arena.protocol import SIDES, VOTE_FIRST, ArenaError, ArenaSession, battle_outcome
from parlai_dialeval.crowdsourcing.platform.participant_input import Refused, bounded_text
from parlai_dialeval.crowdsourcing.platform.session_world import SYSTEM_ID, SessionWorld

RECORD_FILE = "dialeval_arena.json"
BATTLE_FAILED = ("Sorry, one of the two models stopped working, so this battle ends here and its votes are not "
                 "counted. You can start a new battle.")
CERTIFIED = "The study has all the votes it needs: you can finish now."
ALL_BATTLES = "You have done all {battles} battles: please finish."
WRITE_FIRST = "Please write a message first."
UNREADABLE_ACTION = "Your last action could not be read; please try again."
SAME_PROMPT_MINE = "You asked this (or nearly this) in an earlier battle: please write a new prompt."
SAME_PROMPT_STUDY = "This prompt (or one very like it) was asked in this study already: please write a different one."
INTEGRITY_KEY = "integrity"  # what the page recorded about how an answer was made (kept verbatim, bounded)
MAX_INTEGRITY_CHARS = 2000


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
        if self.saved is not None:
            self._carry_on(self.saved["record"])
        else:
            self._send()

    # ------------------------------------------------------------------ state and display
    def saved_models(self, record: dict) -> list[str] | None:
        return ["arena"]

    def record(self) -> dict:
        return {**super().record(), "worker": self.worker_name(), "policy": self.opt.get("arena_policy")}

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
                 "finished_a": None, "finished_b": None, "warning": None}
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
        return {side: self.arena.display_name(battle["models"][side]) for side in SIDES}

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
        if session.phase == "voted":
            session.continue_battle(text)
        elif session.phase in ("prompt", "revealed"):
            self._open(text)
        else:
            raise ArenaError(VOTE_FIRST)
        self._keep_integrity(session.battle["turns"][-1], data)
        self.save_and_confirm()  # stored and shown as sent before the replies, which may take a minute
        self._send(stored=True, phase="answering")
        self._answer()

    def _open(self, text: str) -> None:
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
        session.open_battle(battle_id, text, models, probability, weight, duplicate)
        self.arena.prompts.add(battle_id, self.worker_name(), text)
        self.bots = {side: self.pool.new_bot(name) for side, name in zip(SIDES, models)}

    def _answer(self) -> None:
        def stream(side, bot):
            return self.streaming(bot, key=f"streaming_{side}")

        def finished(side, text):  # the page shows a whole reply while the other comes; the vote waits for both
            self.show({f"streaming_{side}": text, f"finished_{side}": True})

        done = self.bot_turn(lambda: self.session.answer(self.bots, stream, self.arena.rules.names, finished))
        if done is not None:
            for name in self.session.battle["models"].values():
                self.arena.model_worked(name)
            self._send()

    def show(self, task_data: dict) -> None:
        with self._display:
            super().show(task_data)

    def bot_failed(self, error: str) -> None:
        """One battle fails, not the session: its votes are left out, the participant starts another."""
        battle = self.session.battle
        for name in battle["models"].values():
            self.arena.model_failed(name)
        self.session.end_battle("failed", error)
        self._send(warning=BATTLE_FAILED)

    def _vote(self, data: dict) -> None:
        turn = self.session.vote(data.get("choice"))
        self._keep_integrity(turn["vote"], data)
        self._send()

    def _end_battle(self) -> None:
        battle = self.session.end_battle()
        outcome = battle_outcome(battle)
        if outcome is not None and not (battle.get("duplicate") or {}).get("void"):
            self.arena.sampler.add_battle(battle["models"]["a"], battle["models"]["b"], outcome, battle["id"])
        self._send()

    @staticmethod
    def _keep_integrity(where: dict, data: dict) -> None:
        """The page's record of how the answer was made (pasted, typed, focus lost), when it sends one."""
        recorded = data.get(INTEGRITY_KEY)
        if isinstance(recorded, dict) and len(str(recorded)) <= MAX_INTEGRITY_CHARS:
            where[INTEGRITY_KEY] = recorded

    # ------------------------------------------------------------------ a relaunch
    def _carry_on(self, record: dict) -> None:
        """The saved session after a crash: a battle waiting for replies is answered by fresh bots given their
        side's conversation so far; one waiting for a vote shows the same replies again."""
        session = self.session
        session.battles, session.phase = copy.deepcopy(record["battles"]), record["phase"]
        battle = session.battle
        if battle is not None and battle["status"] == "open":
            self.bots = {side: self.pool.new_bot(battle["models"][side]) for side in SIDES}
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
