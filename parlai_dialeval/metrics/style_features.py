"""Style covariates of replies, counted from their texts: the features LMArena controls its ranking for
(length, markdown headers, list items, bold) and two of dialogue (questions asked back, emoji).

Vectorised with pandas' string methods (one regular expression per feature over the whole column, no Python
loop per text): a million replies take seconds. Whole conversations (ACUTE, live chat) get the mean per bot
turn. docs/pairwise_analysis.md, "Style control", says what each feature counts.
"""
from __future__ import annotations

import pandas as pd

# Each feature: (regular expression whose matches are counted, what one match is). Length counts words
# (runs of non-space characters), not a model's tokenizer's tokens: the same for every model and language.
PATTERNS = {
    "length": (r"\S+", "words (runs of non-space characters)"),
    "headers": (r"(?m)^[ \t]{0,3}#{1,6}[ \t]+\S", "markdown headers (# to ###### at a line's start)"),
    "lists": (r"(?m)^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S", "markdown list items (-, *, + or 1. at a line's start)"),
    "bold": (r"\*\*[^*\n]+?\*\*|__[^_\n]+?__", "bold spans (**x** or __x__)"),
    "questions": (r"\?+", "questions (runs of question marks)"),
    # the emoji blocks of Unicode 15 (pictographs, emoticons, transport, supplemental, symbols and
    # pictographs extended-A, dingbats, miscellaneous symbols, regional indicator letters of flags)
    "emoji": ("[\U0001F300-\U0001F5FF\U0001F600-\U0001F64F\U0001F680-\U0001F6FF\U0001F900-\U0001F9FF"
              "\U0001FA70-\U0001FAFF\u2600-\u26FF\u2700-\u27BF\U0001F1E6-\U0001F1FF]", "emoji (pictographs)"),
}
FEATURES = tuple(PATTERNS)


def text_features(texts: pd.Series) -> pd.DataFrame:
    """One row per text (same index), one count column per FEATURES; a missing text counts nothing. Each distinct
    text is counted once: replies repeat (ChatEval shows one response to three workers, a bot says "hi" often)."""
    texts = texts.astype(object).where(texts.notna(), "").astype(str)
    codes, distinct = pd.factorize(texts)
    distinct = pd.Series(distinct)
    counts = {name: distinct.str.count(pattern).to_numpy(dtype=float)[codes] for name, (pattern, _) in PATTERNS.items()}
    return pd.DataFrame(counts, index=texts.index)


def conversation_features(turns: pd.DataFrame, human: str = "human") -> pd.DataFrame:
    """The mean of ``text_features`` over each conversation's bot turns (every speaker but ``human``), indexed
    by ``conversation_id``; ``turns`` as ``EvalData.turns()`` gives them."""
    bot = turns[turns["speaker"].astype(str) != human]
    features = text_features(bot["text"].reset_index(drop=True))
    features["conversation_id"] = bot["conversation_id"].astype(str).to_numpy()
    return features.groupby("conversation_id", sort=False)[list(FEATURES)].mean()
