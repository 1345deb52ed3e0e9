"""SM-Turn + SM-Dialog (Smith et al. 2022, section 3.1.4) as plain Python, driven by the Mephisto world.

The worker chats with one model; the first human message is fixed to "Hi!"; after every bot message
the worker ticks engaging / human-like / interesting or "none of the above"; after 6 turns each the
worker gives three 1-5 Likert ratings of the partner (wordings in parlai_dialeval.protocols.smith2022).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from parlai_dialeval.crowdsourcing.platform.bots import turn_meta
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

    def add_human_message(self, text: str, fixed: bool = False) -> None:
        """The worker's message alone: a world stores it (and tells the page) before the reply, which may
        take a minute."""
        if self.chat_done:
            raise RuntimeError(f"the conversation already has {self.num_turns} bot turns")
        unannotated = [i for i in self.bot_turns if i not in self.annotations]
        if unannotated:
            raise RuntimeError(f"annotate bot turn {unannotated[0]} before sending the next message")
        self.turns.append({"speaker": "human", "text": text, "time": time.time(),
                           **({"meta": {"fixed": True}} if fixed else {})})

    def bot_replies(self) -> dict:
        """The bot's answer to the worker's last message, added as a turn."""
        self.agent.observe(history_observation(self.turns if self.resumed else self.turns[-1:]))
        self.resumed = False
        act = self.agent.act()
        reply = {"speaker": self.model, "text": str(act.get("text", "")), "time": time.time(),
                 **({"meta": turn_meta(act)} if turn_meta(act) else {})}
        self.turns.append(reply)
        return {"turn_index": len(self.turns) - 1, **reply}

    def annotate(self, turn_index: int, checked: list[str]) -> None:
        if turn_index not in self.bot_turns:
            raise ValueError(f"turn {turn_index} is not a bot turn of this conversation")
        self.annotations[turn_index] = parse_annotation(checked)

    def rate(self, ratings: dict[str, int]) -> None:
        if not self.chat_done or len(self.annotations) < self.num_turns:
            raise RuntimeError("final ratings come after all bot turns are annotated")
        if set(ratings) != set(CRITERIA):
            raise ValueError(f"final ratings need exactly {', '.join(CRITERIA)}, got {sorted(ratings)}")
        for name, value in ratings.items():
            if not (isinstance(value, int) and not isinstance(value, bool) and LIKERT_MIN <= value <= LIKERT_MAX):
                raise ValueError(f"rating {name}={value!r} is not an integer in {LIKERT_MIN}..{LIKERT_MAX}")
        self.final_ratings = dict(ratings)

    def state(self) -> dict:
        return {"model": self.model, "persona": self.persona, "turns": self.turns,
                "annotations": {str(k): v for k, v in self.annotations.items()},
                "final_ratings": self.final_ratings}
