"""The seven Likert statements of Ji et al. (2022), Figure 1, in the order the paper lists them.

Workers see only the statements (labels hidden) on 0-100 sliders labelled "strongly disagree" /
"strongly agree" at the ends; robotic and repetitive are negatively worded (reversed in analysis).
"""
from __future__ import annotations

CRITERIA = (
    ("robotic", False, "It was obvious that I was talking to a chatbot as opposed to another human user."),
    ("interesting", True, "The conversation with the chatbot was interesting."),
    ("fun", True, "The conversation with the chatbot was fun/enjoyable."),
    ("consistent", True, "The chatbot was consistent throughout the conversation."),
    ("fluent", True, "The chatbot's English was fluent and natural throughout the conversation."),
    ("repetitive", False, "I felt that the chatbot kept being repetitive during the conversation."),
    ("topic", True, "The chatbot stays on topic."),
)
CRITERION_NAMES = tuple(name for name, _, _ in CRITERIA)
STATEMENTS = tuple(statement for _, _, statement in CRITERIA)
SCALE_MIN, SCALE_MAX = 0, 100
ATTITUDES = ("like", "ambivalent", "dislike")


def study_criteria() -> list[dict]:
    """The `criteria` of the canonical study record."""
    return [{"name": name, "positive": positive, "scale": "continuous", "min": SCALE_MIN, "max": SCALE_MAX,
             "question": statement} for name, positive, statement in CRITERIA]
