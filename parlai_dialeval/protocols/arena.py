"""Arena battles (Chiang et al. 2024, "Chatbot Arena"; FastChat's anonymous arena): the participant writes
their own prompt, two anonymous models answer side by side, the participant votes, and the names are shown
once the battle ends."""
from __future__ import annotations

from parlai_dialeval.protocols.base import Protocol, Question, TurnPolicy

# what the participant may answer; "both_bad" is stored as choice "tie" with tie_kind "both_bad"
CHOICES = ("a", "b", "tie", "both_bad")

ARENA = Protocol(
    "arena", "Arena battles (anonymous side-by-side replies to the participant's own prompts)",
    "Chiang et al. 2024, Chatbot Arena (ICML); FastChat's anonymous arena",
    (Question("overall", "overall", "Which reply is better?", "pairwise"),),
    TurnPolicy("turn"),
    meta={"choices": CHOICES, "sides": ("Model A", "Model B")})

PROTOCOLS = (ARENA,)
