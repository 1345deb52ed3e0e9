"""Malformed submissions fed to every task's export (issue 26): each becomes a note on its unit, never a
traceback, and the export is exactly the honest units' records (the same as exporting them alone).

A static task's page posts its answers; anyone with the task URL can post any JSON instead. The chat
tasks export records their worlds wrote, so a corrupt record file stands in for their hostile case.
"""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlai_dialeval.crowdsourcing.platform.export import UnitData, guard_units
from parlai_dialeval.crowdsourcing.platform.registry import get_task
from parlai_dialeval.data import from_records

# any JSON value a participant could post
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


def unit(agent_id: str, state: dict, server: dict | None = None, files: dict | None = None, **fields) -> UnitData:
    return UnitData(worker_id=f"worker{agent_id}", mephisto_worker_id=agent_id, unit_id=f"u{agent_id}",
                    assignment_id=f"a{agent_id}", task_run_id="1", agent_id=agent_id, agent_status="completed",
                    state=state, task_start=None, task_end=None, server=server or {}, files=files or {}, **fields)


def check_isolated(task: str, honest: list[UnitData], bad: list[UnitData], export=None) -> None:
    """The export of honest + bad units is the honest units' export, plus one note and one ``malformed``
    entry per bad unit; the records are canonical."""
    export = export or get_task(task).export
    alone = export(honest, task)
    mixed = honest[:1] + bad + honest[1:]
    report = export(mixed, task)
    assert report.records == alone.records
    from_records(report.records)
    assert [m["agent_id"] for m in report.malformed] == [u.agent_id for u in bad]
    for entry in bad:
        notes = [n for n in report.notes if n.startswith(f"unit {entry.unit_id} (worker {entry.worker_id}")]
        assert len(notes) == 1 and "not exported" in notes[0], report.notes
    assert f"{len(bad)} malformed submission(s) not exported" in report.summary()


# ------------------------------------------------------------------------------------------ ACUTE
def acute_units():
    from parlai_dialeval.crowdsourcing.acute import protocol

    convs = [{"id": f"{m}_{i}", "models": [m], "task": "self_chat",
              "turns": [{"speaker": m, "text": f"hi {i}"}, {"speaker": m, "text": "fine"}]}
             for m in ("m1", "m2") for i in range(2)]
    pairs = protocol.make_pairs(convs, matchups_per_pair=2, rng=random.Random(0))

    def make(agent_id, answers):
        return unit(agent_id, {"inputs": {"question_key": "preference"}, "outputs": {"answers": answers}},
                    server={"pairs": pairs})

    good = [{"choice": "left", "justification": "clearer", "duration": 3.5}, {"choice": "right"}]
    return make, good


def test_acute_malformed_submissions_become_notes():
    make, good = acute_units()
    bad = [make("10", [{"choice": "up"}, good[1]]),  # the example
           make("11", "left,right"),  # answers as a string
           make("12", [good[0], {**good[1], "duration": "soon"}]),
           make("13", ["left", "right"]),
           make("14", [{**good[0], "justification": {"html": "<b>"}}, good[1]]),
           make("15", good[:1]),  # too few answers
           make("16", [{**good[0], "duration": float("nan")}, good[1]]),
           unit("17", {"inputs": {"question_key": "preference"}, "outputs": ["not", "an", "object"]},
                server={"pairs": make("x", good).server["pairs"]})]
    check_isolated("acute", [make("1", good), make("2", good[::-1])], bad)


def test_acute_onboarding_check_refuses_malformed_answers_without_raising(monkeypatch):
    # Mephisto calls validate_onboarding with whatever the onboarding page posted
    from omegaconf import OmegaConf

    from parlai_dialeval.crowdsourcing.acute import task as acute_task

    monkeypatch.setattr(acute_task, "build_units", lambda *_: [])
    state = acute_task.shared_state(OmegaConf.create({"acute": OmegaConf.structured(acute_task.AcuteArgs)}))
    for posted in ({"outputs": {"answers": "left"}}, {"outputs": ["x"]}, "x", {"outputs": {"answers": [1, 2]}},
                   {"outputs": {"answers": [{"choice": ["left"]}, {"choice": None}]}}):
        assert state.validate_onboarding(posted) is False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers=JSON)
def test_acute_any_posted_json_never_raises(answers):
    make, good = acute_units()
    honest = [make("1", good)]
    report = get_task("acute").export(honest + [make("9", answers)], "acute")
    from_records(report.records)
    assert all(record in report.records for record in get_task("acute").export(honest, "acute").records)


# ------------------------------------------------------------------------------------------- A/B
def ab_units():
    pairs = [{"item_id": f"i{k}", "context": ["hello"], "model_a": "x", "model_b": "y", "response_a": "hi",
              "response_b": "hey"} for k in range(2)]

    def make(agent_id, answers):
        return unit(agent_id, {"outputs": {"answers": answers}}, server={"pairs": pairs, "automatic_ties": []})

    return make, {"i0": {"choice": "a", "duration": 2}, "i1": {"choice": "tie"}}


def test_ab_malformed_submissions_become_notes():
    make, good = ab_units()
    bad = [make("10", {**good, "i0": {"choice": "up"}}), make("11", "a,b"), make("12", ["a", "tie"]),
           make("13", {**good, "i1": {"choice": "b", "duration": "soon"}}), make("14", {"i0": good["i0"]}),
           make("15", {**good, "i0": "a"})]
    check_isolated("ab_next_utterance", [make("1", good), make("2", {**good, "i1": {"choice": "b"}})], bad)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers=JSON)
def test_ab_any_posted_json_never_raises(answers):
    make, good = ab_units()
    honest = [make("1", good)]
    report = get_task("ab_next_utterance").export(honest + [make("9", answers)], "ab_next_utterance")
    from_records(report.records)
    assert all(r in report.records for r in get_task("ab_next_utterance").export(honest, "ab_next_utterance").records)


# ---------------------------------------------------------------------------------- scale designs
def scale_units():
    item = {"item_id": "i1", "context": ["hi"], "reference": "hello", "responses": {"s2s": "a", "hred": "b"},
            "reference_metrics": None}
    keys = {"i1": {"r0": "s2s", "r1": "hred"}}
    prior = {"prior_experience_evaluating": False, "prior_experience_agents": True}

    def make(agent_id, outputs):
        return unit(agent_id, {"inputs": {"design": "likert"}, "outputs": outputs},
                    server={"items": [item], "keys": keys})

    answer = {"values": {"r0": 2, "r1": 5}}
    return make, {"ratings": {"i1": {"readability": answer, "coherence": answer}}, "prior_experience": prior,
                  "duration": 30.0, "item_durations": {"i1": 20.0}}


def test_scale_design_malformed_submissions_become_notes():
    make, good = scale_units()
    answer = good["ratings"]["i1"]["readability"]
    bad = [make("10", {**good, "ratings": {**good["ratings"], "i99": {"readability": answer}}}),  # unknown item id
           make("11", {**good, "ratings": {"i1": {"readability": {"values": {"r7": 3}}, "coherence": answer}}}),
           make("12", {**good, "duration": "soon"}), make("13", {**good, "ratings": "i1=6"}),
           make("14", {**good, "ratings": {"i1": ["readability"]}}), make("15", {**good, "prior_experience": ["yes"]}),
           make("16", {**good, "item_durations": {"i1": -4}}),
           make("17", {**good, "ratings": {"i1": {"readability": {"values": {"r0": 9, "r1": 1}},  # 9 > 6
                                                  "coherence": answer}}}),
           make("18", {**good, "ratings": {"i1": {"readability": answer}}})]  # a criterion missing
    check_isolated("scale_designs", [make("1", good)], bad)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs=st.dictionaries(st.sampled_from(["ratings", "prior_experience", "duration", "item_durations"]),
                               JSON, max_size=4))
def test_scale_designs_any_posted_json_never_raises(outputs):
    make, good = scale_units()
    honest = [make("1", good)]
    report = get_task("scale_designs").export(honest + [make("9", {**good, **outputs})], "scale_designs")
    from_records(report.records)
    assert all(r in report.records for r in get_task("scale_designs").export(honest, "scale_designs").records)


# ---------------------------------------------------------------------------------- chat tasks
def test_chat_task_exports_note_a_corrupt_record_and_export_the_rest():
    from parlai_dialeval.crowdsourcing.live_chat_da.worlds import RECORD_FILE as LIVE
    from parlai_dialeval.crowdsourcing.pw_turn.worlds import RECORD_FILE as PW
    from parlai_dialeval.crowdsourcing.sm_eval.worlds import RECORD_FILE as SM

    for task, name in (("sm_eval", SM), ("pw_turn", PW), ("live_chat_da", LIVE)):
        bad = [unit("10", {}, files={name: {"turns": "not a list", "status": "complete"}}),
               unit("11", {}, files={name: {"conversations": [{"slot": 0}], "started": "soon", "question": 7}})]
        report = get_task(task).export(bad, task)
        from_records(report.records)
        assert [m["agent_id"] for m in report.malformed] == ["10", "11"], task
        assert all(r["type"] == "study" for r in report.records)


def test_units_fine_alone_but_failing_together_still_never_raise():
    @guard_units
    def export(units, task_name):
        if len(units) > 1:
            raise RuntimeError("only one at a time")
        from parlai_dialeval.crowdsourcing.platform.export import ExportReport

        return ExportReport(records=[])

    report = export([unit("1", {}), unit("2", {})], "t")
    assert report.records == [] and "together they fail" in report.notes[0]


def test_bad_units_are_found_by_halving():
    from parlai_dialeval.crowdsourcing.platform.export import ExportReport

    calls = []

    @guard_units
    def export(units, task_name):
        calls.append(len(units))
        if any(u.agent_id == "13" for u in units):
            raise ValueError("bad 13")
        return ExportReport(records=[])

    report = export([unit(str(k), {}) for k in range(64)], "t")
    assert [m["agent_id"] for m in report.malformed] == ["13"]
    assert report.notes == ["unit u13 (worker worker13, completed): not exported: bad 13"]
    assert len(calls) == 1 + 2 * 6 + 1  # the whole, two halves at each of log2(64) levels, the good ones
