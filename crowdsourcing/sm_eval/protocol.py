"""SM-Turn + SM-Dialog (Smith et al. 2022, section 3.1.4) as plain Python, driven by the Mephisto world.

The worker chats with one model; the first human message is fixed to "Hi!"; after every bot message
the worker ticks engaging / human-like / interesting or "none of the above"; after 6 turns each the
worker gives three 1-5 Likert ratings of the partner (wordings in parlai_dialeval.protocols.smith2022).
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from parlai_dialeval.crowdsourcing.platform.bots import turn_meta
from parlai_dialeval.crowdsourcing.platform.checks import GOLD_REPLIES
from parlai_dialeval.crowdsourcing.platform.resume import history_observation
from parlai_dialeval.protocols import get_protocol

TURN_PROTOCOL, DIALOG_PROTOCOL = get_protocol("sm_turn"), get_protocol("sm_dialog")
FIXED_OPENING = TURN_PROTOCOL.turns.fixed_opening
CRITERIA = TURN_PROTOCOL.criteria()
# Labels of the per-turn check boxes (Figure 4 of the paper).
TURN_LABELS = {**{q.criterion: q.label for q in TURN_PROTOCOL.questions}, "none": TURN_PROTOCOL.meta["none_label"]}
# End-of-dialogue Likert questions: the three metrics phrased about the worker's one partner.
LIKERT_QUESTIONS = {q.criterion: q.wording for q in DIALOG_PROTOCOL.questions}
LIKERT_PROMPT = DIALOG_PROTOCOL.prompt
LIKERT_MIN, LIKERT_MAX = DIALOG_PROTOCOL.questions[0].scale

def parse_annotation(checked: list[str]) -> dict[str, int]:
    """Ticked boxes -> {criterion: 0/1}; 'none' must stand alone and at least one box is required."""
    unknown = set(checked) - set(TURN_LABELS)
    if unknown:
        raise ValueError(f"unknown annotation {sorted(unknown)} (expected {', '.join(TURN_LABELS)})")
    if not checked:
        raise ValueError("tick at least one box (or 'none of the above') for every bot message")
    if "none" in checked and len(checked) > 1:
        raise ValueError("'none of the above' cannot be ticked together with a quality")
    return {c: int(c in checked) for c in CRITERIA}


@dataclass
class SingleModelSession:
    """One worker's conversation with one model (a ParlAI agent); ``persona``: the worker's sentences."""

    agent: object
    model: str
    num_turns: int = 6
    persona: list[str] = field(default_factory=list)
    turns: list[dict] = field(default_factory=list)
    annotations: dict[int, dict[str, int]] = field(default_factory=dict)
    final_ratings: dict[str, int] = field(default_factory=dict)
    resumed: bool = False  # the agent is new to a conversation under way (after a crash): it gets it whole
    # checks (platform/checks.py), by bot turn number (0-based): the criterion an attention check asks to tick
    # alone, and the turns whose reply a known-bad one replaces (gold: "none of the above" is right)
    attention: dict[int, str] = field(default_factory=dict)
    gold: list[int] = field(default_factory=list)
    rng: random.Random = field(default_factory=random.Random)
    provenance: dict[int, dict] = field(default_factory=dict)  # bot turn index -> its annotation screen's record
    final_provenance: dict | None = None

    @property
    def bot_turns(self) -> list[int]:
        return [i for i, t in enumerate(self.turns) if t["speaker"] == self.model]

    @property
    def chat_done(self) -> bool:
        return len(self.bot_turns) >= self.num_turns

    def start(self) -> dict:
        """The fixed "Hi!" and the bot's first answer."""
        return self.human_says(FIXED_OPENING, fixed=True)

    def human_says(self, text: str, fixed: bool = False) -> dict:
        """The worker's message and the bot's answer to it."""
        self.add_human_message(text, fixed)
        return self.bot_replies()

    def add_human_message(self, text: str, fixed: bool = False, provenance: dict | None = None) -> None:
        """The worker's message alone: a world stores it (and tells the page) before the reply, which may
        take a minute."""
        if self.chat_done:
            raise RuntimeError(f"the conversation already has {self.num_turns} bot turns")
        unannotated = [i for i in self.bot_turns if i not in self.annotations]
        if unannotated:
            raise RuntimeError(f"annotate bot turn {unannotated[0]} before sending the next message")
        self.turns.append({"speaker": "human", "text": text, "time": time.time(),
                           **({"meta": {"fixed": True}} if fixed else {}),
                           **({"provenance": provenance} if provenance is not None else {})})

    def bot_replies(self) -> dict:
        """The bot's answer to the worker's last message, added as a turn. On a gold turn a known-bad reply is
        shown instead (the bot still answers, so its history stays its own; its reply kept in ``meta.gold``)."""
        self.agent.observe(history_observation(self.turns if self.resumed else self.turns[-1:]))
        self.resumed = False
        act = self.agent.act()
        meta = turn_meta(act)
        text = str(act.get("text", ""))
        if len(self.bot_turns) in self.gold:
            meta, text = {**meta, "gold": {"replaced": text}}, self.rng.choice(GOLD_REPLIES)
        reply = {"speaker": self.model, "text": text, "time": time.time(), **({"meta": meta} if meta else {})}
        self.turns.append(reply)
        return {"turn_index": len(self.turns) - 1, **reply}

    def annotate(self, turn_index: int, checked: list[str], provenance: dict | None = None) -> None:
        if turn_index not in self.bot_turns:
            raise ValueError(f"turn {turn_index} is not a bot turn of this conversation")
        self.annotations[turn_index] = parse_annotation(checked)
        if provenance is not None:
            self.provenance[turn_index] = provenance

    def attention_of(self, turn_index: int) -> str | None:
        """The criterion the annotation screen of bot turn ``turn_index`` asks to tick alone, if any."""
        return self.attention.get(self.bot_turns.index(turn_index)) if turn_index in self.bot_turns else None

    def rate(self, ratings: dict[str, int], provenance: dict | None = None) -> None:
        if not self.chat_done or len(self.annotations) < self.num_turns:
            raise RuntimeError("final ratings come after all bot turns are annotated")
        if set(ratings) != set(CRITERIA):
            raise ValueError(f"final ratings need exactly {', '.join(CRITERIA)}, got {sorted(ratings)}")
        for name, value in ratings.items():
            if not (isinstance(value, int) and not isinstance(value, bool) and LIKERT_MIN <= value <= LIKERT_MAX):
                raise ValueError(f"rating {name}={value!r} is not an integer in {LIKERT_MIN}..{LIKERT_MAX}")
        self.final_ratings = dict(ratings)
        self.final_provenance = provenance

    def state(self) -> dict:
        return {"model": self.model, "persona": self.persona, "turns": self.turns,
                "annotations": {str(k): v for k, v in self.annotations.items()},
                "final_ratings": self.final_ratings, "attention": {str(k): v for k, v in self.attention.items()},
                "gold": list(self.gold), "provenance": {str(k): v for k, v in self.provenance.items()},
                "final_provenance": self.final_provenance}

    def carry_on(self, record: dict) -> None:
        """The state of a saved record (``state()``), after a crash."""
        self.persona, self.turns = record["persona"], record["turns"]
        self.annotations = {int(k): v for k, v in record["annotations"].items()}
        self.final_ratings, self.resumed = dict(record.get("final_ratings") or {}), True
        self.attention = {int(k): v for k, v in (record.get("attention") or {}).items()}
        self.gold = list(record.get("gold") or [])
        self.provenance = {int(k): v for k, v in (record.get("provenance") or {}).items()}
