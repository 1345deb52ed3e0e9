"""dialeval text_metrics: per-model values against computations done here, by hand or straight from
the libraries (Flesch 1948's formula on monosyllabic words; distinct-n as Li et al. 2016 define it;
identical texts have cosine 1 and disjoint ones 0 for Dziri et al.'s coherence; sacrebleu, rouge-score
and nltk called directly for the overlap metrics)."""
from __future__ import annotations

import csv
import json

import pytest

from parlai_dialeval.cli import main
from parlai_dialeval.data import write_jsonl

ALPHA = ["I like red cats.", "Sun is hot."]
BETA = ["Hi there friend.", "Go now."]


def _flesch(words: int) -> float:
    # one sentence of one-syllable words: 206.835 - 1.015 words/sentence - 84.6 syllables/word
    return 206.835 - 1.015 * words - 84.6


def _distinct(texts, n):
    grams = [tuple(t[i: i + n]) for text in texts for t in [text.lower().split()] for i in range(len(t) - n + 1)]
    return len(set(grams)) / len(grams)


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.jsonl"
    write_jsonl([
        {"type": "conversation", "id": "c1", "models": ["alpha"], "turns": [
            {"speaker": "human", "text": "I like red cats."}, {"speaker": "alpha", "text": ALPHA[0]},
            {"speaker": "human", "text": "The dog ran."}, {"speaker": "alpha", "text": ALPHA[1]}]},
        {"type": "conversation", "id": "c2", "models": ["beta"], "turns": [
            {"speaker": "human", "text": "Hello."}, {"speaker": "bot", "text": BETA[0]},
            {"speaker": "human", "text": "Where?"}, {"speaker": "bot", "text": BETA[1]}]},
    ], path)
    return path


def _run(tmp_path, *args) -> dict[str, dict[str, str]]:
    out = tmp_path / "metrics.csv"
    assert main(["text_metrics", "--out", str(out), *args]) == 0
    with open(out, newline="") as handle:
        return {row["model"]: row for row in csv.DictReader(handle)}


def test_reference_free_metrics_per_model(tmp_path, data):
    rows = _run(tmp_path, "--data", str(data))
    assert set(rows) == {"alpha", "beta"}  # the 'bot' speaker is the conversation's model
    for model, texts in (("alpha", ALPHA), ("beta", BETA)):
        row = rows[model]
        assert int(row["responses"]) == 2
        assert float(row["distinct1"]) == pytest.approx(_distinct(texts, 1))
        assert float(row["distinct2"]) == pytest.approx(_distinct(texts, 2))
        lengths = [len(t.split()) for t in texts]
        assert float(row["mean_length"]) == pytest.approx(sum(lengths) / 2)
        assert float(row["flesch"]) == pytest.approx(sum(map(_flesch, lengths)) / 2, abs=0.01)
        assert row["bleu4"] == "" and int(row["referenced"]) == 0
    # alpha echoes its context (distance 0), then answers with words the context lacks (distance 1);
    # no dull phrase, so the penalty is 1
    assert float(rows["alpha"]["coherence"]) == pytest.approx(0.5, abs=1e-9)


def test_overlap_metrics_from_a_references_file(tmp_path, data):
    from nltk.translate.gleu_score import corpus_gleu
    from rouge_score import rouge_scorer
    from sacrebleu.metrics import BLEU

    refs = tmp_path / "refs.jsonl"
    beta_refs = ["Hi there my friend.", "Hello friend."]
    refs.write_text(json.dumps({"id": "c1", "turn_index": 1, "reference": ALPHA[0]}) + "\n"
                    + json.dumps({"id": "c2", "turn_index": 1, "reference": beta_refs}) + "\n")
    rows = _run(tmp_path, "--data", str(data), "--references", str(refs))
    alpha, beta = rows["alpha"], rows["beta"]
    assert int(alpha["referenced"]) == 1 and int(beta["referenced"]) == 1
    # a response equal to its reference
    assert float(alpha["bleu4"]) == pytest.approx(100)
    assert float(alpha["rouge_l"]) == pytest.approx(1)
    assert float(alpha["gleu"]) == pytest.approx(1)
    assert float(beta["bleu1"]) == pytest.approx(BLEU(max_ngram_order=1, effective_order=True).corpus_score(
        [BETA[0]], [[beta_refs[0]], [beta_refs[1]]]).score)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    assert float(beta["rouge_l"]) == pytest.approx(max(scorer.score(r, BETA[0])["rougeL"].fmeasure for r in beta_refs))
    assert float(beta["gleu"]) == pytest.approx(
        corpus_gleu([[r.lower().split() for r in beta_refs]], [BETA[0].lower().split()]))


def test_reference_for_an_unknown_turn_is_an_error(tmp_path, data, capsys):
    refs = tmp_path / "refs.jsonl"
    refs.write_text(json.dumps({"id": "c1", "turn_index": 0, "reference": "Hi"}) + "\n")  # a human turn
    out = tmp_path / "m.csv"
    assert main(["text_metrics", "--data", str(data), "--out", str(out), "--references", str(refs)]) == 2
    assert "reference for no model turn" in capsys.readouterr().err
    assert not out.exists()
    refs.write_text('{"id": "c1", "turn_index": 1}\n')
    assert main(["text_metrics", "--data", str(data), "--out", str(out), "--references", str(refs)]) == 2
    assert "refs.jsonl:1: reference entry needs id, turn_index and reference" in capsys.readouterr().err


def test_a_model_with_no_word_in_its_texts_gets_a_row_without_coherence(tmp_path, data):
    # emoji and punctuation hold no token for TF-IDF: scikit-learn refused to fit ("empty vocabulary")
    # and no model got a CSV; now that model's coherence is empty, as for responses without context
    emoji = tmp_path / "emoji.jsonl"
    write_jsonl([{"type": "conversation", "id": "e1", "models": ["gamma"], "turns": [
        {"speaker": "human", "text": "👍"}, {"speaker": "gamma", "text": "🙂"},
        {"speaker": "human", "text": "?!"}, {"speaker": "gamma", "text": "..."}]}], emoji)
    rows = _run(tmp_path, "--data", str(data), str(emoji))
    assert set(rows) == {"alpha", "beta", "gamma"}
    assert int(rows["gamma"]["responses"]) == 2 and rows["gamma"]["coherence"] == ""
    assert float(rows["alpha"]["coherence"]) == pytest.approx(0.5, abs=1e-9)
