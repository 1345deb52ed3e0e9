"""Meaning distortion of the quality-control bot (Ji et al. 2022, section 3.2 and Appendix A.1).

A run of r words of an n-word response is replaced by a run of r words taken from a different
training dialogue; r depends on n, and for n >= 3 the first and last words are never replaced.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Sequence


def replacement_length(n: int) -> int:
    """r for a response of n words (Appendix A.1; 0 for an empty response)."""
    if n <= 0:
        return 0
    if n <= 3:
        return 1
    if n <= 5:
        return 2
    if n <= 8:
        return 3
    if n <= 15:
        return 4
    if n <= 29:
        return 5
    return n // 5


@dataclass(frozen=True)
class Distortion:
    """What was replaced: words[start:start+length] were ``replaced`` and became ``inserted``."""

    start: int
    length: int
    replaced: list[str]
    inserted: list[str]

    def to_dict(self) -> dict:
        return asdict(self)


def distort(words: Sequence[str], donor: Sequence[str], rng: random.Random) -> tuple[list[str], Distortion]:
    """Replace a random run of ``replacement_length(len(words))`` words by a random run of as many
    consecutive words of ``donor`` (the words of another dialogue, cycled if it is shorter)."""
    n = len(words)
    r = replacement_length(n)
    if r == 0:
        return list(words), Distortion(0, 0, [], [])
    if not donor:
        raise ValueError("the donor dialogue has no words")
    # n >= 3 keeps words[0] and words[-1]: the run lies within words[1:n-1].
    low, high = (1, n - 1 - r) if n >= 3 else (0, n - r)
    start = rng.randint(low, high)
    if len(donor) >= r:
        offset = rng.randint(0, len(donor) - r)
        inserted = list(donor[offset:offset + r])
    else:
        inserted = [donor[i % len(donor)] for i in range(r)]
    out = list(words[:start]) + inserted + list(words[start + r:])
    return out, Distortion(start, r, list(words[start:start + r]), inserted)
