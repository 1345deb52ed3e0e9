"""Arena battles as plain Python, driven by the Mephisto world (worlds.py).

A participant holds a session of battles. A battle opens with the participant's prompt; two models drawn
for it (sampler.py) answer at once, each keeping its own conversation (a model never sees the other's
replies), shown as "Model A" and "Model B". Once both have answered the participant votes (A, B, tie or
both bad), then either writes the next message of the same battle (each turn is voted) or ends it; the
models' names are shown when the battle ends, so every vote is cast blind. A reply that names a model or
its maker (anonymity.py) voids the votes of its battle from that turn on: they are kept, marked, and left
out of every analysis. The session ends after ``max_battles`` battles or when the participant finishes, at
least ``min_battles`` done (a study certified before then lets them finish early).
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

from parlai_dialeval.crowdsourcing.platform.bots import turn_meta
from parlai_dialeval.protocols.arena import CHOICES

SIDES = ("a", "b")
# what a participant's vote means for the side-A outcome that certify and the ledger count
OUTCOME = {"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}


# What the session says to a participant (the page translates each: server.arena_* in its catalogues).
NO_NEW_BATTLE = "No new battle can start now."
TURNS_DONE = "This battle has its {turns} turns: end it to see the models."
VOTE_FIRST = "Please vote on both replies before your next message."
REPLIES_FIRST = "Both replies must be complete before you vote."
CHOOSE_ONE = "Please choose A, B, tie or both bad."
NOTHING_TO_END = "There is no battle to end."
LAST_VOTE_FIRST = "Please vote on the last replies first."
MORE_BATTLES = "Please complete at least {minimum} battles."


class ArenaError(ValueError):
    """An act the session cannot take now; the text is shown to the participant."""


def turn_check(battle: dict, number: int) -> dict | None:
    """The check item (platform/checks.py) that turn ``number`` (0-based) of ``battle`` is: every turn of a gold
    battle (one side's replies come from a clearly broken bot), the first of an attention battle (its vote says
    which answer to give); None for a vote on the models."""
    check = battle.get("check")
    return check if check and (check["kind"] == "gold" or number == 0) else None


def battle_outcome(battle: dict) -> float | None:
    """The mean side-A outcome of a battle's counted votes (None: none counted; answers to checks never count)."""
    counted = [OUTCOME[t["vote"]["choice"]] for number, t in enumerate(battle["turns"])
               if t.get("vote") and not t.get("void") and turn_check(battle, number) is None]
    return sum(counted) / len(counted) if counted else None


class ArenaSession:
    """One participant's battles (``battles``: JSON-ready dicts, saved with the unit)."""

    def __init__(self, min_battles: int = 1, max_battles: int = 5, max_turns: int = 3):
        if not 1 <= min_battles <= max_battles:
            raise ValueError(f"arena.min_battles={min_battles}, max_battles={max_battles}: expected "
                             "1 <= min_battles <= max_battles")
        if max_turns < 1:
            raise ValueError(f"arena.max_turns={max_turns}: expected at least one turn per battle")
        self.min_battles, self.max_battles, self.max_turns = min_battles, max_battles, max_turns
        self.battles: list[dict] = []
        self.phase = "prompt"  # prompt | vote | voted | revealed | done (see worlds.py)

    # ------------------------------------------------------------------ reading
    @property
    def battle(self) -> dict | None:
        return self.battles[-1] if self.battles else None

    @property
    def ended(self) -> list[dict]:
        return [b for b in self.battles if b["status"] != "open"]

    def can_finish(self, early: bool = False) -> bool:
        return self.phase == "revealed" and (early or len(self.ended) >= self.min_battles)

    def can_start(self, early: bool = False) -> bool:
        return self.phase in ("prompt", "revealed") and len(self.battles) < self.max_battles and not early

    def can_continue(self) -> bool:
        return self.phase == "voted" and len(self.battle["turns"]) < self.max_turns

    # ------------------------------------------------------------------ the participant's acts
    def open_battle(self, battle_id: str, prompt: str, models: tuple[str, str], probability: float, weight: float,
                    duplicate: dict | None = None, check: dict | None = None, provenance: dict | None = None) -> dict:
        """``check``: the battle is a check item (``turn_check``); ``provenance``: how the page saw the prompt
        made (platform/answer_record.py)."""
        if self.phase not in ("prompt", "revealed") or len(self.battles) >= self.max_battles:
            raise ArenaError(NO_NEW_BATTLE)
        battle = {"id": battle_id, "models": dict(zip(SIDES, models)), "sampling_probability": probability,
                  "weight": weight, "status": "open", "started": time.time(), "ended": None, "turns": [],
                  "duplicate": duplicate, "error": None, **({"check": check} if check else {})}
        self.battles.append(battle)
        self._add_turn(prompt, provenance)
        return battle

    def continue_battle(self, prompt: str, provenance: dict | None = None) -> None:
        if not self.can_continue():
            raise ArenaError(TURNS_DONE.format(turns=self.max_turns) if self.phase == "voted" else VOTE_FIRST)
        self._add_turn(prompt, provenance)

    def _add_turn(self, prompt: str, provenance: dict | None) -> None:
        self.battle["turns"].append({"prompt": prompt, "time": time.time(), "replies": None, "vote": None,
                                     **({"provenance": provenance} if provenance is not None else {})})
        self.phase = "answering"

    def attention(self) -> dict | None:
        """What the vote now awaited must answer when it is an attention check (``{"choose": choice}``)."""
        battle = self.battle
        if battle is None or battle["status"] != "open" or self.phase not in ("answering", "vote"):
            return None
        check = turn_check(battle, len(battle["turns"]) - 1)
        return {"choose": check["choose"]} if check and check["kind"] == "attention" else None

    def answer(self, bots: dict, stream=None, leaks=None, finished=None) -> dict:
        """Both models' replies to the battle's last prompt, at once: ``bots`` side -> ParlAI agent holding its
        own side's conversation; ``stream(side, bot)`` a context manager around each reply (the page's display);
        ``finished(side, text)`` is told each whole reply as it ends; ``leaks(text) -> [words]`` the anonymity
        rule. A failing model raises after the other has finished."""
        battle = self.battle
        turn = battle["turns"][-1]

        def reply(side):
            bot = bots[side]
            bot.observe({"id": "human", "text": turn["prompt"], "episode_done": False})
            with stream(side, bot) if stream else nullcontext():
                act = bot.act()
            if finished:
                finished(side, str(act.get("text", "")))
            return act

        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="arena-reply") as pool:
            futures = {side: pool.submit(reply, side) for side in SIDES}
            acts = {side: future.result() for side, future in futures.items()}
        turn["replies"] = {side: {"text": str(acts[side].get("text", "")), "meta": turn_meta(acts[side])}
                           for side in SIDES}
        turn["shown_at"] = time.time()
        named = {side: (leaks(turn["replies"][side]["text"]) if leaks else []) for side in SIDES}
        if any(named.values()) or (len(battle["turns"]) > 1 and battle["turns"][-2].get("void")):
            turn["void"] = {"anonymity_leak": {side: words for side, words in named.items() if words}}
        self.phase = "vote"
        return turn["replies"]

    def vote(self, choice: str, provenance: dict | None = None) -> dict:
        """``provenance``: the vote screen's record (platform/answer_record.py)."""
        if self.phase != "vote":
            raise ArenaError(REPLIES_FIRST)
        if choice not in CHOICES:
            raise ArenaError(CHOOSE_ONE)
        turn = self.battle["turns"][-1]
        turn["vote"] = {"choice": choice, "time": time.time(), "duration": time.time() - turn["shown_at"],
                        **({"provenance": provenance} if provenance is not None else {})}
        self.phase = "voted"
        return turn

    def end_battle(self, status: str = "complete", error: str | None = None) -> dict:
        """End the open battle (the names are shown from now on)."""
        battle = self.battle
        if battle is None or battle["status"] != "open":
            raise ArenaError(NOTHING_TO_END)
        if status == "complete" and self.phase != "voted":
            raise ArenaError(LAST_VOTE_FIRST)
        if status == "complete" and battle["turns"][-1].get("vote") is None:
            battle["turns"].pop()  # a message never answered
        battle.update(status=status, ended=time.time(), error=error)
        self.phase = "revealed"
        return battle

    def new_battle(self) -> None:
        if self.phase != "revealed" or len(self.battles) >= self.max_battles:
            raise ArenaError(NO_NEW_BATTLE)
        self.phase = "prompt"

    def finish(self, early: bool = False) -> None:
        if not self.can_finish(early):
            raise ArenaError(MORE_BATTLES.format(minimum=self.min_battles))
        self.phase = "done"

    def state(self) -> dict:
        return {"battles": self.battles, "phase": self.phase, "min_battles": self.min_battles,
                "max_battles": self.max_battles, "max_turns": self.max_turns}
