"""dialeval judge on an SM-Eval export (per-turn ticks and per-dialog 1-5 ratings of the same criteria):
each protocol judges its own unit's ratings and judge_agreement compares scales per unit; the cache's
name and its earlier name; what the summary says came from the cache; judge files that cannot be
grouped or match no human item. Expected counts come from how the test builds its data."""
from __future__ import annotations

import json
from html import unescape

import pandas as pd
import pytest

from parlai_dialeval.cli import main
from parlai_dialeval.data.dataset import read_jsonl, write_jsonl

MODELS = ("m1", "m2")
CONVERSATIONS = 4  # per model, every one with the same text: its prompts repeat
BOT_TURNS = (1, 3)
CRITERIA = ("engaging", "humanlike", "interesting")
WORKERS = ("w1", "w2")


def sm_export(path):
    records = []
    for m, model in enumerate(MODELS):
        for c in range(CONVERSATIONS):
            cid = f"{model}-{c}"
            turns = [t for i in range(2) for t in ({"speaker": "human", "text": f"question {i}"},
                                                   {"speaker": model, "text": f"{model} says {i}"})]
            records.append({"type": "conversation", "id": cid, "models": [model], "turns": turns})
            for w, worker in enumerate(WORKERS):
                for criterion in CRITERIA:
                    records += [{"type": "rating", "conversation_id": cid, "worker_id": worker, "model": model,
                                 "criterion": criterion, "scale": "binary", "scale_min": 0, "scale_max": 1,
                                 "value": (c + t + w + m) % 2, "turn_index": t} for t in BOT_TURNS]
                    records.append({"type": "rating", "conversation_id": cid, "worker_id": worker, "model": model,
                                    "criterion": criterion, "scale": "likert", "scale_min": 1, "scale_max": 5,
                                    "value": 1 + (c + w + 2 * m) % 5})
    write_jsonl(records, path)


def scripted(path, m1_reply, default):
    path.write_text(json.dumps({"rules": [{"match": "m1 says", "reply": m1_reply}], "default": default}))
    return path


def judge(tmp_path, protocol, out, reply=("1", "0")):
    return main(["judge", "--data", str(tmp_path / "sm.jsonl"), "--protocol", protocol, "--judge",
                 f"script:{scripted(tmp_path / f'{protocol}.json', *reply)}", "--out", str(out)])


def test_sm_turn_and_sm_dialog_each_judge_their_own_unit_and_agreement_compares_like_with_like(tmp_path, capsys):
    sm_export(tmp_path / "sm.jsonl")
    per_turn = len(MODELS) * CONVERSATIONS * len(BOT_TURNS) * len(CRITERIA)
    per_dialog = len(MODELS) * CONVERSATIONS * len(CRITERIA)
    assert judge(tmp_path, "sm_turn", tmp_path / "turn.jsonl") == 0
    assert judge(tmp_path, "sm_dialog", tmp_path / "dialog.jsonl", reply=("4", "2")) == 0
    turn = read_jsonl([tmp_path / "turn.jsonl"]).ratings
    dialog = read_jsonl([tmp_path / "dialog.jsonl"]).ratings
    assert len(turn) == per_turn == 48 and turn["turn_index"].notna().all() and set(turn["scale"]) == {"binary"}
    assert len(dialog) == per_dialog == 24 and dialog["turn_index"].isna().all() and set(dialog["scale"]) == {"likert"}
    assert set(dialog["value"]) == {4.0, 2.0}  # the 1-5 question, not a binary tick read back

    capsys.readouterr()
    assert main(["judge_agreement", "--judge", str(tmp_path / "turn.jsonl"), str(tmp_path / "dialog.jsonl"),
                 "--human", str(tmp_path / "sm.jsonl"), "--out", str(tmp_path / "agree")]) == 0
    got = pd.read_csv(tmp_path / "agree" / "rating_agreement.csv").set_index(["protocol", "criterion"])
    for criterion in CRITERIA:
        assert got.loc[("sm_turn", criterion), "items"] == per_turn // len(CRITERIA)
        assert got.loc[("sm_dialog", criterion), "items"] == per_dialog // len(CRITERIA)
        assert got.loc[("sm_turn", criterion), "items_2plus_ratings"] == per_turn // len(CRITERIA)


def test_a_judge_on_another_scale_for_one_unit_is_refused_naming_the_unit(tmp_path, capsys):
    sm_export(tmp_path / "sm.jsonl")
    # per-turn ticks asked on 1-5: the humans' per-turn scale is 0-1 (their 1-5 is per dialog)
    write_jsonl([{"type": "rating", "conversation_id": f"m1-{c}", "worker_id": "judge:x", "model": "m1",
                  "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 3,
                  "turn_index": 1, "meta": {"protocol": "sm_turn"}} for c in range(CONVERSATIONS)],
                tmp_path / "judge.jsonl")
    assert main(["judge_agreement", "--judge", str(tmp_path / "judge.jsonl"), "--human", str(tmp_path / "sm.jsonl"),
                 "--out", str(tmp_path / "agree")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dialeval: error: criterion 'engaging' (per turn): the judge rated on 1-5, the humans on 0-1; "
                   "agreement on different scales means nothing. Ask the judge on the humans' scale, or pass "
                   "--rescale linear to map its values linearly"]


def test_the_cache_is_named_after_the_output_stem_and_an_earlier_name_is_still_read(tmp_path, capsys):
    sm_export(tmp_path / "sm.jsonl")
    out = tmp_path / "results" / "judge.jsonl"
    distinct = len(MODELS) * len(BOT_TURNS) * len(CRITERIA)  # every conversation of a model has one text
    items = len(MODELS) * CONVERSATIONS * len(BOT_TURNS) * len(CRITERIA)
    assert judge(tmp_path, "sm_turn", out) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["judge.cache.jsonl", "judge.jsonl", "judge.summary.json"]
    assert len((out.parent / "judge.cache.jsonl").read_text().splitlines()) == distinct
    summary = json.loads((out.parent / "judge.summary.json").read_text())
    # a first run: nothing came from a cache; identical prompts were asked once
    assert (summary["prompts_asked"], summary["prompts_cached"], summary["prompts_repeated"]) == (
        distinct, 0, items - distinct)
    assert f"prompts asked {distinct}, from the cache 0, repeats of a prompt asked in this run {items - distinct};" \
        in capsys.readouterr().out

    old = out.parent / "judge.jsonl.cache.jsonl"  # what earlier versions wrote
    (out.parent / "judge.cache.jsonl").rename(old)
    assert judge(tmp_path, "sm_turn", out) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"cache: {old}, the name earlier versions gave it (a run without it writes " \
           f"{out.parent / 'judge.cache.jsonl'})" in lines
    assert f"prompts asked 0, from the cache {items}, repeats of a prompt asked in this run 0; the replies took 0 " \
           "prompt + 0 completion tokens, $0.0000, of which this run asked for 0 + 0, $0.0000" in lines
    assert not (out.parent / "judge.cache.jsonl").exists()


def _pairwise(worker, models=("x", "y"), items=40, meta=None):
    return [{"type": "comparison", "item_id": f"i{i}", "worker_id": worker, "model_a": models[0],
             "model_b": models[1], "choice": "ab"[i % 2], "question": "Who would you prefer to talk to?"}
            | ({"meta": meta} if meta else {}) for i in range(items)]


def test_judge_comparisons_without_protocol_and_criterion_are_refused_in_one_line(tmp_path, capsys):
    meta = {"protocol": "ab", "criterion": "overall"}
    write_jsonl(_pairwise("w0") + _pairwise("w1"), tmp_path / "human.jsonl")
    write_jsonl(_pairwise("judge:j0", meta=meta), tmp_path / "ours.jsonl")
    write_jsonl(_pairwise("judge:j1"), tmp_path / "theirs.jsonl")  # another tool's: no meta
    assert main(["judge_agreement", "--judge", str(tmp_path / "ours.jsonl"), str(tmp_path / "theirs.jsonl"),
                 "--human", str(tmp_path / "human.jsonl"), "--out", str(tmp_path / "agree")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"dialeval: error: {tmp_path / 'theirs.jsonl'}:1: 40 of 40 judge comparisons have no "
                   "meta.protocol and meta.criterion, which the agreement is grouped by (expected \"meta\": "
                   "{\"protocol\": ..., \"criterion\": ...} on each, as dialeval judge writes)"]


def test_a_judge_whose_items_match_no_human_item_is_told_so(tmp_path, capsys):
    meta = {"protocol": "ab", "criterion": "overall", "answers": {"a_first": "A", "b_first": "B"}, "order": "agree"}
    write_jsonl(_pairwise("w0") + _pairwise("w1"), tmp_path / "human.jsonl")
    write_jsonl(_pairwise("judge:j1", models=("X", "Y"), meta=meta), tmp_path / "judge.jsonl")  # names upper-cased
    assert main(["judge_agreement", "--judge", str(tmp_path / "judge.jsonl"), "--human", str(tmp_path / "human.jsonl"),
                 "--out", str(tmp_path / "agree")]) == 0
    verdict = pd.read_csv(tmp_path / "agree" / "verdicts.csv").iloc[0]
    assert verdict["verdict"] == "no item in common with the humans"
    assert verdict["because"] == ("none of the judge's 40 items matches a human item on item_id, the two models, "
                                  "turn_index and question")
    assert "ab / overall: no item in common with the humans (none of the judge's 40 items matches a human item on " \
           "item_id, the two models, turn_index and question)" in capsys.readouterr().out.splitlines()
    html = unescape((tmp_path / "agree" / "report.html").read_text())
    assert "ab / overall: no item in common with the humans (none of the judge's 40 items matches" in html
