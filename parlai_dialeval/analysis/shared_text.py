"""Identical or near-identical free text shared between participants (one template behind several accounts, a
script, or the same model's answer pasted twice), as a pure function: the texts of ``answer_signals.free_texts``
in, per worker how many of their texts another worker also wrote.

Two texts are near-identical when the cosine similarity of their character 3-gram TF-IDF vectors
(scikit-learn's TfidfVectorizer, ``char_wb``) is at least ``SIMILAR``: the same sentence with a word changed,
different spacing or case still matches, two people answering the same question in their own words do not.
Texts shorter than ``MIN_CHARS`` are common to many honest people and are left out: on Ji et al.'s live chats (248
MTurk workers) at 25 characters 122 workers shared two texts or more with others ("hello, how are you today?",
"What is your favorite dish?"), at 40 none. The signal needs ``MIN_SHARED`` shared texts that are also
``MIN_SHARE`` of the worker's long ones. Past
``MAX_NEAR`` long texts only exact copies (after case and spacing) are found: near copies would take n^2 comparisons.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

MIN_CHARS = 40
SIMILAR = 0.9
MIN_SHARED = 2  # texts a worker shares with others before it is a signal (one common sentence is no evidence)
MIN_SHARE = 0.2  # ... and that share of the worker's long texts at least
CHUNK = 256  # texts compared with all others at once (char 3-grams make the similarity matrix nearly dense)
MAX_NEAR = 20_000  # texts beyond which only exact copies (after case and spacing) are looked for: n^2 comparisons


def shared_texts(texts: pd.DataFrame, min_chars: int = MIN_CHARS, similar: float = SIMILAR) -> pd.DataFrame:
    """Per worker with texts: ``long_texts`` (of ``min_chars`` or more), ``shared_texts`` (how many of them another
    worker wrote too, or nearly), ``shared_with`` (those workers, sorted) and ``example`` (one shared text, cut)."""
    long = texts[texts["text"].str.len() >= min_chars]
    workers = sorted(set(texts["worker_id"].astype(str)))
    counts = {w: 0 for w in workers}
    partners: dict[str, set[str]] = {w: set() for w in workers}
    example: dict[str, str] = {}
    normal = long["text"].str.lower().str.split().str.join(" ")
    owner = long["worker_id"].astype(str).to_numpy()
    if long["worker_id"].nunique() >= 2 and len(long) > MAX_NEAR:
        codes = pd.factorize(normal)[0]
        # each text's writers once (not a scan of every text per shared row: a study where most long texts were
        # copied, 500,000 of them, ran for hours)
        writers = pd.Series(owner).groupby(codes).agg(set)  # indexed by code: factorize numbers them 0, 1, ...
        shared = np.flatnonzero(writers.map(len).to_numpy()[codes] >= 2)
        writers_of = writers.to_dict()
        for row in shared:
            counts[owner[row]] += 1
            partners[owner[row]] |= writers_of[codes[row]] - {owner[row]}
            example.setdefault(owner[row], str(long["text"].iloc[row])[:80])
    elif long["worker_id"].nunique() >= 2:
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectors = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3)).fit_transform(normal)
        rows, cols = [], []
        for start in range(0, vectors.shape[0], CHUNK):
            block = (vectors[start:start + CHUNK] @ vectors.T).tocoo()  # L2-normalised rows: the cosine
            close = block.data >= similar
            rows.append(block.row[close] + start)
            cols.append(block.col[close])
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        other = owner[rows] != owner[cols]
        for row, col in zip(rows[other], cols[other]):
            partners[owner[row]].add(owner[col])
        for row in np.unique(rows[other]):
            counts[owner[row]] += 1
            example.setdefault(owner[row], str(long["text"].iloc[row])[:80])
    long_counts = long["worker_id"].astype(str).value_counts()
    return pd.DataFrame({"worker_id": workers,
                         "long_texts": [int(long_counts.get(w, 0)) for w in workers],
                         "shared_texts": [counts[w] for w in workers],
                         "shared_with": [", ".join(sorted(partners[w])) for w in workers],
                         "example": [example.get(w, "") for w in workers]})


def reason(row) -> str:
    """The signal's sentence for one worker's row of ``shared_texts`` ("" when it does not fire)."""
    if row["shared_texts"] < max(MIN_SHARED, MIN_SHARE * row["long_texts"]):
        return ""
    others = row["shared_with"].split(", ")
    named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return (f"{row['shared_texts']} of {row['long_texts']} texts identical or nearly so to texts of {named} "
            f"(e.g. \"{row['example']}\")")
