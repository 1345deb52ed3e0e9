"""Attention checks and gold items in every task, without Mephisto (crowdsourcing/platform/checks.py): where each task
puts them, that the page is told an attention check's instruction and nothing of a gold item's answer, and that
the export grades each answer into the record's ``check`` (docs/data_model.md, "Checks")."""
from __future__ import annotations

import json
import random

import pytest

from parlai_dialeval.crowdsourcing.ab_next_utterance import export as ab_export
from parlai_dialeval.crowdsourcing.ab_next_utterance import protocol as ab
from parlai_dialeval.crowdsourcing.acute import export as acute_export
from parlai_dialeval.crowdsourcing.acute import protocol as acute
from parlai_dialeval.crowdsourcing.live_chat_da.criteria import CRITERION_NAMES
from parlai_dialeval.crowdsourcing.live_chat_da.protocol import RATING_MISSING, LiveChatSession
from parlai_dialeval.crowdsourcing.platform.checks import GOLD_MODEL, GOLD_REPLIES, ChecksArgs
from parlai_dialeval.crowdsourcing.pw_turn import export as pw_export
from parlai_dialeval.crowdsourcing.pw_turn.protocol import PairwiseTurnSession
from parlai_dialeval.crowdsourcing.scale_designs import export as sd_export
from parlai_dialeval.crowdsourcing.scale_designs import protocol as sd
from parlai_dialeval.crowdsourcing.scale_designs.task import _shown_item
from parlai_dialeval.crowdsourcing.sm_eval import export as sm_export
from parlai_dialeval.data import from_records

ONE_EACH = ChecksArgs(attention=1, gold=1)


def test_ab_check_items_are_real_items_of_other_hits_graded_at_export():
    items = [ab.ABItem(f"q{i}", [f"ctx {i}"], "x", "y", f"reply x {i}", f"reply y {i}") for i in range(8)]
    hits, _ = ab.make_hits(items, random.Random(0), per_hit=4)
    mixed = ab.with_checks(hits, ONE_EACH, random.Random(1))
    assert [len(hit) for hit in mixed] == [6, 6]
    for number, hit in enumerate(mixed):
        public = ab.public_view(hit)
        assert "gold" not in json.dumps(public) and GOLD_MODEL not in json.dumps(public)
        attention = [p for p in public if "attention" in p]
        assert len(attention) == 1 and attention[0]["attention"]["choose"] in ("a", "b")
        own = {p["item_id"] for p in hits[number]}
        checked = [p for p in hit if "check" in p]
        assert all(p["item_id"] not in own for p in checked)  # another HIT's item, under its own id
    hit = mixed[0]
    answers = {p["item_id"]: {"choice": p["check"]["expected"] if "check" in p else "a", "duration": 3.0,
                              "provenance": {"seconds": 3.0, "away": 0}} for p in hit}
    records = ab_export.unit_records(hit, answers, study="s", worker_id="w", assignment_id="1", elapsed=60.0)
    graded = [r for r in records if "check" in r]
    assert sorted(r["check"]["kind"] for r in graded) == ["attention", "gold"] and all(r["check"]["passed"] for r in graded)
    gold = next(r for r in graded if r["check"]["kind"] == "gold")
    assert GOLD_MODEL in (gold["model_a"], gold["model_b"])
    assert {gold["response_a"], gold["response_b"]} & set(GOLD_REPLIES)
    rushed = ab_export.unit_records(hit, {k: {**v, "provenance": {"seconds": 30.0}} for k, v in answers.items()},
                                    study="s", worker_id="w", assignment_id="1", elapsed=60.0)
    assert "the screens claim 180 s together but 60 s passed" in rushed[0]["provenance"]["doubts"][0]
    from_records([{"type": "study", "name": "s"}, *records])  # canonical


def _self_chats(n=3):
    return [{"type": "conversation", "id": f"{m}_{i}", "models": [m], "turns": [
        {"speaker": "human", "text": f"hello {i}"}, {"speaker": m, "text": f"{m} says something {i}"}]}
        for m in ("m1", "m2") for i in range(n)]


def test_acute_gold_pairs_show_a_broken_speaker_under_an_opaque_id():
    rng = random.Random(0)
    pairs = acute.make_pairs(_self_chats(), matchups_per_pair=4, rng=rng)
    units = acute.with_checks(acute.make_units(pairs, 2, rng), ONE_EACH, rng)
    ids = [p["pair_id"] for unit in units for p in unit]
    assert len(set(ids)) == len(ids) == 8 and all(i.startswith("pair_") for i in ids)
    unit = units[0]
    public = [acute.public_pair(p) for p in unit]
    assert sum("attention" in p for p in public) == 1 and "gold" not in json.dumps(public)
    gold = next(p for p in unit if p.get("check", {}).get("kind") == "gold")
    bad = "left" if gold["check"]["expected"] == "right" else "right"
    shown_bad = next(p for p in public if p["pair_id"] == gold["pair_id"])[bad]
    assert all(t["text"] in GOLD_REPLIES for t in shown_bad if t["evaluated"])
    answers = [{"choice": p["check"]["expected"] if "check" in p else "left", "justification": "because"} for p in unit]
    answers[[i for i, p in enumerate(unit) if p.get("check", {}).get("kind") == "attention"][0]]["choice"] = "left" \
        if next(p for p in unit if p.get("check", {}).get("kind") == "attention")["check"]["expected"] == "right" else "right"
    records = acute_export.unit_records(unit, answers, question="preference", study="s", worker_id="w",
                                        assignment_id="1")
    graded = {r["check"]["kind"]: r["check"]["passed"] for r in records if "check" in r}
    assert graded == {"attention": False, "gold": True}
    conversations = {r["id"] for r in records if r["type"] == "conversation"}
    assert not any(GOLD_MODEL in c for c in conversations)  # a check pair's dialogues are no study data


@pytest.mark.parametrize("design", ["likert", "rme", "best_worst"])
def test_scale_design_checks_are_shown_graded_and_gold_stays_silent(design):
    rng = random.Random(3)
    items = [sd.ScaleItem(f"i{n}", ["How was your day?"], "Great.", {"a": "Fine, thanks.", "b": "Lovely!", "c": "Ok."})
             for n in range(4)]
    chunks = sd.check_items([items[:2], items[2:]], ONE_EACH, design, rng)
    unit = chunks[0]
    assert len(unit) == 4 and len({i.item_id for i in unit}) == 4
    shown = [_shown_item(item, design, rng) for item in unit]
    assert sum("attention" in s for s, _ in shown) == 1 and "gold" not in json.dumps([s for s, _ in shown])
    order = {item.item_id: list(keys.values()) for item, (_, keys) in zip(unit, shown)}
    ratings = {}
    for item in unit:
        models, check = order[item.item_id], item.check or {}
        if design == "best_worst":
            best, worst = (models[check["best"] - 1], models[check["worst"] - 1]) if "best" in check else (
                [m for m in models if m != GOLD_MODEL][0], GOLD_MODEL if GOLD_MODEL in models else models[-1])
            answer = {"best": best, "worst": worst}
        else:
            value = check.get("value", 4)
            answer = {"values": {m: (1 if m == GOLD_MODEL else value) for m in models}}
        ratings[item.item_id] = {c: answer for c in sd.CRITERIA}
    answers = {"ratings": ratings, "prior_experience": {k: False for k in sd.PRIOR_EXPERIENCE_QUESTIONS},
               "duration": 60.0}
    records = sd_export.unit_records(unit, answers, design=design, study="s", worker_id="w", assignment_id="1",
                                     order=order)
    graded = {r["check"]["kind"]: r["check"]["passed"] for r in records if "check" in r}
    assert graded == {"attention": True, "gold": True}
    wrong = {i: {c: ({"best": a["worst"], "worst": a["best"]} if "best" in a else
                     {"values": {m: (7 - v if design == "likert" else 999 - v) for m, v in a["values"].items()}})
                 for c, a in per.items()} for i, per in ratings.items()}
    records = sd_export.unit_records(unit, {**answers, "ratings": wrong}, design=design, study="s", worker_id="w",
                                     assignment_id="1", order=order)
    assert {r["check"]["kind"]: r["check"]["passed"] for r in records if "check" in r} == {"attention": False,
                                                                                           "gold": False}


def test_sm_eval_export_grades_a_gold_turn_and_an_attention_turn():
    turns = [{"speaker": "human", "text": "Hi!", "meta": {"fixed": True}}, {"speaker": "m", "text": "hello"},
             {"speaker": "human", "text": "how are you", "provenance": {"typed": 11, "keys": 11}},
             {"speaker": "m", "text": GOLD_REPLIES[0], "meta": {"gold": {"replaced": "fine"}}}]
    state = {"model": "m", "persona": [], "turns": turns, "final_ratings": {},
             "annotations": {"1": {"engaging": 0, "humanlike": 1, "interesting": 0},
                             "3": {"engaging": 0, "humanlike": 0, "interesting": 0}},
             "attention": {"0": "humanlike"}, "gold": [1], "provenance": {"1": {"seconds": 4.0}}}
    records = sm_export.unit_records(state, study="s", worker_id="w", assignment_id="1", conversation_id="c")
    checks = {(r["turn_index"], r["check"]["kind"], r["check"]["passed"], r["model"]) for r in records if "check" in r}
    assert checks == {(1, "attention", True, "m"), (3, "gold", True, GOLD_MODEL)}
    assert records[0]["turns"][2]["provenance"] == {"typed": 11, "keys": 11}
    from_records([sm_export.study_record("s"), *records])


class Echo:
    def __init__(self, name):
        self.name = name

    def reset(self):
        pass

    def observe(self, message):
        self.seen = message

    def act(self):
        return {"text": f"{self.name} replies"}


def test_pw_turn_gold_turn_replaces_one_reply_and_an_attention_turn_says_which_to_choose():
    session = PairwiseTurnSession({"x": Echo("x"), "y": Echo("y")}, num_turns=3, rng=random.Random(0),
                                  attention=[2], gold=[1])
    session.human_says("Hi!", fixed=True)
    session.choose("left", "fine")
    shown = session.human_says("and then?")
    gold = session.pending["gold"]
    assert shown[gold["side"]] in GOLD_REPLIES and gold["replaced"].endswith("replies")
    good = "left" if gold["side"] == "right" else "right"
    session.choose(good, "the other one makes no sense")
    session.human_says("go on")
    told = session.pending["attention"]["choose"]
    session.choose("left" if told == "right" else "right", "ignored the instruction")
    records = pw_export.unit_records(session.state(), study="s", worker_id="w", assignment_id="1", conversation_id="c")
    graded = [(r["turn_index"], r["check"]["kind"], r["check"]["passed"]) for r in records if "check" in r]
    assert graded == [(3, "gold", True), (5, "attention", False)]
    gold_record = next(r for r in records if r.get("check", {}).get("kind") == "gold")
    assert GOLD_MODEL in (gold_record["model_a"], gold_record["model_b"])


def test_live_chat_rating_screen_with_an_attention_slider():
    session = LiveChatSession.new(["a", "qc", "b"], ["qc"], 1, False, {1: {"value": 30, "position": 2}},
                                  {"attention_fail": 2, "gold_min_accuracy": 0.5, "tolerance": 10.0})
    session.slot, session.phase = 1, "rate"
    with pytest.raises(ValueError, match=RATING_MISSING):
        session.rate([50] * len(CRITERION_NAMES))  # the eighth slider unanswered
    session.rate([50] * len(CRITERION_NAMES), 55, {"seconds": 12.0, "reread": True})
    conv = session.record["conversations"][1]
    assert conv["attention"] == {"value": 30, "position": 2, "answer": 55.0}
    assert conv["rating_provenance"] == {"seconds": 12.0, "reread": True}
