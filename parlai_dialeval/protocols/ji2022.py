"""Ji et al. (2022), live-chat direct assessment: the seven Likert statements of Figure 1 on 0-100
sliders ("strongly disagree" .. "strongly agree"); robotic and repetitive are negatively worded."""
from __future__ import annotations

from parlai_dialeval.protocols.base import Protocol, Question, TurnPolicy

SCALE = (0, 100)
ATTITUDES = ("like", "ambivalent", "dislike")
# The order of the paper's Table 3 (the release and our reports list criteria this way).
TABLE3_ORDER = ("interesting", "fun", "consistent", "fluent", "topic", "robotic", "repetitive")


def _statement(name: str, positive: bool, wording: str) -> Question:
    return Question(name, name, wording, "continuous", SCALE, positive, label=name.capitalize())


LIVE_CHAT_DA = Protocol(
    "live_chat_da", "Live-chat direct assessment", "Ji et al. 2022, Figure 1",
    # Figure 1's order, which workers see
    (_statement("robotic", False, "It was obvious that I was talking to a chatbot as opposed to another human user."),
     _statement("interesting", True, "The conversation with the chatbot was interesting."),
     _statement("fun", True, "The conversation with the chatbot was fun/enjoyable."),
     _statement("consistent", True, "The chatbot was consistent throughout the conversation."),
     _statement("fluent", True, "The chatbot's English was fluent and natural throughout the conversation."),
     _statement("repetitive", False, "I felt that the chatbot kept being repetitive during the conversation."),
     _statement("topic", True, "The chatbot stays on topic.")),
    TurnPolicy("dialog"),
    meta={"anchors": ("strongly disagree", "strongly agree"), "attitudes": ATTITUDES,
          "table_order": TABLE3_ORDER})

PROTOCOLS = (LIVE_CHAT_DA,)
