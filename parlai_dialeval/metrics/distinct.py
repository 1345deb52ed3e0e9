"""Lexical diversity: distinct-n (Li et al. 2016), the share of unique n-grams among all n-grams.

Hand-written because it is two lines over nltk's n-grams and no kept library exposes it directly.
"""
from __future__ import annotations

from typing import Iterable


def tokenize(text: str) -> list[str]:
    return text.lower().split()


def distinct_n(texts: Iterable[str], n: int) -> float:
    """Distinct n-grams over all n-grams of a system's responses (corpus level); nan if none."""
    from nltk.util import ngrams  # nltk takes 0.6 s to import: not on every command's start-up

    total = 0
    unique = set()
    for text in texts:
        grams = list(ngrams(tokenize(text), n))
        total += len(grams)
        unique.update(grams)
    return len(unique) / total if total else float("nan")
