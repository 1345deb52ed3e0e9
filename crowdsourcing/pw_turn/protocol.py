"""PW-Turn (Smith et al. 2022, section 3.1.2 and Appendix A) as plain Python, driven by the Mephisto world.

After each worker message both models answer the *same* history; the worker sees the two answers in
random order, picks the better one for the configured question and justifies it; the chosen answer
becomes the next turn for both models. Models are stateless between turns here: before every turn each
model is reset and observes the whole dialogue so far as one message (ParlAI's default history
delimiter, a newline), so identical histories are guaranteed by construction and recorded per turn.
"""
from __future__ import annotations

import random
import time
from contextlib import nullcontext
from dataclasses import dataclass, field

from parlai_dialeval.crowdsourcing.platform.bots import turn_meta
from parlai_dialeval.crowdsourcing.platform.checks import GOLD_REPLIES
from parlai_dialeval.protocols import get_protocol

PROTOCOL = get_protocol("pw_turn")
QUESTIONS = {q.id: q.wording for q in PROTOCOL.questions}
FIXED_OPENING = PROTOCOL.turns.fixed_opening
HISTORY_DELIMITER = PROTOCOL.turns.history_delimiter

# The criterion each question measures, as docs/single_model_analysis.md names them.
CRITERION = {q.id: q.criterion for q in PROTOCOL.questions}


def question_text(question: str) -> str:
    if question not in QUESTIONS:
        raise ValueError(f"unknown PW-Turn question {question!r} (expected one of {', '.join(QUESTIONS)})")
    return QUESTIONS[question]


def history_observation(turns: list[dict]) -> dict:
    """What every model observes before answering: the whole dialogue as one ParlAI message."""
    return {"id": "human", "text": HISTORY_DELIMITER.join(t["text"] for t in turns), "episode_done": False}


@dataclass
class PairwiseTurnSession:
    """One worker's conversation with a pair of models (``agents``: model name -> ParlAI agent)."""

    agents: dict
    question: str = "preference"
    num_turns: int = 6
    rng: random.Random = field(default_factory=random.Random)
    turns: list[dict] = field(default_factory=list)
    choices: list[dict] = field(default_factory=list)
    pending: dict | None = None
    # checks by turn number (0-based; platform/checks.py): attention checks instruct which side to choose, and
    # gold turns show a known-bad reply on one side in place of its model's
    attention: list[int] = field(default_factory=list)
    gold: list[int] = field(default_factory=list)

    def __post_init__(self):
        if len(self.agents) != 2:
            raise ValueError(f"PW-Turn compares exactly two models, got {list(self.agents)}")
        question_text(self.question)

    @property
    def done(self) -> bool:
        return len(self.choices) >= self.num_turns

    def human_says(self, text: str, fixed: bool = False, stream=None) -> dict:
        """Add the worker's message and return the two candidate answers in display order;
        ``stream(side, agent)``: a context manager around each candidate's reply (the world's display)."""
        self.add_human_message(text, fixed)
        return self.bot_replies(stream)

    def add_human_message(self, text: str, fixed: bool = False, provenance: dict | None = None) -> None:
        """The worker's message alone: a world stores it (and tells the page) before the two replies."""
        if self.pending is not None:
            raise RuntimeError("choose between the pending responses before the next message")
        if self.done:
            raise RuntimeError(f"the conversation already has {self.num_turns} bot turns")
        self.turns.append({"speaker": "human", "text": text, "time": time.time(),
                           **({"meta": {"fixed": True}} if fixed else {}),
                           **({"provenance": provenance} if provenance is not None else {})})

    def bot_replies(self, stream=None) -> dict:
        """Both models' answers to the dialogue so far, which ends with the worker's message."""
        observation = history_observation(self.turns)
        responses, costs = {}, {}
        left, right = list(self.agents)
        if self.rng.random() < 0.5:  # sides first, so a page can show each reply where it will stay
            left, right = right, left
        for name, agent in self.agents.items():
            agent.reset()
            agent.observe(dict(observation))
            with stream("left" if name == left else "right", agent) if stream else nullcontext():
                act = agent.act()
            responses[name], costs[name] = str(act.get("text", "")), turn_meta(act)
        self.pending = {"turn_index": len(self.turns), "left": left, "right": right,
                        "responses": responses, "costs": costs,
                        "observed": {name: observation["text"] for name in self.agents},
                        "context": [dict(t) for t in self.turns], "shown_at": time.time()}
        number = len(self.choices)
        if number in self.gold:  # one side's reply replaced by a known-bad one; the other is right
            bad = self.rng.choice(("left", "right"))
            self.pending["gold"] = {"side": bad, "replaced": responses[self.pending[bad]]}
            responses[self.pending[bad]] = self.rng.choice(GOLD_REPLIES)
        elif number in self.attention:
            self.pending["attention"] = {"choose": self.rng.choice(("left", "right"))}
        return {"left": responses[left], "right": responses[right]}

    def choose(self, side: str, justification: str, provenance: dict | None = None) -> dict:
        """Record the worker's choice ('left' or 'right') and continue the dialogue with it."""
        if self.pending is None:
            raise RuntimeError("no responses are waiting for a choice")
        if side not in ("left", "right"):
            raise ValueError(f"choice must be 'left' or 'right', got {side!r}")
        if not justification.strip():
            raise ValueError("a justification is required")
        pending, self.pending = self.pending, None
        duration = time.time() - pending.pop("shown_at")
        winner = pending[side]
        loser = pending["right" if side == "left" else "left"]
        gold = {"gold": pending["gold"]} if "gold" in pending else {}
        self.turns.append({"speaker": winner, "text": pending["responses"][winner], "time": time.time(),
                           "meta": {**pending["costs"][winner], **gold, "rejected": {
                               "model": loser, "text": pending["responses"][loser], **pending["costs"][loser]}}})
        choice = {**pending, "choice": side, "winner": winner, "justification": justification.strip(),
                  "duration": duration, "provenance": provenance}
        self.choices.append(choice)
        return choice

    def state(self) -> dict:
        """JSON-serialisable record of the session, saved with the unit and read by ``export``."""
        return {"question": self.question, "models": list(self.agents), "turns": self.turns,
                "choices": self.choices, "attention": list(self.attention), "gold": list(self.gold)}


@dataclass(frozen=True)
class OnboardingPair:
    good: str
    bad: str


# Appendix A: a conversation with four response pairs, one clearly better (coherent, on-topic, polite)
# for every question; the worker must pick all four correctly within two tries.
ONBOARDING_CONVERSATION = [
    ("Hi! What do you like to do at weekends?",
     OnboardingPair("I love going hiking with my dog when the weather is nice. How about you?",
                    "Weekend weekend weekend weekend.")),
    ("I usually go swimming. Do you like swimming?",
     OnboardingPair("Not really, I am not a strong swimmer, but I enjoy relaxing at the beach.",
                    "My favourite colour is the number seven.")),
    ("Haha, the beach is great. Which beach do you go to?",
     OnboardingPair("There is a quiet one near my town where you can watch the sunset.",
                    "I don't want to talk to you, go away.")),
    ("That sounds lovely. Do you go there often?",
     OnboardingPair("Almost every summer evening; it is my favourite way to unwind after work.",
                    "Yes yes yes yes yes yes yes yes.")),
]


def onboarding_task(rng: random.Random) -> dict:
    """The onboarding conversation with each pair's order randomised; answers kept server-side."""
    pairs, answers = [], []
    for human, pair in ONBOARDING_CONVERSATION:
        good_left = rng.random() < 0.5
        left, right = (pair.good, pair.bad) if good_left else (pair.bad, pair.good)
        pairs.append({"human": human, "left": left, "right": right})
        answers.append("left" if good_left else "right")
    return {"pairs": pairs, "answers": answers}


@dataclass
class OnboardingGrader:
    answers: list[str]
    max_tries: int = 2
    tries: list[list[str]] = field(default_factory=list)

    def submit(self, choices: list[str]) -> str:
        """'pass' when every pair is right, 'retry' while tries remain, else 'fail'."""
        if len(choices) != len(self.answers):
            raise ValueError(f"expected {len(self.answers)} choices, got {len(choices)}")
        self.tries.append(list(choices))
        if list(choices) == self.answers:
            return "pass"
        return "retry" if len(self.tries) < self.max_tries else "fail"
