"""Word-overlap, readability and coherence metrics, against values computed by hand in the tests."""
from __future__ import annotations

import math

import numpy as np
import pytest

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.metrics import overlap
from parlai_dialeval.metrics.coherence import HFMeanPoolEncoder, TfidfEncoder, penalty, semantic_similarity
from parlai_dialeval.metrics.readability import flesch_reading_ease


def test_bleu_one_and_four_by_hand():
    # hyp "the cat sat on the mat" vs ref "the cat is on the mat": unigram precision 5/6, equal
    # lengths (no brevity penalty); 4-gram precisions 5/6, 3/5, 1/4, 0/3 -> BLEU-4 0 without smoothing.
    hyp, ref = ["the cat sat on the mat"], ["the cat is on the mat"]
    assert overlap.bleu(hyp, ref, 1) == pytest.approx(100 * 5 / 6)
    from sacrebleu.metrics import BLEU
    assert overlap.bleu(hyp, ref, 4) == pytest.approx(BLEU().corpus_score(hyp, [ref]).score)
    assert overlap.bleu(["a b c d e"], ["a b c d e"], 4) == pytest.approx(100)


def test_rouge_l_gleu_and_distinct():
    # LCS of "the cat sat on the mat" and "the cat is on the mat" is 5 tokens: P = R = F = 5/6.
    assert overlap.rouge_l(["the cat sat on the mat"], ["the cat is on the mat"]) == pytest.approx(5 / 6)
    # best of two references counts
    assert overlap.rouge_l(["hello friend"], [["bye", "hello friend"]]) == pytest.approx(1.0)
    # GLEU 1..4-grams: hyp has 6+5+4+3 = 18 n-grams, ref 18; matches 5+3+1+0 = 9 -> min(P, R) = 0.5
    assert overlap.gleu(["the cat sat on the mat"], ["the cat is on the mat"]) == pytest.approx(0.5)
    scores = overlap.overlap_metrics(["a a b", "c d"], ["a b", "c d"], with_meteor=False)
    assert scores["distinct1"] == pytest.approx(4 / 5) and scores["distinct2"] == pytest.approx(3 / 3)
    with pytest.raises(DialevalError, match="2 hypotheses but 1 references"):
        overlap.bleu(["a", "b"], ["a"])


def test_meteor_without_wordnet_says_what_to_do(monkeypatch):
    monkeypatch.setattr(overlap, "wordnet_available", lambda: False)
    with pytest.raises(DialevalError, match=r"METEOR needs NLTK's WordNet data.*nltk\.downloader wordnet"):
        overlap.meteor(["the cat"], ["the cat"])
    assert "meteor" not in overlap.overlap_metrics(["the cat"], ["the cat"])


def test_flesch_reading_ease_by_formula():
    # 6 one-syllable words, 1 sentence: 206.835 - 1.015 * 6 - 84.6 * 1 (Flesch 1948)
    assert flesch_reading_ease("The cat sat on the mat.") == pytest.approx(206.835 - 1.015 * 6 - 84.6, abs=0.01)
    assert math.isnan(flesch_reading_ease("   "))
    assert flesch_reading_ease("Conversational agents are beautifully complicated.") < 30


def test_penalty_factor():
    assert penalty("I like movies") == pytest.approx(1.0)  # nothing dull: L' = L''
    # "i don't know" is dull; content words: don't, know, movies (L' = 3), non-dull: movies (L'' = 1)
    assert penalty("I don't know, movies") == pytest.approx(1 + math.log((2 + 3) / (2 + 1)))


def test_semantic_similarity_with_a_pluggable_encoder():
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}
    encoder = lambda texts: np.array([vectors[t] for t in texts])  # noqa: E731
    # distances to "c": 1 - cos 45 deg for both context utterances; penalty 1 (no dull words)
    assert semantic_similarity([(["a", "b"], "c")], encoder)[0] == pytest.approx(1 - math.sqrt(0.5))
    assert math.isnan(semantic_similarity([([], "c")], encoder)[0])
    on_topic, off_topic = semantic_similarity(
        [(["Do you like movies?"], "I like movies"), (["Do you like movies?"], "The weather is cold")],
        TfidfEncoder())
    assert on_topic < off_topic


def test_hf_mean_pool_encoder_from_a_local_path(tmp_path):
    from tiny_lm import build_gpt2

    path = build_gpt2(tmp_path / "enc", n_positions=32)
    vectors = HFMeanPoolEncoder(str(path))(["Hi! How are you?", "That makes sense!", "Hi!"])
    assert vectors.shape == (3, 32) and np.isfinite(vectors).all()


def test_distinct_counts_of_every_group_at_once_equal_sets_of_ngram_tuples():
    # Issue 43: a set of n-gram tuples per model took 11 s of analyze_pairwise on 100,000 votes; the integer
    # codes must count what the tuples count: repeated texts, empty texts, case folding, no n-gram across
    # two texts, a group without texts.
    import numpy as np

    from parlai_dialeval.metrics.distinct import distinct_counts

    rng = np.random.default_rng(2)
    words = ["a", "A", "b", "c", "d#", "-", "x y", ""]
    texts = [" ".join(rng.choice(words, rng.integers(0, 7))) for _ in range(300)]
    texts += texts[:40]  # the same texts again, in other groups
    group = rng.integers(0, 5, len(texts))
    for n in (1, 2, 3):
        unique, total, tokens = distinct_counts(texts, group, n, 6)
        for g in range(6):
            mine = [t.lower().split() for t, k in zip(texts, group) if k == g]
            grams = [tuple(t[i:i + n]) for t in mine for i in range(len(t) - n + 1)]
            assert (unique[g], total[g], tokens[g]) == (len(set(grams)), len(grams), sum(map(len, mine))), (n, g)
