"""PW-Dialog / ACUTE world logic (Smith et al. 2022, 3.1.3) and canonical export."""
from __future__ import annotations

import random

import pytest

from parlai_dialeval.crowdsourcing.acute import export, protocol
from parlai_dialeval.data import from_records


def convs(model, n):
    return [{"id": f"{model}_{i}", "models": [model], "task": "self_chat",
             "turns": [{"speaker": model, "text": f"hello from {model} {i}"},
                       {"speaker": model, "text": "nice to meet you"}]} for i in range(n)]


CONVS = convs("m1", 3) + convs("m2", 3) + convs("m3", 2)


def test_pairs_per_model_pair_and_random_sides():
    pairs = protocol.make_pairs(CONVS, matchups_per_pair=20, rng=random.Random(0))
    assert len(pairs) == 60  # 3 model pairs x 20
    for pair in pairs:
        assert pair["left"]["conversation"]["models"] == [pair["left"]["model"]]
        assert pair["left"]["model"] != pair["right"]["model"]
    m1_left = sum(p["left"]["model"] == "m1" for p in pairs if "m1" in (p["left"]["model"], p["right"]["model"]))
    assert 8 < m1_left < 32  # binomial(40, 0.5) for m1's two pairs; outside has p < 0.002
    only = protocol.make_pairs(CONVS, model_pairs=[("m1", "m3")], matchups_per_pair=4, rng=random.Random(1))
    assert {frozenset((p["left"]["model"], p["right"]["model"])) for p in only} == {frozenset(("m1", "m3"))}
    with pytest.raises(ValueError, match="no conversations of model"):
        protocol.make_pairs(CONVS, model_pairs=[("m1", "m9")], rng=random.Random(0))


def test_units_hold_subtasks_per_unit():
    pairs = protocol.make_pairs(CONVS, matchups_per_pair=3, rng=random.Random(0))
    units = protocol.make_units(pairs, 4, random.Random(0))
    assert [len(u) for u in units] == [4, 4, 1]
    assert sorted(p["pair_id"] for u in units for p in u) == sorted(p["pair_id"] for p in pairs)


def test_onboarding_pass_and_fail_with_threshold():
    shown, answers = protocol.onboarding_pairs(protocol.DEFAULT_ONBOARDING, random.Random(2))
    for pair, answer in zip(shown, answers):
        assert pair[answer]["model"] == "onboarding_good"
    wrong = ["right" if a == "left" else "left" for a in answers]
    assert protocol.onboarding_passed(answers, answers, threshold=1.0)
    assert not protocol.onboarding_passed(answers, [answers[0], wrong[1]], threshold=1.0)
    assert protocol.onboarding_passed(answers, [answers[0], wrong[1]], threshold=0.5)


def test_export_has_conversations_and_comparisons():
    pairs = protocol.make_pairs(CONVS, matchups_per_pair=2, rng=random.Random(0))
    answers = [{"choice": "left" if i % 2 else "right", "justification": "more fluent", "duration": 12}
               for i in range(len(pairs))]
    records = [export.study_record("s", "preference")] + export.unit_records(
        pairs, answers, question="preference", study="s", worker_id="w", assignment_id="a")
    data = from_records(records)
    assert len(data.comparisons) == 6
    shown_ids = {p[s]["conversation"]["id"] for p in pairs for s in ("left", "right")}
    assert set(data.conversations["id"]) == shown_ids
    for row, pair, answer in zip(data.comparisons.itertuples(), pairs, answers):
        assert (row.model_a, row.conversation_a) == (pair["left"]["model"], pair["left"]["conversation"]["id"])
        assert row.choice == {"left": "a", "right": "b"}[answer["choice"]]
    assert data.comparisons["question"].iloc[0] == "Who would you prefer to talk to for a long conversation?"


def test_self_chat_fast_path_builds_units(tmp_path):
    from types import SimpleNamespace

    from parlai_dialeval.crowdsourcing.acute.task import build_units
    from parlai_dialeval.data import read_jsonl

    out = tmp_path / "self_chats.jsonl"
    args = SimpleNamespace(
        conversations=[], self_chat_models={"echo": {"opt": {"model": "repeat_query"}},
                                            "parrot": {"opt": {"model": "repeat_label"}}},
        self_chats_per_model=3, self_chat_turns=2, self_chat_openings=["Hello there"], self_chat_out=str(out),
        model_pairs=[], matchups_per_pair=4, subtasks_per_unit=3, question="humanness")
    units = build_units(args, random.Random(0))
    assert [len(u["server"]["pairs"]) for u in units] == [3, 1]
    chats = read_jsonl([out]).conversations
    assert len(chats) == 6 and set(chats["task"]) == {"self_chat"}
    echo = chats[chats["models"].map(lambda m: m == ["echo"])].iloc[0]
    # repeat_query repeats what it observed: the opening travels through all 4 messages
    assert [t["text"] for t in echo["turns"]] == ["Hello there"] * 4
    assert units[0]["question"] == "Which speaker sounds more human?"
    # the page gets everything but the server-side part, and that holds no model name
    assert "echo" not in str({k: v for k, v in units[0].items() if k != "server"})
