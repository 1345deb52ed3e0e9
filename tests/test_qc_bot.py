"""The quality-control bot (Ji et al. 2022, section 3.2 and Appendix A.1)."""
from __future__ import annotations

import json
import random

import pytest

import parlai_dialeval  # noqa: F401  (registers the dialeval: prefix)
from parlai.core.agents import create_agent, create_agent_from_shared

from parlai_dialeval.agents.qc_bot.corpus import load_corpus
from parlai_dialeval.agents.qc_bot.distortion import distort, replacement_length
from parlai_dialeval.errors import DataError, DialevalError

# Ji et al. (2022) Appendix A.1, transcribed bullet by bullet (independent of the code's branches).
PAPER_TABLE = [(1, 3, lambda n: 1), (4, 5, lambda n: 2), (6, 8, lambda n: 3), (9, 15, lambda n: 4),
               (16, 29, lambda n: 5), (30, 10_000, lambda n: n // 5)]


def paper_r(n: int) -> int:
    return next(rule(n) for low, high, rule in PAPER_TABLE if low <= n <= high)


@pytest.mark.parametrize("n", range(1, 41))
def test_replaced_run_follows_the_paper_table_and_keeps_the_ends(n):
    words = [f"w{i}" for i in range(n)]
    donor = [f"d{i}" for i in range(50)]
    starts = set()
    for seed in range(400):
        out, change = distort(words, donor, random.Random(seed))
        assert change.length == paper_r(n) == replacement_length(n)
        assert len(out) == n
        # exactly the run [start, start+r) changed, and it now holds a contiguous donor run
        assert out[:change.start] == words[:change.start]
        assert out[change.start + change.length:] == words[change.start + change.length:]
        assert change.replaced == words[change.start:change.start + change.length]
        assert out[change.start:change.start + change.length] == change.inserted
        first = donor.index(change.inserted[0])
        assert change.inserted == donor[first:first + change.length]
        if n >= 3:
            assert out[0] == "w0" and out[-1] == f"w{n - 1}"
        starts.add(change.start)
    # the position is random: every admissible start occurs over 400 seeds
    low, high = (1, n - 1 - paper_r(n)) if n >= 3 else (0, n - paper_r(n))
    assert starts == set(range(low, high + 1))


def test_short_donor_is_cycled_and_empty_response_is_left_alone():
    out, change = distort("a b c d e f g h i j".split(), ["x", "y"], random.Random(0))
    assert change.inserted == ["x", "y", "x", "y"]
    assert distort([], ["x"], random.Random(0))[1].length == 0


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("qc") / "corpus.jsonl"
    dialogues = [[f"hello number {i}", f"reply {i} is a rather long sentence with many words in it",
                  f"third {i}", f"fourth turn {i} here"] for i in range(30)]
    path.write_text("\n".join(json.dumps({"dialogue": d}) for d in dialogues) + "\n")
    return path, dialogues


def make(path, **extra):
    return create_agent({"model": "dialeval:qc_bot", "qc_file": str(path), **extra})


def chat(agent, n=8):
    out = []
    for i in range(n):
        agent.observe({"text": f"user says {i}", "episode_done": False})
        out.append(agent.act())
    return out


def test_fixed_seed_gives_identical_responses_and_another_seed_differs(corpus_file):
    path, _ = corpus_file
    first = [m["text"] for m in chat(make(path, qc_seed=7))]
    second = [m["text"] for m in chat(make(path, qc_seed=7))]
    other = [m["text"] for m in chat(make(path, qc_seed=8))]
    assert first == second
    assert first != other


def test_responses_come_from_the_corpus_and_the_audit_explains_them(corpus_file):
    path, dialogues = corpus_file
    for message in chat(make(path, qc_seed=1), 20):
        audit = message["qc_audit"]
        source = dialogues[audit["source_dialogue"]]
        assert audit["original"] == source[audit["source_turn"]]
        assert audit["source_turn"] % 2 == 1  # responses are the second speaker's turns
        assert audit["donor_dialogue"] != audit["source_dialogue"]
        donor_words = " ".join(dialogues[audit["donor_dialogue"]]).split()
        assert " ".join(audit["inserted"]) in " ".join(donor_words)
        words = audit["original"].split()
        rebuilt = words[:audit["start"]] + audit["inserted"] + words[audit["start"] + audit["length"]:]
        assert message["text"] == " ".join(rebuilt)
        assert audit["length"] == paper_r(len(words))


def test_distortion_can_be_turned_off(corpus_file):
    path, dialogues = corpus_file
    for message in chat(make(path, qc_seed=1, qc_distort=False)):
        assert message["text"] == message["qc_audit"]["original"]
        assert message["qc_audit"]["distorted"] is False


def test_copies_share_the_corpus(corpus_file):
    path, _ = corpus_file
    agent = make(path, qc_seed=3)
    copy = create_agent_from_shared(agent.share())
    assert copy.corpus is agent.corpus
    assert chat(copy, 2)[0]["text"]


def test_default_corpus_is_the_chatterbot_package_train_split():
    corpus = load_corpus()
    # chatterbot-corpus 1.3.3 English: 2,026 conversations (shared/data README); one is malformed
    # (a single string) and skipped; 8 in 10 of the rest are train.
    assert 1500 < len(corpus.dialogues) < 1700


def test_interactive_chat_with_the_qc_bot(corpus_file, monkeypatch, capsys):
    from parlai_dialeval.cli import main as dialeval

    path, _ = corpus_file
    typed = iter(["hello there", "how are you?", "[EXIT]"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(typed))
    assert dialeval(["interactive", "-m", "dialeval:qc_bot", "--qc-file", str(path), "--qc-seed", "2"]) == 0
    expected = [m["text"] for m in chat(make(path, qc_seed=2), 2)]
    shown = capsys.readouterr().out
    assert all(f"[QcBot]: {text}" in shown for text in expected)


def test_bad_corpus_files_are_reported_with_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('["a", "b"]\n{"turns": []}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl:2"):
        load_corpus(path=str(bad))
    one = tmp_path / "one.txt"
    one.write_text("only\none dialogue\n")
    with pytest.raises(DialevalError, match="at least 2"):
        load_corpus(path=str(one))
