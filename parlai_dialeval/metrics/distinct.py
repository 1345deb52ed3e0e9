"""Lexical diversity: distinct-n (Li et al. 2016), the share of unique n-grams among all n-grams.

Hand-written because no kept library exposes it directly. Tokens are counted as integer codes with numpy
(``distinct_counts``): a Python set of n-gram tuples per system took 11 s of analyze_pairwise on 100,000
votes (issue 43).
"""
from __future__ import annotations

import itertools
from typing import Iterable

import numpy as np
import pandas as pd

CHUNK = 50_000  # texts tokenised at a time: a million texts' token strings at once would take gigabytes


def tokenize(text: str) -> list[str]:
    return text.lower().split()


def distinct_n(texts: Iterable[str], n: int) -> float:
    """Distinct n-grams over all n-grams of a system's responses (corpus level); nan if none."""
    texts = list(texts)
    unique, total, _ = distinct_counts(texts, np.zeros(len(texts), dtype=np.int64), n, 1)
    return unique[0] / total[0] if total[0] else float("nan")


def distinct_counts(texts, group, n: int, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct n-grams, n-grams, tokens) of the texts of each group (``group``: codes 0..groups-1, one per
    text), every group at once; n-grams never span two texts. A text repeated within a group counts once
    among the distinct n-grams and every time in the totals; each distinct text is tokenised once."""
    group = np.asarray(group, dtype=np.int64)
    text_code, distinct_texts = pd.factorize(pd.Series(texts, dtype=str))
    flat, lengths = _token_codes(list(distinct_texts))
    grams = np.maximum(lengths - n + 1, 0)
    total = np.bincount(group, grams[text_code], groups).astype(np.int64)
    token_total = np.bincount(group, lengths[text_code], groups).astype(np.int64)
    # The distinct n-grams of each group: those of its distinct texts, as one integer code per n-gram.
    width = max(len(distinct_texts), 1)
    owner_of_text, text = np.divmod(np.unique(group * width + text_code), width)  # (group, distinct text) pairs
    starts = np.cumsum(lengths) - lengths
    count = grams[text]
    offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    first = np.repeat(starts[text], count) + offset  # position of each n-gram's first token in ``flat``
    code = np.zeros(len(first), dtype=np.int64)
    for j in range(n):  # renumbered after each token so that the codes stay below the number of n-grams
        code = pd.factorize(code * (flat.max(initial=0) + 1) + flat[first + j])[0]
    owner = np.repeat(owner_of_text, count)
    keys = np.unique(owner * (code.max(initial=0) + 1) + code)
    unique = np.bincount(keys // (code.max(initial=0) + 1), minlength=groups)
    return unique, total, token_total


def _token_codes(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(the texts' tokens one after another as integer codes, one code per distinct token; tokens per text)."""
    vocabulary: dict[str, int] = {}
    codes, lengths = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for start in range(0, len(texts), CHUNK):
        tokens = [tokenize(t) for t in texts[start:start + CHUNK]]
        local, words = pd.factorize(pd.Series(list(itertools.chain.from_iterable(tokens)), dtype=object))
        codes.append(np.array([vocabulary.setdefault(w, len(vocabulary)) for w in words], dtype=np.int64)[local])
        lengths.append(np.array([len(t) for t in tokens], dtype=np.int64))
    return np.concatenate(codes), np.concatenate(lengths)
