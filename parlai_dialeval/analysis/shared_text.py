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
from scipy import sparse

MIN_CHARS = 40
SIMILAR = 0.9
MIN_SHARED = 2  # texts a worker shares with others before it is a signal (one common sentence is no evidence)
MIN_SHARE = 0.2  # ... and that share of the worker's long texts at least
CHUNK = 256  # texts compared with all others at once (char 3-grams make the similarity matrix nearly dense)
MAX_NEAR = 20_000  # texts beyond which only exact copies (after case and spacing) are looked for: n^2 comparisons
NAMED = 10  # workers named in ``shared_with``; ``sharing_workers`` counts them all


def shared_texts(texts: pd.DataFrame, min_chars: int = MIN_CHARS, similar: float = SIMILAR) -> pd.DataFrame:
    """Per worker with texts: ``long_texts`` (of ``min_chars`` or more), ``shared_texts`` (how many of them another
    worker wrote too, or nearly), ``sharing_workers`` (how many other workers wrote them), ``shared_with`` (the
    first ``NAMED`` of those workers, sorted) and ``example`` (one shared text, cut)."""
    long = texts[texts["text"].str.len() >= min_chars]
    workers = sorted(set(texts["worker_id"].astype(str)))
    index = {w: i for i, w in enumerate(workers)}
    owner = long["worker_id"].astype(str).map(index).to_numpy(dtype=np.int64)
    same, distinct = pd.factorize(long["text"])  # each distinct text normalised once (copies are what is sought)
    normal = pd.Series(distinct, dtype=object).str.lower().str.split().str.join(" ")
    several = len(np.unique(owner)) >= 2
    shared = np.zeros(len(long), dtype=bool)  # per long text: another worker wrote it too, or nearly
    wrote = sparse.csr_matrix((np.ones(len(long)), (owner, np.arange(len(long)))), shape=(len(workers), len(long)))
    # worker-by-worker sharing = left @ right.T, a sparse product in C, a block of workers at a time (Python sets
    # of partners were quadratic in a text's writers: minutes on a study whose texts each have a thousand writers)
    if several and len(long) > MAX_NEAR:
        codes = pd.factorize(normal)[0][same]  # the same text after case and spacing
        shared = pd.Series(owner).groupby(codes).nunique().to_numpy()[codes] >= 2
        copies = sparse.csr_matrix((np.ones(len(long)), (np.arange(len(long)), codes)))  # text x distinct text
        left = right = wrote @ copies
    elif several:
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectors = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3)).fit_transform(normal.to_numpy()[same])
        blocks = []
        for start in range(0, vectors.shape[0], CHUNK):
            block = (vectors[start:start + CHUNK] @ vectors.T).tocsr()  # L2-normalised rows: the cosine
            block.data = (block.data >= similar).astype(float)
            block.eliminate_zeros()
            blocks.append(block)
        matches = sparse.vstack(blocks).tocoo()  # text x text: near-identical (not transitive: no groups)
        other = owner[matches.row] != owner[matches.col]
        shared[np.unique(matches.row[other])] = True
        left, right = wrote @ matches.tocsr(), wrote
    else:
        left = right = wrote
    right_t = right.T.tocsr()
    partners = np.zeros(len(workers), dtype=np.int64)
    named: list[str] = [""] * len(workers)
    for start in range(0, len(workers), CHUNK):
        block = (left[start:start + CHUNK] @ right_t).tocsr()  # its rows' indices unsorted: only a few are named
        rows = np.arange(block.shape[0])
        partners[start:start + len(rows)] = np.diff(block.indptr) - np.asarray(block[rows, start + rows] != 0).ravel()
        for k in np.flatnonzero(partners[start:start + len(rows)]):
            found = block.indices[block.indptr[k]:block.indptr[k + 1]]
            first = np.sort(found if len(found) <= NAMED + 1 else np.partition(found, NAMED)[:NAMED + 1])
            named[start + k] = ", ".join(workers[j] for j in first[first != start + k][:NAMED])
    counts = np.bincount(owner[shared], minlength=len(workers))
    examples = long["text"].astype(str).str[:80][shared].groupby(owner[shared]).first()
    long_counts = np.bincount(owner, minlength=len(workers))
    return pd.DataFrame({"worker_id": workers, "long_texts": long_counts, "shared_texts": counts,
                         "sharing_workers": partners, "shared_with": named,
                         "example": [str(examples.get(i, "")) for i in range(len(workers))]})


def reason(row) -> str:
    """The signal's sentence for one worker's row of ``shared_texts`` ("" when it does not fire)."""
    if row["shared_texts"] < max(MIN_SHARED, MIN_SHARE * row["long_texts"]):
        return ""
    others, count = row["shared_with"].split(", ")[:3], int(row["sharing_workers"])
    named = ", ".join(others) + (f" and {count - len(others)} more" if count > len(others) else "")
    return (f"{row['shared_texts']} of {row['long_texts']} texts identical or nearly so to texts of {named} "
            f"(e.g. \"{row['example']}\")")
