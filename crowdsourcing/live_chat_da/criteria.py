"""The seven Likert statements of Ji et al. (2022), Figure 1, in the order the paper lists them.

Workers see only the statements (labels hidden) on 0-100 sliders labelled "strongly disagree" /
"strongly agree" at the ends; robotic and repetitive are negatively worded (reversed in analysis).
The wordings live in parlai_dialeval.protocols.ji2022; these are the names the task reads.
"""
from __future__ import annotations

from parlai_dialeval.protocols import get_protocol

PROTOCOL = get_protocol("live_chat_da")
CRITERIA = tuple((q.criterion, q.positive, q.wording) for q in PROTOCOL.questions)
CRITERION_NAMES = PROTOCOL.criteria()
STATEMENTS = tuple(q.wording for q in PROTOCOL.questions)
SCALE_MIN, SCALE_MAX = PROTOCOL.questions[0].scale
ATTITUDES = PROTOCOL.meta["attitudes"]


def study_criteria() -> list[dict]:
    """The `criteria` of the canonical study record."""
    return PROTOCOL.study_criteria()
