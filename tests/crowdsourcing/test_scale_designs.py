"""Rating-scale designs (Santhanam & Shaikh 2020, section 4) and canonical export."""
from __future__ import annotations

import pytest

from parlai_dialeval.crowdsourcing.scale_designs import export, protocol
from parlai_dialeval.data import from_records

ITEM = protocol.ScaleItem("i1", ["How was your day?"], "It was great, thanks.",
                          {"s2s": "i i i", "hred": "Good, I went hiking.", "vhred": "Fine."},
                          reference_metrics={"readability": 87.4, "coherence": 42.0})
PRIOR = {"prior_experience_evaluating": False, "prior_experience_agents": True}


def records(design, answer):
    answers = {"ratings": {"i1": {"readability": answer, "coherence": answer}}, "prior_experience": PRIOR,
               "duration": 95.0, "item_durations": {"i1": 30.0}}
    return [export.study_record("s", design)] + export.unit_records(
        [ITEM], answers, design=design, study="s", worker_id="w", assignment_id="a")


def test_likert_six_point():
    data = from_records(records("likert", {"values": {"s2s": 1, "hred": 6, "vhred": 4}}))
    assert len(data.ratings) == 6 and set(data.ratings["scale_max"]) == {6}
    with pytest.raises(ValueError):
        records("likert", {"values": {"s2s": 7, "hred": 6, "vhred": 4}})


def test_rme_reference_is_100_and_values_0_to_999():
    data = from_records(records("rme", {"values": {"s2s": 0, "hred": 250.5, "vhred": 999}}))
    assert set(data.ratings["reference_value"]) == {100}
    assert set(data.ratings["scale"]) == {"magnitude"}
    with pytest.raises(ValueError):
        records("rme", {"values": {"s2s": 1000, "hred": 1, "vhred": 1}})


def test_bme_reference_from_the_automatic_metric():
    data = from_records(records("bme", {"values": {"s2s": 10, "hred": 90, "vhred": 50}}))
    refs = data.ratings.groupby("criterion")["reference_value"].first().to_dict()
    assert refs == {"readability": 87.0, "coherence": 42.0}
    bare = protocol.ScaleItem("i2", [], "ref", {"a": "x"})
    with pytest.raises(ValueError, match="reference_metrics"):
        protocol.reference_value(bare, "bme", "readability")


def test_best_worst_values_and_tuple_id():
    data = from_records(records("best_worst", {"best": "hred", "worst": "s2s"}))
    read = data.ratings[data.ratings["criterion"] == "readability"].set_index("model")["value"]
    assert read.to_dict() == {"s2s": -1, "hred": 1, "vhred": 0}
    assert {m["tuple_id"] for m in data.ratings["meta"]} == {"i1:readability", "i1:coherence"}
    with pytest.raises(ValueError):
        records("best_worst", {"best": "hred", "worst": "hred"})


def test_duration_and_prior_experience_recorded():
    data = from_records(records("likert", {"values": {"s2s": 2, "hred": 5, "vhred": 3}}))
    # 30 s on the item spread over its 6 ratings (2 criteria x 3 responses): the sum is the item's time
    assert set(data.ratings["duration"]) == {5.0} and data.ratings["duration"].sum() == 30.0
    meta = data.ratings["meta"].iloc[0]
    assert {k: meta[k] for k in PRIOR} == PRIOR and meta["task_duration"] == 95.0
    with pytest.raises(ValueError, match="prior-experience"):
        export.unit_records([ITEM], {"ratings": {}, "prior_experience": {}, "duration": 1},
                            design="likert", study="s", worker_id="w", assignment_id="a")


def test_task_export_reports_a_unit_without_prior_experience_answers():
    # Export lists the unit with the reason instead of stopping with a traceback (nothing dropped silently).
    from parlai_dialeval.crowdsourcing.platform.export import UnitData
    from parlai_dialeval.crowdsourcing.scale_designs.task import export as task_export

    item = {"item_id": ITEM.item_id, "context": ITEM.context, "reference": ITEM.reference,
            "responses": ITEM.responses, "reference_metrics": ITEM.reference_metrics}
    keys = {"i1": {"r0": "s2s", "r1": "hred", "r2": "vhred"}}
    answer = {"values": {"r0": 1, "r1": 6, "r2": 4}}
    unit = UnitData(unit_id="u1", worker_id="w1", agent_status="completed", assignment_id="a1", agent_id="7",
                    mephisto_worker_id="1", task_run_id="1", task_start=None, task_end=None,
                    server={"items": [item], "keys": keys},
                    state={"inputs": {"design": "likert"},
                           "outputs": {"ratings": {"i1": {"readability": answer, "coherence": answer}},
                                       "duration": 10.0}})
    report = task_export([unit], "scales")
    assert [r for r in report.records if r["type"] == "rating"] == []
    assert report.notes == ["unit u1 (worker w1, completed): not exported: prior-experience answers missing: "
                            "['prior_experience_agents', 'prior_experience_evaluating']"]
