"""Votes worth trusting (issue 51), without a browser: what the server believes of a page's record of how an answer
was made (crowdsourcing/platform/answer_record.py), where check items go (platform/checks.py), the signals and the
one rule of the evidence table (analysis/answer_signals.py, shared_text.py, evidence.py), live agreement
(analysis/live_agreement.py), the LLM-text score against an independent computation (metrics/llm_text.py), and the
data model's checks of the new fields."""
from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parlai_dialeval.analysis import answer_signals, evidence, live_agreement
from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.answer_record import UNREADABLE, clean_judgment, clean_record
from parlai_dialeval.data import from_records
from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.providers.prolific.review import check_rejection

TYPED = {"typed": 40, "pasted": 0, "keys": 40, "key_interval_ms": 180.0, "compose_seconds": 9.0, "away": 0}


# ---------------------------------------------------------------- the server's reading of a page's record
@pytest.mark.parametrize("raw, doubt", [
    ("a string", UNREADABLE), ([1, 2], UNREADABLE), ({f"k{i}": 1 for i in range(60)}, UNREADABLE),
    ({"typed": -3}, "typed was unreadable"), ({"typed": 2.5}, "typed was unreadable"),
    ({"typed": True}, "typed was unreadable"), ({"compose_seconds": float("nan")}, "compose_seconds was unreadable"),
    ({"typed": 10 ** 12}, "typed was unreadable"), ({"pastes": [1, "x"]}, "pastes was unreadable"),
    ({"pastes": {"deep": [[[]]]}}, "pastes was unreadable"), ({"reread": "yes"}, "reread was unreadable")])
def test_a_hostile_record_keeps_nothing_unreadable_and_says_so(raw, doubt):
    cleaned = clean_record(raw, text="hello there")
    assert doubt in cleaned["doubts"] and all(k in answer_signals.AnswerSettings.__dataclass_fields__ or k in (
        "doubts", "typed", "pasted", "keys", "pastes", "reread", "compose_seconds") for k in cleaned)
    from parlai_dialeval.data.validate import provenance_problem

    assert provenance_problem(cleaned) is None  # whatever a page sends, what is stored is canonical


def test_a_record_is_believed_only_as_far_as_the_text_and_the_servers_clock_allow():
    assert clean_record(None, text="hi") is None  # no record stays no record: evidence in itself
    honest = clean_record({**TYPED, "unknown_key": 3, "pastes": list(range(50))}, text="x" * 40, elapsed=12.0)
    assert "doubts" not in honest and "unknown_key" not in honest and len(honest["pastes"]) == 20
    too_short = clean_record({**TYPED, "typed": 5, "keys": 5}, text="x" * 80, elapsed=12.0)
    assert "the text holds 80 characters but the page saw 5" in too_short["doubts"][0]
    forged = clean_record({**TYPED, "compose_seconds": 40.0}, text="x" * 40, elapsed=3.0)
    assert forged["doubts"] == ["compose_seconds claims 40 s but 3 s passed on the server"]
    nested = clean_judgment({"seconds": 9.0, "justification": {**TYPED, "typed": 1}}, justification="y" * 60,
                            elapsed=30.0)
    assert nested["seconds"] == 9.0 and "60 characters" in nested["justification"]["doubts"][0]


# ---------------------------------------------------------------- where check items go
def test_check_positions_are_apart_never_first_and_bad_plans_are_one_line():
    rng = random.Random(0)
    for _ in range(200):
        attention, gold = checks.plan(checks.ChecksArgs(attention=2, gold=2), 6, rng)
        assert len(attention) == len(gold) == 2 and not set(attention) & set(gold) and 0 not in attention + gold
    assert checks.plan(checks.ChecksArgs(attention_at=[1, 4], gold_at=[2]), 5, rng) == ([0, 3], [1])
    with pytest.raises(DialevalError, match="share a position"):
        checks.plan(checks.ChecksArgs(attention_at=[2], gold_at=[2]), 5, rng)
    with pytest.raises(DialevalError, match="room for at most 2"):
        checks.plan(checks.ChecksArgs(attention=3), 3, rng)
    with pytest.raises(DialevalError, match="whole numbers in 1..3"):
        checks.plan(checks.ChecksArgs(attention_at=[4]), 3, rng)
    mixed = checks.mix(list("abcd"), ["A1", "A2"], ["G1"], checks.ChecksArgs(attention_at=[2, 5], gold_at=[7]), rng)
    assert mixed == ["a", "A1", "b", "c", "A2", "d", "G1"]
    with pytest.raises(DialevalError, match="QC-bot"):
        checks.validate(checks.ChecksArgs(gold=1), "live_chat", gold=False)


# ---------------------------------------------------------------- the evidence table and its rule
def _data(workers: dict[str, dict], attention: dict[str, int] | None = None, gold: dict[str, int] | None = None):
    """Canonical records of a small chat study: per worker four messages with ``message`` records, three rating
    screens with ``screen`` records and ``values``; ``attention``/``gold``: items failed of two."""
    records = [{"type": "study", "name": "s", "criteria": [{"name": c, "positive": True, "scale": "continuous",
                                                            "min": 0, "max": 100} for c in "abc"]}]
    for worker, how in workers.items():
        turns = []
        for text in how.get("texts") or [f"{worker} writes message number {n} about films" for n in range(4)]:
            turn = {"speaker": "human", "text": text}
            if how.get("message") is not None:
                turn["provenance"] = how["message"](text)
            turns += [turn, {"speaker": "m", "text": "ok"}]
        records.append({"type": "conversation", "study": "s", "id": f"c_{worker}", "models": ["m"],
                        "worker_id": worker, "turns": turns})
        for screen in range(3):
            for c, value in zip("abc", how.get("values", (20, 60, 80))):
                record = {"type": "rating", "study": "s", "conversation_id": f"c_{worker}", "worker_id": worker,
                          "model": "m", "criterion": c, "scale": "continuous", "scale_min": 0, "scale_max": 100,
                          "value": value, "turn_index": screen, "duration": how.get("seconds", 20.0)}
                if how.get("screen") is not None:
                    record["provenance"] = how["screen"]
                records.append(record)
        for kind, failed in (("attention", (attention or {}).get(worker)), ("gold", (gold or {}).get(worker))):
            for item in range(2 if failed is not None else 0):  # attention as live chat's: a slider per slot
                records.append({"type": "rating", "study": "s", "conversation_id": f"c_{worker}_{item}",
                                "worker_id": worker, "model": "m", "criterion": kind, "scale": "continuous",
                                "scale_min": 0, "scale_max": 100, "value": 1,
                                "check": {"kind": kind, "passed": item >= failed,
                                          **({"item": f"{worker}{item}"} if kind == "gold" else {})}})
    data = from_records(records)
    kept, answers, _ = data.without_checks()
    return kept, answers


def _table(kept, answers, **extra):
    return evidence.evidence_table(kept.conversations, kept.ratings, kept.comparisons, answers.ratings,
                                   kept.studies, **extra).table.set_index("worker_id")


def typed(text):
    return {**TYPED, "typed": len(text), "keys": len(text)}


def pasted(text, away=1):
    return {"typed": 0, "pasted": len(text), "pastes": [len(text)], "keys": 0, "compose_seconds": 1.0, "away": away}


def test_one_signal_is_evidence_two_flag_a_decisive_one_flags_alone():
    screen = {"seconds": 20.0, "reread": False, "away": 0}
    kept, answers = _data({
        "honest": {"message": typed, "screen": screen},
        "paster": {"message": pasted, "screen": screen},  # pasted and left the page: two signals
        "quiet_paster": {"message": lambda t: pasted(t, away=0), "screen": screen},  # pasted only: one
        "clicker": {"message": typed, "screen": {"seconds": 1.0}, "values": (50, 50, 50)},  # fast and constant
        "careless": {"message": typed, "screen": screen},  # two attention checks failed: decisive
        "slip": {"message": typed, "screen": screen},  # one attention check failed of two: supporting only
        "slip_and_paste": {"message": lambda t: pasted(t, away=0), "screen": screen},  # two supporting signals
        "script": {"screen": None},  # no record at all, where the others have them
    }, attention={"careless": 2, "slip": 1, "slip_and_paste": 1, "honest": 0})
    table = _table(kept, answers)
    assert not table.loc["honest", "flagged"] and table.loc["honest", "signals"] == ""
    assert table.loc["paster", "flagged"] and table.loc["paster", "signals"] == "pasted, away"
    assert not table.loc["quiet_paster", "flagged"] and table.loc["quiet_paster", "signals"] == "pasted"
    assert table.loc["clicker", "flagged"] and table.loc["clicker", "signals"] == "fast, constant"
    assert "in under 1 s per answer" in table.loc["clicker", "reasons"]
    assert table.loc["careless", "flagged"] and table.loc["careless", "signals"] == "attention"
    assert not table.loc["slip", "flagged"] and table.loc["slip", "signals"] == "attention_missed"
    assert table.loc["slip", "rejection"] == ""
    assert table.loc["slip_and_paste", "flagged"] and table.loc["slip_and_paste", "signals"] == "attention_missed, pasted"
    assert table.loc["script", "signals"] == "unrecorded" and not table.loc["script", "flagged"]
    # only failed attention checks, two or more, are grounds for a rejection, in words review accepts
    assert list(table.index[table["rejection"] != ""]) == ["careless"]
    check_rejection(table.loc["careless", "rejection_message"], table.loc["careless", "rejection"])


def test_the_llm_text_score_never_flags_alone_and_the_rule_adds_it_to_another():
    kept, answers = _data({"writer": {"message": typed}, "paster": {"message": lambda t: pasted(t, away=0)},
                           "unscored": {"message": lambda t: pasted(t, away=0)}})  # too little text to score
    llm = pd.DataFrame({"worker_id": ["writer", "paster"], "llm_score": [3.0, 3.1], "llm_flag": [True, True],
                        "why_llm": ["reads as machine-written", "reads as machine-written"]})
    table = _table(kept, answers, llm=llm)
    assert table.loc["writer", "signals"] == "llm_text" and not table.loc["writer", "flagged"]
    assert table.loc["paster", "signals"] == "pasted, llm_text" and table.loc["paster", "flagged"]
    assert table.loc["unscored", "signals"] == "pasted" and not table.loc["unscored", "flagged"]


def test_records_the_servers_clock_contradicts_on_most_answers_are_decisive():
    doubt = {"doubts": ["compose_seconds claims 30 s but 2 s passed on the server"]}
    kept, answers = _data({"forger": {"message": lambda t: {**typed(t), **doubt}, "screen": {"seconds": 20.0}},
                           "one_doubt": {"message": typed, "screen": {"seconds": 20.0, **doubt}}})
    table = _table(kept, answers)
    assert table.loc["forger", "flagged"] and table.loc["forger", "signals"] == "forged"
    assert "4 of 7 answers contradicts the server's clock" in table.loc["forger", "reasons"]
    assert table.loc["one_doubt", "signals"] == "doubted" and not table.loc["one_doubt", "flagged"]


def test_typing_faster_than_people_type_and_shared_text_are_signals():
    same = ["I absolutely adore long walks along the sea at sunset", "Tell me please which films you enjoyed most"]
    kept, answers = _data({
        "machine": {"message": lambda t: {**typed(t), "key_interval_ms": 12.0}},
        "copy_a": {"message": typed, "texts": same + ["and mine is different text number one here"] * 2},
        "copy_b": {"message": typed, "texts": [same[0].upper() + "!", same[1] + " "] + ["my own words, unlike theirs!"] * 2},
        "alone": {"message": typed, "texts": ["i alone wrote this line about sailing boats"] * 4},
    })
    table = _table(kept, answers)
    assert table.loc["machine", "signals"] == "typing" and "median of 12 ms" in table.loc["machine", "reasons"]
    assert table.loc["copy_a", "signals"] == "shared_text" and table.loc["copy_b", "signals"] == "shared_text"
    assert table.loc["alone", "signals"] == ""  # the same text four times is one's own, not shared


def _copies_by_hand(texts: pd.DataFrame) -> dict:
    """Per worker: (long texts, how many another worker also wrote, the other workers), by comparing every pair of
    texts after case and spacing, in plain Python (independent of shared_text's sparse products)."""
    long = [(str(w), t, " ".join(t.lower().split())) for w, t in zip(texts["worker_id"], texts["text"])
            if len(t) >= 40]
    found = {str(w): [0, 0, set()] for w in texts["worker_id"]}
    for worker, _, normal in long:
        others = {v for v, _, m in long if m == normal and v != worker}
        found[worker][0] += 1
        found[worker][1] += bool(others)
        found[worker][2] |= others
    return found


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 14), st.integers(0, 5), st.booleans()), min_size=1, max_size=60))
def test_exact_copies_and_who_shares_them_match_a_count_by_hand(written):
    """Both of shared_text's ways (near copies up to MAX_NEAR texts, exact copies past it) on texts that are exact
    copies (after case and spacing) or far apart: the counts, partners and the first NAMED of them as by hand."""
    from parlai_dialeval.analysis import shared_text

    lines = ["Sailing around small islands is my favourite summer pastime", "What would you cook for twelve hungry "
             "guests tonight?", "Oil painting takes patience; watercolours forgive nothing at all",
             "My knees ache after every long descent from a mountain pass", "Tomatoes, beans and courgettes grow "
             "well in our allotment", "Throwing pots on a wheel is harder than it looks, believe me"]
    texts = pd.DataFrame({"worker_id": [f"w{w:02d}" for w, _, _ in written],
                          "text": [lines[k].upper() + "  " if loud else lines[k] for _, k, loud in written]},
                         columns=["worker_id", "text"])
    want = _copies_by_hand(texts)
    for max_near in (shared_text.MAX_NEAR, 0):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(shared_text, "MAX_NEAR", max_near)
            table = shared_text.shared_texts(texts)
        got = {r["worker_id"]: (r["long_texts"], r["shared_texts"], r["sharing_workers"], r["shared_with"])
               for r in table.to_dict("records")}
        assert got == {w: (n, k, len(o), ", ".join(sorted(o)[:shared_text.NAMED])) for w, (n, k, o) in want.items()}


def test_the_sentence_names_three_sharing_workers_and_counts_the_rest():
    from parlai_dialeval.analysis.shared_text import reason, shared_texts

    line = "the very same sentence pasted by every single account here"
    texts = pd.DataFrame({"worker_id": [f"acct{i:02d}" for i in range(25) for _ in range(2)],
                          "text": [f"{line} {k}" for _ in range(25) for k in range(2)]})
    row = shared_texts(texts).iloc[0]
    assert (row["shared_texts"], row["sharing_workers"]) == (2, 24)
    assert row["shared_with"] == ", ".join(f"acct{i:02d}" for i in range(1, 11))
    assert reason(row).startswith("2 of 2 texts identical or nearly so to texts of acct01, acct02, acct03 and 21 more")


def test_a_gold_accuracy_under_the_rule_is_a_supporting_signal():
    kept, answers = _data({"wrong": {"message": typed}, "right": {"message": typed}}, gold={"wrong": 2, "right": 0})
    table = _table(kept, answers)
    assert table.loc["wrong", "signals"] == "gold" and not table.loc["wrong", "flagged"]
    assert "0 of 2 gold items right" in table.loc["wrong", "reasons"]
    assert table.loc["right", "gold_right"] == 2


# ---------------------------------------------------------------- live agreement
@settings(max_examples=150, deadline=None)
@given(st.integers(2, 6), st.integers(1, 12), st.sampled_from(["scale", "continuous"]), st.integers(0, 2 ** 32 - 1))
def test_interval_alpha_equals_the_krippendorff_package(raters, units, kind, seed):
    """live_agreement.interval_alpha (closed form) against the krippendorff package's coincidence tables, on
    matrices with gaps, few or many distinct values, constant ones and too few pairable units (both NaN then)."""
    import krippendorff

    rng = np.random.default_rng(seed)
    matrix = (rng.integers(1, 6, (raters, units)).astype(float) if kind == "scale"
              else rng.normal(50, 20, (raters, units)))
    matrix[rng.random((raters, units)) < rng.uniform(0, 0.7)] = np.nan
    try:
        want = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"))
    except ValueError:  # one value, or no unit rated twice
        want = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        got = live_agreement.interval_alpha(matrix)
    pairable = (np.isfinite(matrix).sum(axis=0) >= 2).sum()
    if pairable < 2 or not np.isfinite(want):  # undefined: never a number
        assert np.isnan(got), (got, want)
    else:
        assert got == pytest.approx(want, abs=1e-12, rel=1e-12)


def test_rating_agreement_and_majority_by_hand():
    rows = []
    rng = np.random.default_rng(0)
    truth = rng.uniform(0, 100, size=(12, 2))
    for worker in ("w1", "w2", "w3", "copier", "random"):
        for item in range(12):
            for criterion in (0, 1):
                value = {"copier": truth[item, criterion], "random": rng.uniform(0, 100)}.get(
                    worker, truth[item, criterion] + rng.normal(0, 5))
                rows.append({"worker_id": worker, "conversation_id": f"i{item}", "model": "m",
                             "criterion": f"c{criterion}", "value": value})
    overall, per_worker = live_agreement.rating_agreement(pd.DataFrame(rows))
    alpha = per_worker.set_index("worker_id")["rating_alpha"]
    assert alpha["copier"] > 0.9 and abs(alpha["random"]) < 0.35 and list(overall["criterion"]) == ["c0", "c1"]
    votes = pd.DataFrame({"worker_id": ["a", "b", "c", "a", "b", "c"], "item_id": ["x", "x", "x", "y", "y", "y"],
                          "model_a": "m1", "model_b": "m2", "choice": ["a", "a", "b", "b", "b", "b"],
                          "question": "q"})
    per_question, per_worker = live_agreement.majority_agreement(votes)
    # x: the others of a (b for, c against) and of b are split, no majority; c has a and b against it; y: all agree
    assert per_worker.set_index("worker_id")["with_majority"].to_dict() == {"a": 1.0, "b": 1.0, "c": 0.5}
    assert per_question.iloc[0]["with_majority"] == pytest.approx(3 / 4)


# ---------------------------------------------------------------- the LLM-text score
def test_llm_text_scores_equal_a_direct_computation_with_a_tiny_lm(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from parlai_dialeval.metrics.llm_text import MIN_TOKENS, text_scores, worker_scores
    from tiny_lm import build_gpt2

    path = build_gpt2(tmp_path / "lm")
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    texts = ["Hi! How are you doing today? Tell me more about your favourite movie.", "ok",
             "That's really interesting! I like you! What does that even mean?"]
    scores = text_scores(texts, model, tokenizer, batch_size=2)
    for text, row in zip(texts, scores.itertuples()):
        ids = [tokenizer.eos_token_id] + tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0]
        losses = [-torch.log_softmax(logits[i], -1)[ids[i + 1]].item() for i in range(len(ids) - 1)]
        if len(losses) < MIN_TOKENS:
            assert math.isnan(row.score)
            continue
        assert row.log_perplexity == pytest.approx(np.mean(losses), rel=1e-4)
        assert row.burstiness == pytest.approx(np.std(losses), rel=1e-3)
    frame = pd.DataFrame({"worker_id": ["w", "w", "w", "v"], "text": texts + ["x"]})
    both = pd.concat([scores, scores.iloc[:1]], ignore_index=True)
    table = worker_scores(frame, both, threshold=100.0).set_index("worker_id")
    assert table.loc["w", "llm_texts"] == 2 and not table.loc["w", "llm_flag"]  # fewer than MIN_SCORED texts


# ---------------------------------------------------------------- the data model's checks of the new fields
@pytest.mark.parametrize("field, value, message", [
    ("provenance", {"typed": -1}, "typed is not a finite number >= 0"),
    ("provenance", {"typing_speed": 3}, "unknown key 'typing_speed'"),
    ("provenance", {"justification": {"justification": {}}}, "justification: unknown key 'justification'"),
    ("provenance", {"pastes": [3, -2]}, "pastes holds something other than whole numbers"),
    ("check", {"kind": "quiz", "passed": True}, "kind must be one of attention, gold"),
    ("check", {"kind": "gold"}, "passed must be true or false")])
def test_the_data_model_refuses_malformed_records_naming_the_field(field, value, message):
    record = {"type": "comparison", "item_id": "i", "worker_id": "w", "model_a": "a", "model_b": "b", "choice": "a",
              field: value}
    with pytest.raises(DataError, match=message):
        from_records([record])
    turn = {"type": "conversation", "id": "c", "models": ["m"], "turns": [{"speaker": "human", "text": "hi",
                                                                           "provenance": {"away": "often"}}]}
    with pytest.raises(DataError, match=r"turns\[0\].provenance"):
        from_records([turn])


def test_adaptive_collection_leaves_out_by_the_same_rule():
    from parlai_dialeval.crowdsourcing.platform.adaptive.controller import drop_flagged

    def vote(worker, item, choice="a", **extra):
        return {"type": "comparison", "worker_id": worker, "item_id": item, "model_a": "x", "model_b": "y",
                "choice": choice, "question": "q", **extra}

    careless = [vote("careless", f"att{k}", "b", check={"kind": "attention", "passed": False}) for k in range(2)]
    records = [{"type": "study", "name": "s"}, *[vote(w, f"i{k}") for w in ("careful", "careless") for k in range(5)],
               *careless]
    kept, flagged, left_out = drop_flagged(records, [], alpha=0.05)
    assert flagged == ["careless"] and left_out == 7
    assert {r["worker_id"] for r in kept if r["type"] == "comparison"} == {"careful"}


def test_review_suggests_a_rejection_only_for_attention_checks_failed_as_prolific_allows():
    from parlai_dialeval.analysis.evidence import rejection_message
    from parlai_dialeval.providers.prolific.review import suggest

    failed = {"failed": 2, "items": 3, "category": "FAILED_CHECK", "message": rejection_message(2, 3)}
    assert suggest("AWAITING REVIEW", "completed", "pass", "return", failed).startswith("reject FAILED_CHECK (failed 2 of 3")
    assert suggest("AWAITING REVIEW", "completed", "pass", "return", None) == "approve"
    assert suggest("AWAITING REVIEW", "completed", "fail", "return", None).startswith("ask to return")
    check_rejection(failed["message"], failed["category"])


def test_an_analysis_command_writes_the_evidence_and_leaves_the_flagged_out_on_request(tmp_path):
    """analyze_scales end to end: evidence.csv and its report section; --exclude-flagged true leaves the worker who
    failed two attention checks out of the analysis, and says so."""
    import json

    from crowdsourcing.zygote import dialeval_run

    records = [{"type": "study", "name": "s", "criteria": [{"name": "readability", "positive": True,
                                                            "scale": "likert", "min": 1, "max": 6}],
                "meta": {"checks": {"attention_fail": 2, "gold_min_accuracy": 0.5}}}]
    for worker in ("w1", "w2", "w3", "careless"):
        for item in range(4):
            for model, base in (("a", 2), ("b", 5)):
                records.append({"type": "rating", "study": "s", "conversation_id": f"i{item}", "worker_id": worker,
                                "model": model, "criterion": "readability", "scale": "likert", "scale_min": 1,
                                "scale_max": 6, "value": base + (item % 2), "duration": 6.0})
    records += [{"type": "rating", "study": "s", "conversation_id": f"att{k}", "worker_id": "careless", "model": "a",
                 "criterion": "readability", "scale": "likert", "scale_min": 1, "scale_max": 6, "value": 1,
                 "check": {"kind": "attention", "passed": False, "expected": {"value": 4}}} for k in range(2)]
    path = tmp_path / "study.jsonl"
    path.write_text("".join(json.dumps({**r, "format_version": "1.0"}) + "\n" for r in records))
    kept = dialeval_run(["analyze_scales", "--data", path, "--out", tmp_path / "kept"])
    assert kept.returncode == 0, kept.stderr[-2000:]
    table = pd.read_csv(tmp_path / "kept" / "evidence.csv").set_index("worker_id")
    assert table.loc["careless", "flagged"] and table.loc["careless", "rejection"] == "FAILED_CHECK"
    assert "Evidence about each participant" in (tmp_path / "kept" / "report.html").read_text()
    left = dialeval_run(["analyze_scales", "--data", path, "--out", tmp_path / "left", "--exclude-flagged", "true"])
    assert left.returncode == 0, left.stderr[-2000:]
    assert "left out the records of 1 flagged worker(s): careless" in left.stdout + left.stderr
    workers = pd.read_csv(tmp_path / "left" / "workers.csv")
    assert "careless" not in set(workers["worker_id"]) and "careless" in set(pd.read_csv(tmp_path / "kept" / "workers.csv")["worker_id"])


def test_text_people_commonly_type_is_not_shared_text_on_real_live_chats(shared_data):
    """Ji et al.'s live chats (248 MTurk workers, QC-passing or not): at 25 characters most workers shared two
    texts with strangers ("What is your favorite dish?"); at the signal's 40 characters and a fifth of a worker's
    texts, none does (analysis/shared_text.py)."""
    from parlai_dialeval.analysis.shared_text import reason, shared_texts
    from parlai_dialeval.scripts.command_line import load_data
    from parlai_dialeval.scripts.evidence_option import texts_of

    folder = shared_data / "ji2022" / "dialogue_data"
    texts = texts_of(load_data({"data": [str(folder / "pass_free(run1).json"), str(folder / "fail_free(run1).json")]},
                               log=None))
    assert texts["worker_id"].nunique() == 248
    assert (shared_texts(texts, min_chars=25)["shared_texts"] >= 2).sum() > 100  # short common lines are shared
    table = shared_texts(texts)
    assert not any(reason(row) for row in table.to_dict("records"))
