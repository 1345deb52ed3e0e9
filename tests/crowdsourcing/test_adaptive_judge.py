"""Issue 30: adaptive collection with an LLM judge (crowdsourcing/platform/adaptive/judge.py): items for
people are drawn from the judge's pool with its uncertainty's probabilities, each judgment feeds its
pair's PPI e-process with that probability, and a claim is certified by that e-process."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.adaptive.ledger import Ledger
from parlai_dialeval.crowdsourcing.platform.adaptive.judge import JudgedLedger, JudgePools
from parlai_dialeval.testing.ports import free_port


def design(items: int = 6) -> dict[str, list[dict]]:
    """A/B judgments of one pair, x and y (either shown first)."""
    return {"x|y": [{"item_id": f"i{k}", "model_a": "x" if k % 2 else "y", "model_b": "y" if k % 2 else "x"}
                    for k in range(items)]}


def judge_records() -> pd.DataFrame:
    """The judge on i0-i4 (none on i5): x wins i0-i2 (i2 seen with x second), flips on i3 (a tie), y wins i4."""
    rows = [("i0", "x", "y", "a"), ("i1", "y", "x", "b"), ("i2", "y", "x", "b"), ("i3", "x", "y", "tie"),
            ("i4", "x", "y", "b")]
    return pd.DataFrame([{"item_id": i, "model_a": a, "model_b": b, "choice": c, "worker_id": "judge:t"}
                         for i, a, b, c in rows])



def assert_certify_bets_as_the_launch(table, state: dict) -> None:
    """`certify --judge`'s table (ppi_certified) holds, per pair the launch drew for, the live e-processes."""
    assert len(table) == sum(p["n"] > 0 for p in state["ppi"].values())
    for row in table.itertuples():
        live = state["ppi"][f"{row.model_a}|{row.model_b}"]
        assert row.units == live["n"] and row.e_a_beats_b == pytest.approx(live["best_above"])
        assert row.e_b_beats_a == pytest.approx(live["best_below"])

def test_the_pool_is_the_judged_items_with_probabilities_rising_with_uncertainty():
    pools = JudgePools(design(), judge_records(), floor=0.5)
    assert pools.missing == 1  # i5
    assert pools.f["x|y"].tolist() == [1.0, 1.0, 1.0, 0.5, 0.0]  # for x, the first model by name
    # by hand: uncertainty 1 - |2f - 1| is 1 on i3 only; half the mass uniform, half on i3
    assert pools.p["x|y"] == pytest.approx([0.1, 0.1, 0.1, 0.6, 0.1])
    assert pools.answer("x|y", "i3") == pytest.approx((0.5, 3.0))
    assert pools.answer("x|y", "i5") is None
    rng = np.random.default_rng(0)
    drawn = [pools.draw("x|y", rng)[0] for _ in range(4000)]
    assert np.mean(np.array(drawn) == 3) == pytest.approx(0.6, abs=0.03)


def test_claims_are_certified_by_the_judges_e_process_and_resume_from_the_state():
    pools = JudgePools(design(), judge_records(), floor=0.5)
    ledger = JudgedLedger(["x", "y"], alpha=0.05).attach(pools, {})
    rng = np.random.default_rng(1)
    for _ in range(200):  # people prefer x on every item but i4, where the judge was right too
        index, _ = pools.draw("x|y", rng)
        item = design()["x|y"][index]
        x_wins = item["item_id"] != "i4"
        ledger.add_draw({**item, "choice": "a" if (item["model_a"] == "x") == x_wins else "b"})
    assert ledger.beats("x", "y") and not ledger.beats("y", "x")
    assert ledger.evidence("x", "y") == ledger.processes["x|y"].best_above
    assert not ledger.add_draw({"item_id": "i5", "model_a": "x", "model_b": "y", "choice": "a"})
    resumed = JudgedLedger.from_json(ledger.to_json()).attach(pools, ledger.processes_json())
    assert resumed.evidence("x", "y") == ledger.evidence("x", "y")
    # a pair without a judge pool keeps people's own e-process
    three = JudgedLedger(["x", "y", "z"], alpha=0.05).attach(pools, {})
    plain = Ledger(["x", "y", "z"], alpha=0.05)
    for ledger_ in (three, plain):
        for _ in range(30):
            ledger_.add("x", "z", 1.0)
    assert three.evidence("x", "z") == plain.evidence("x", "z") > 1


def test_an_export_of_actively_drawn_judgments_gives_certify_the_launchs_e_process():
    """The launch's draws carry their probabilities into the export (data/schema.py's DRAW_FIELDS);
    `certify --judge` on those records weights each judgment as the live ledger did, so both e-processes
    are the same; a uniform reading of the same records (the fields dropped) is not."""
    from parlai_dialeval.adaptive.ppi_certification import certify_with_judge
    from parlai_dialeval.data.schema import DRAW_FIELDS

    pools = JudgePools(design(), judge_records(), floor=0.5)
    ledger = JudgedLedger(["x", "y"], alpha=0.05).attach(pools, {})
    rng = np.random.default_rng(2)
    records = []
    for k in range(60):  # people prefer x on 70% of judgments
        index, draw = pools.draw("x|y", rng)
        item = design()["x|y"][index]
        x_wins = rng.random() < 0.7
        record = {**item, **draw, "worker_id": f"w{k}", "question": "q",
                  "choice": "a" if (item["model_a"] == "x") == x_wins else "b"}
        ledger.add_draw(record)
        records.append(record)
    assert sorted({round(r["draw_probability"], 9) for r in records}) == [0.1, 0.6]  # the rest and i3, by hand above
    judge = judge_records().assign(question="q")
    table = certify_with_judge(pd.DataFrame(records), judge).iloc[0]
    live = ledger.processes["x|y"]
    assert table["units"] == 60 and table["judge_pool"] == 5
    assert table["e_a_beats_b"] == pytest.approx(live.best_above) and table["e_b_beats_a"] == pytest.approx(live.best_below)
    assert table["judge_weight"] == pytest.approx(live.lam)
    uniform = certify_with_judge(pd.DataFrame(records).drop(columns=list(DRAW_FIELDS)), judge).iloc[0]
    assert uniform["e_a_beats_b"] != pytest.approx(live.best_above)
    # a judge file with another pool than the launch's is refused for that pair, in words
    other = certify_with_judge(pd.DataFrame(records), judge[judge["item_id"] != "i0"]).iloc[0]
    assert np.isnan(other["e_a_beats_b"]) and "pool of 5 items" in other["verdict"]


def test_a_judge_that_answered_no_design_item_is_refused():
    with pytest.raises(ValueError, match="answered none"):
        JudgePools(design(), judge_records().assign(item_id="other"), floor=0.5)


@pytest.mark.slow
def test_ab_adaptive_with_a_judge_draws_from_its_pool_and_feeds_its_e_processes(tmp_path, monkeypatch):
    import json

    from parlai_dialeval.adaptive.ppi_certification import certify_with_judge
    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db
    from parlai_dialeval.data import from_records, write_jsonl

    from .test_adaptive_launch import LEVELS, answer_ab_hit, finished, hit_waiting, quick_batches
    from .test_resume import LaunchedRun

    quick_batches.__wrapped__(monkeypatch)
    pairs = [("bot_best", "bot_good"), ("bot_good", "bot_fair"), ("bot_best", "bot_fair")]
    items = [{"item_id": f"p{i}_{a}_{b}", "context": [f"prompt {i}"], "model_a": a, "model_b": b,
              "response_a": f"reply of level {LEVELS[a]}", "response_b": f"reply of level {LEVELS[b]}"}
             for i in range(6) for a, b in pairs]
    write_jsonl(items, tmp_path / "items.jsonl")
    # the judge is right on prompts 0-3 and flips (a tie) on prompts 4-5
    judge = [{"type": "comparison", "item_id": r["item_id"], "model_a": r["model_a"], "model_b": r["model_b"],
              "context": r["context"],
              "worker_id": "judge:t", "choice": "a" if not r["item_id"].startswith(("p4", "p5")) else "tie"}
             for r in items]
    write_jsonl(judge, tmp_path / "judge.jsonl")
    run = LaunchedRun("ab_next_utterance", tmp_path / "mephisto", free_port(), [
        f"ab.items_file={tmp_path / 'items.jsonl'}", "ab.per_hit=4", "ab.seed=2",
        "mephisto.blueprint.units_per_assignment=1", "mephisto.task.task_name=ab_judged", "adaptive=true",
        "adaptive_batch_size=1", "adaptive_budget=2", f"adaptive_judge={tmp_path / 'judge.jsonl'}",
        "adaptive_judge_floor=0.5"])
    try:
        for number in range(8):  # a repeated draw of an item in a batch adds a HIT: the budget may be passed
            run.wait(lambda: finished(run) or hit_waiting(run), timeout=90, what="a HIT or the end")
            if finished(run):
                break
            answer_ab_hit(run, f"J{number}")
        run.wait(lambda: finished(run), timeout=30, what="the run to end at the budget")
        exported = collect_from_db(run.db, "ab_judged")[0].records
    finally:
        run.shutdown()
    state = json.loads((tmp_path / "mephisto" / "adaptive" / "ab_judged.json").read_text())
    assert state["status"] == "budget_spent" and state.get("malformed", 0) == 0
    drawn = [entry for batch in state["batches"] for entry in batch["items"]]
    assert len(drawn) == 4 * len(state["batches"])
    # by hand: per pair 6 items, uncertainty 1 on the 2 flipped ones: p = 0.5/6 sure, 0.5/6 + 0.5/2 unsure
    for key, item, probability in drawn:
        assert probability == pytest.approx(0.5 / 6 + (0.25 if item.startswith(("p4", "p5")) else 0.0))
    # every human judgment is one draw of its pair's e-process
    assert state["ppi_draws"] == len(drawn) == sum(p["n"] for p in state["ppi"].values())
    # the judge's pool mean for the first model by name: it wins (1) on 4 prompts, ties (1/2) on 2
    assert state["ppi"]["bot_best|bot_good"]["pool_mean"] == pytest.approx(5 / 6)
    assert state["ppi"]["bot_fair|bot_good"]["pool_mean"] == pytest.approx(1 / 6)  # bot_good is shown as A
    # the export carries each judgment's draw, so `certify --judge` on it bets as the launch did
    people = from_records(exported).comparisons  # the judge above answered without naming the question
    table = certify_with_judge(people, from_records(judge).comparisons.assign(question=people["question"].iloc[0]))
    assert_certify_bets_as_the_launch(table, state)


def test_dialeval_judge_reads_the_ab_design_and_its_answers_are_the_launchs_pool(tmp_path, capsys):
    """`dialeval judge --design ITEMS` judges the A/B items file itself (no votes needed): every item with
    two different responses is answered once, with the item id and pair the launch's JudgePools match."""
    import json

    from parlai_dialeval.cli import main
    from parlai_dialeval.data import read_jsonl

    items = [{"item_id": f"i{k}", "context": [f"prompt {k}"], "model_a": "x", "model_b": "y",
              "response_a": f"x says {k}", "response_b": "same" if k == 3 else f"y says {k}"} for k in range(4)]
    items[3]["response_a"] = "Same "  # identical after normalisation: an automatic tie, never in the pool
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (tmp_path / "judge.json").write_text(json.dumps({"rules": [], "default": "A"}))
    out = tmp_path / "judge.jsonl"
    assert main(["judge", "--design", str(tmp_path / "items.jsonl"), "--protocol", "ab",
                 "--judge", f"script:{tmp_path / 'judge.json'}", "--out", str(out)]) == 0
    answers = read_jsonl([out]).comparisons
    assert sorted(answers["item_id"]) == ["i0", "i1", "i2"]
    assert set(answers["worker_id"]) == {"judge:script:judge"} and set(answers["choice"]) == {"tie"}  # "A" both orders
    pools = JudgePools({"x|y": [{k: i[k] for k in ("item_id", "model_a", "model_b")} for i in items]}, answers, 0.9)
    assert pools.missing == 1 and pools.f["x|y"].tolist() == [0.5, 0.5, 0.5]
    assert main(["judge", "--design", str(tmp_path / "items.jsonl"), "--data", str(out), "--protocol", "ab",
                 "--judge", f"script:{tmp_path / 'judge.json'}", "--out", str(tmp_path / "again.jsonl")]) != 0
    assert "one of the two" in capsys.readouterr().err
