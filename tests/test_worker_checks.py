"""Worker checks of Smith et al. 2022, Appendix B; expected outcomes worked out by hand per message list."""
from __future__ import annotations

import pytest

from parlai_dialeval.analysis import worker_checks as wc
from parlai_dialeval.data import from_records

GOOD = ["I love hiking in the mountains", "My dog comes with me every weekend", "What do you do for fun?"]


def failed(messages, **settings):
    return wc.violations(wc.check_messages(messages, wc.CheckSettings(**settings)))


def test_clean_conversation_passes():
    assert failed(GOOD) == []


def test_short_messages_use_the_mean_word_count():
    # 2 + 3 + 3 words = mean 2.67 < 3 fails; 3 + 3 + 3 = 3.0 passes (the rule is "less than three").
    assert failed(["ok sure", "yes I do", "that is nice"]) == ["short_messages"]
    assert failed(["ok sure thing", "yes I do", "that is nice"]) == []
    assert failed([]) == ["short_messages"]


def test_greeting_only_counts_in_the_first_typed_message():
    assert failed(["Hello, how is your day going?", *GOOD]) == ["greeting_first"]
    assert failed([*GOOD, "hey that sounds really fun"]) == []
    # "this" and "shine" contain "hi" but are not greetings
    assert failed(["this is my shine time today", *GOOD]) == []


def test_all_caps_needs_several_messages():
    one = ["I LOVE HIKING A LOT", *GOOD]
    assert failed(one) == []
    assert failed(["I LOVE HIKING A LOT", "MY DOG IS GREAT TOO", *GOOD]) == ["all_caps"]
    assert failed(one, min_caps_messages=1) == ["all_caps"]
    # short capital words such as "OK" are not shouting
    assert failed(["OK I see that now", "OK so you like it", "OK what else then"]) == []


def test_repeated_first_message():
    assert failed(["I like pizza a lot", "what about you then", "I like pizza a lot!"]) == ["repeated_first"]
    assert failed(["I like pizza a lot", "I like pizza a lot", "I like pizza a lot"],
                  min_repeats=3) == []


def test_offensive_words_whole_words_and_phrases():
    assert "fuck" in wc.offensive_words() and "kill yourself" in wc.offensive_words()
    assert failed([*GOOD, "you are a total bastard honestly"]) == ["offensive"]
    assert failed([*GOOD, "just go kill yourself already"]) == ["offensive"]
    # substrings of clean words ("Scunthorpe", "cocktail", "shitake" spelled shiitake) do not match
    assert failed(["I live in Scunthorpe near the coast", "we had a cocktail at night",
                   "shiitake mushrooms are tasty"]) == []


def test_worker_messages_drop_the_fixed_opening():
    turns = [{"speaker": "human", "text": "Hi!"}, {"speaker": "bot", "text": "Hello"},
             {"speaker": "human", "text": "Hi!"}]
    assert wc.worker_messages(turns) == ["Hi!"]
    flagged = [{"speaker": "human", "text": "Hi!", "meta": {"fixed": True}}, {"speaker": "human", "text": "x"}]
    assert wc.worker_messages(flagged) == ["x"]


def _conv(cid, worker, texts):
    turns = [{"speaker": "human", "text": "Hi!", "meta": {"fixed": True}}]
    for text in texts:
        turns += [{"speaker": "m1", "text": "Tell me more please."}, {"speaker": "human", "text": text}]
    return {"type": "conversation", "id": cid, "models": ["m1"], "worker_id": worker, "turns": turns}


def _rating(cid, worker):
    return {"type": "rating", "conversation_id": cid, "worker_id": worker, "model": "m1",
            "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 4}


def test_apply_drops_every_evaluation_of_a_failed_worker():
    data = from_records([
        _conv("c1", "good", GOOD), _conv("c2", "bad", GOOD), _conv("c3", "bad", ["no", "yes", "ok"]),
        _rating("c1", "good"), _rating("c2", "bad"), _rating("c3", "bad"),
        {"type": "comparison", "item_id": "x", "worker_id": "bad", "model_a": "a", "model_b": "b", "choice": "a"},
    ])
    filtered, summary = wc.apply_worker_checks(data)
    assert list(filtered.conversations["id"]) == ["c1"]
    assert list(filtered.ratings["worker_id"]) == ["good"]
    assert filtered.comparisons.empty
    bad = summary.set_index("worker_id").loc["bad"]
    assert (bad["conversations"], bad["failed"], bad["short_messages"], bool(bad["dropped"])) == (2, 1, 1, True)
    assert not summary.set_index("worker_id").loc["good", "dropped"]


@pytest.mark.parametrize("name", wc.CHECKS)
def test_every_check_is_reported(name):
    assert name in wc.check_messages(GOOD)


def test_worker_report_is_the_qc_workers_table():
    records = [_conv("c1", "good", GOOD), _conv("c2", "bad", ["HELLO THERE FRIEND", "I LIKE CATS A LOT"])]
    table = wc.worker_report(records).set_index("worker_id")
    assert bool(table.loc["good", "passed"]) and not bool(table.loc["bad", "passed"])
    # "HELLO THERE FRIEND": a greeting first and, with the second message, two all-caps messages
    assert (table.loc["bad", "greeting_first"], table.loc["bad", "all_caps"]) == (1, 1)
