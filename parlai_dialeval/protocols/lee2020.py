"""Lee et al. (2020), ChatEval's A/B next-utterance test (section 2.1 and Appendix A)."""
from __future__ import annotations

from parlai_dialeval.protocols.base import Protocol, Question, TurnPolicy

CHOICES = ("a", "b", "tie")

AB = Protocol(
    "ab", "A/B next utterance (ChatEval)", "Lee et al. 2020, 2.1 and Appendix A",
    (Question("overall", "overall", "Which response is the better next utterance in this conversation?",
              "pairwise"),),
    TurnPolicy("response"),
    meta={"choices": CHOICES, "per_hit": 10})

PROTOCOLS = (AB,)
