"""Word-overlap metrics against reference responses (Ji et al. 2022, Table 5): BLEU-1/4 (sacrebleu),
ROUGE-L (rouge-score), METEOR and GLEU (nltk). Corpus-level, one score per system.

``references`` is one reference string per hypothesis, or one list of reference strings per
hypothesis (multi-reference).
"""
from __future__ import annotations

from statistics import fmean
from typing import Sequence

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.metrics.distinct import distinct_n, tokenize

METEOR_MISSING = ("METEOR needs NLTK's WordNet data, which is not installed here: run "
                  "`python -m nltk.downloader wordnet` (or point $NLTK_DATA to a folder holding "
                  "corpora/wordnet); the other metrics do not need it")


def _references(hypotheses: Sequence[str], references) -> list[list[str]]:
    refs = [[r] if isinstance(r, str) else list(r) for r in references]
    if len(refs) != len(hypotheses):
        raise DialevalError(f"{len(hypotheses)} hypotheses but {len(refs)} references")
    if any(not r for r in refs):
        raise DialevalError("every hypothesis needs at least one reference")
    return refs


def bleu(hypotheses: Sequence[str], references, max_order: int = 4) -> float:
    """Corpus BLEU (0-100) up to ``max_order``-grams: BLEU-1 with 1, BLEU-4 with 4 (sacrebleu)."""
    from sacrebleu.metrics import BLEU

    refs = _references(hypotheses, references)
    # sacrebleu takes reference streams: stream k holds every hypothesis's k-th reference (None when absent).
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(max(map(len, refs)))]
    return BLEU(max_ngram_order=max_order, effective_order=max_order == 1).corpus_score(
        list(hypotheses), streams).score


def rouge_l(hypotheses: Sequence[str], references) -> float:
    """Mean ROUGE-L F-measure (best reference per hypothesis), rouge-score with stemming."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    refs = _references(hypotheses, references)
    return fmean(max(scorer.score(r, h)["rougeL"].fmeasure for r in rs) for h, rs in zip(hypotheses, refs))


def wordnet_available() -> bool:
    import nltk

    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        try:
            nltk.data.find("corpora/wordnet.zip")
        except LookupError:
            return False
    return True


def meteor(hypotheses: Sequence[str], references) -> float:
    """Mean METEOR (nltk) over hypotheses; raises a clear error when WordNet data is missing."""
    if not wordnet_available():
        raise DialevalError(METEOR_MISSING)
    from nltk.translate.meteor_score import meteor_score

    refs = _references(hypotheses, references)
    return fmean(meteor_score([tokenize(r) for r in rs], tokenize(h)) for h, rs in zip(hypotheses, refs))


def gleu(hypotheses: Sequence[str], references, max_order: int = 4) -> float:
    """Corpus GLEU (Wu et al. 2016; nltk): min of n-gram precision and recall, 1..max_order-grams."""
    from nltk.translate.gleu_score import corpus_gleu

    refs = _references(hypotheses, references)
    return corpus_gleu([[tokenize(r) for r in rs] for rs in refs], [tokenize(h) for h in hypotheses],
                       max_len=max_order)


def overlap_metrics(hypotheses: Sequence[str], references, with_meteor: bool | None = None) -> dict[str, float]:
    """Every metric of Ji et al.'s Table 5 plus distinct-1/2; METEOR only where WordNet is present
    (``with_meteor=True`` makes its absence an error)."""
    scores = {"bleu1": bleu(hypotheses, references, 1), "bleu4": bleu(hypotheses, references, 4),
              "rouge_l": rouge_l(hypotheses, references), "gleu": gleu(hypotheses, references),
              "distinct1": distinct_n(hypotheses, 1), "distinct2": distinct_n(hypotheses, 2)}
    if with_meteor or (with_meteor is None and wordnet_available()):
        scores["meteor"] = meteor(hypotheses, references)
    return scores
