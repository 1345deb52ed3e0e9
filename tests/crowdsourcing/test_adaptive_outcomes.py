"""What an adaptive launch counts as evidence (crowdsourcing/platform/adaptive/controller.py
``outcomes``): one outcome per cluster (the votes on one item), oriented to the pair's first model by name: a comparison
alone on its item, a PW-Turn conversation's per-turn votes or several workers' votes on one prompt each
one outcome, their mean; automatic ties and onboarding left out. Expected values by hand."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.adaptive.ledger import Ledger
from parlai_dialeval.crowdsourcing.platform.adaptive.controller import outcomes, within_cap


def comparison(a, b, choice, **extra):
    return {"type": "comparison", "model_a": a, "model_b": b, "choice": choice, "worker_id": "w1",
            "item_id": "i1", **extra}


def without_keys(found):
    return [judgment[:4] for judgment in found]


def test_single_comparisons_are_oriented_to_the_first_model_by_name():
    records = [comparison("zeta", "alpha", "a", item_id="i1"), comparison("alpha", "zeta", "a", item_id="i2"),
               comparison("zeta", "alpha", "tie", item_id="i3"), {"type": "conversation", "id": "c1"}]
    assert without_keys(outcomes(records)) == [("w1", "alpha", "zeta", 0.0), ("w1", "alpha", "zeta", 1.0),
                                               ("w1", "alpha", "zeta", 0.5)]


def test_per_turn_votes_of_one_conversation_are_one_outcome():
    turns = [comparison("m2", "m1", "a", turn_index=1), comparison("m1", "m2", "a", turn_index=3),
             comparison("m2", "m1", "tie", turn_index=5)]
    other = [comparison("m1", "m2", "b", turn_index=1, item_id="i2")]
    # conversation i1, from m1's side: lost, won, tied -> 1/2; conversation i2: lost -> 0
    assert without_keys(outcomes(turns + other)) == [("w1", "m1", "m2", pytest.approx(0.5)), ("w1", "m1", "m2", 0.0)]


def test_votes_of_several_workers_on_one_prompt_are_one_outcome():
    # three workers judge prompt p1 (alpha, zeta, zeta: alpha's mean 1/3); p2 has one vote, a tie
    records = [comparison("alpha", "zeta", "a", item_id="p1"), comparison("zeta", "alpha", "a", item_id="p2"),
               comparison("zeta", "alpha", "a", item_id="p1", worker_id="w2"),
               comparison("alpha", "zeta", "b", item_id="p1", worker_id="w3")]
    records[1]["choice"] = "tie"
    assert without_keys(outcomes(records)) == [("w1", "alpha", "zeta", pytest.approx(1 / 3)),
                                               ("w1", "alpha", "zeta", 0.5)]


def test_automatic_ties_and_onboarding_are_not_evidence():
    records = [comparison("a", "b", "tie", automatic=True), comparison("onboarding_good", "onboarding_bad", "a",
                                                                       onboarding=True)]
    assert outcomes(records) == []


def test_worker_cap_counts_across_batches():
    counts = {"w1": 2}  # w1 had two judgments counted in earlier batches
    judgments = [("w1", "a", "b", 1.0), ("w2", "a", "b", 0.0), ("w1", "a", "b", 0.5), ("w2", "a", "b", 1.0),
                 ("w2", "a", "b", 1.0)]
    kept, over = within_cap(judgments, counts, cap=3)
    assert kept == judgments[:2] + judgments[3:] and over == 1 and counts == {"w1": 3, "w2": 3}
    assert within_cap(judgments, {}, cap=0) == (judgments, 0)


def test_an_item_read_again_in_a_later_batch_is_bet_once():
    # batch 1: prompt p1 (two workers, alpha wins both) and p2; batch 3: p1 again (reused) and a new p3
    first = [comparison("alpha", "zeta", "a", item_id="p1"), comparison("zeta", "alpha", "b", item_id="p1",
                                                                        worker_id="w2"),
             comparison("alpha", "zeta", "b", item_id="p2")]
    later = [comparison("alpha", "zeta", "a", item_id="p1", worker_id="w3"),
             comparison("alpha", "zeta", "a", item_id="p3")]
    ledger = Ledger(["alpha", "zeta"])
    bet = [ledger.add(*judgment[1:]) for judgment in outcomes(first)]
    restored = Ledger.from_json(json.loads(json.dumps(ledger.to_json())))  # a resumed launch
    bet += [restored.add(*judgment[1:]) for judgment in outcomes(later)]
    assert bet == [True, True, False, True]
    pair = restored.pairs[("alpha", "zeta")]
    # outcomes bet: p1 = 1, p2 = 0, p3 = 1 (p1's third vote is no second bet on p1)
    assert pair.n == 3 and pair.total == 2.0 and pair.repeats == 1
    # the same item under another question is another cluster
    other = outcomes([comparison("alpha", "zeta", "a", item_id="p1", question="Which is more fun?")])
    assert restored.add(*other[0][1:])


def test_flagged_workers_votes_are_left_out_of_later_batches():
    # adaptive_exclude_flagged: the voter tests run on every vote read so far; a rigger's votes in the batch
    # where the evidence is complete, and after, are not evidence (crowd simulated by testing/crowd_votes.py)
    import numpy as np

    from parlai_dialeval.crowdsourcing.platform.adaptive.controller import drop_flagged
    from parlai_dialeval.testing.crowd_votes import crowd_study

    study = crowd_study(np.random.default_rng(3), votes=2000, rigging_share=0.05, target=0, rigger_votes=100)
    riggers = sorted(set(study.loc[~study["honest"], "worker_id"]))
    records = [{"type": "comparison", **row} for row in study.drop(columns=["honest"]).to_dict(orient="records")]
    seen: list = []
    first, flagged_early, _ = drop_flagged(records[:100], seen, alpha=0.05)
    assert flagged_early == [] and first == records[:100]  # too few votes for any evidence yet
    later, flagged, left_out = drop_flagged(records[100:] + [{"type": "conversation", "worker_id": riggers[0]}],
                                            seen, alpha=0.05)
    assert flagged == riggers and len(seen) == len(records)
    assert left_out == sum(r["worker_id"] in riggers for r in records[100:])
    assert not any(r["worker_id"] in riggers for r in later if r["type"] == "comparison")
    assert later[-1] == {"type": "conversation", "worker_id": riggers[0]}  # only votes are left out
