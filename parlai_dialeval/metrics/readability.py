"""Readability: Flesch reading ease (Flesch 1948), as Santhanam & Shaikh (2020) use it for fluency."""
from __future__ import annotations

from functools import lru_cache

# Flesch's constants for English.
BASE, PER_WORDS_PER_SENTENCE, PER_SYLLABLES_PER_WORD = 206.835, 1.015, 84.6


@lru_cache(maxsize=1)
def _cmudict_available() -> bool:
    import nltk

    try:
        nltk.data.find("corpora/cmudict")
    except LookupError:
        return False
    return True


def flesch_reading_ease(text: str) -> float:
    """Higher is easier; nan for text without words.

    With NLTK's cmudict present this is textstat's own score. Without it textstat would try to
    download cmudict, so the formula is applied to textstat's word and sentence counts and pyphen's
    syllables (textstat's own fallback for words cmudict lacks).
    """
    import textstat

    words = textstat.lexicon_count(text)
    if not words:
        return float("nan")
    if _cmudict_available():
        return float(textstat.flesch_reading_ease(text))
    sentences = max(1, textstat.sentence_count(text))
    return BASE - PER_WORDS_PER_SENTENCE * words / sentences - PER_SYLLABLES_PER_WORD * syllables(text) / words


def syllables(text: str) -> int:
    """Syllables by pyphen's hyphenation points (+1 per word), over textstat's word list."""
    import pyphen
    import textstat

    dictionary = pyphen.Pyphen(lang="en_US")
    return sum(len(dictionary.positions(word)) + 1 for word in textstat.remove_punctuation(text).lower().split())
