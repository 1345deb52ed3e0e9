"""The dashboard of an adaptive run (`dialeval launch ab_next_utterance adaptive=true`, in-process with
simulated workers as in test_adaptive_launch.py): the state file the launch writes is read into the
ranking, each pair's evidence and the batches' allocation, agreeing with the export's comparisons; the
certify plot is served."""
from __future__ import annotations

import pytest

from parlai_dialeval.crowdsourcing.platform import adaptive
from parlai_dialeval.data import write_jsonl

from .test_adaptive_launch import LEVELS, finished, hit_waiting, level_of, live_unit_agent
from .test_resume import LaunchedRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
PORT = 3345  # docs/crowdsourcing.md: the dashboard tests' ports


def test_dashboard_of_an_adaptive_run(tmp_path, monkeypatch):
    import mephisto.operations.task_launcher as task_launcher

    from parlai_dialeval.dashboard.app import create_app
    from parlai_dialeval.dashboard.source import TaskSource

    # Mephisto looks for new units every 10 s and the controller every 2 s: shortened, as test_adaptive_launch does
    monkeypatch.setattr(task_launcher, "UNIT_GENERATOR_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(adaptive, "POLL_SECONDS", 0.1)
    items = tmp_path / "items.jsonl"
    write_jsonl([{"item_id": f"p{i}_{a}_{b}", "context": [f"prompt {i}"], "model_a": a, "model_b": b,
                  "response_a": f"reply of level {LEVELS[a]}", "response_b": f"reply of level {LEVELS[b]}"}
                 for i in range(4) for a, b in [("bot_best", "bot_good"), ("bot_good", "bot_fair"),
                                                ("bot_best", "bot_fair")]], items)
    run = LaunchedRun("ab_next_utterance", tmp_path / "mephisto", PORT, [
        f"ab.items_file={items}", "ab.per_hit=4", "ab.seed=2", "mephisto.blueprint.units_per_assignment=1",
        "mephisto.task.task_name=ab_dash", "adaptive=true", "adaptive_batch_size=1", "adaptive_budget=2"])
    try:
        for number in range(2):
            run.wait(lambda: hit_waiting(run), timeout=30, what="a launched HIT")
            run.register(f"A{number}", f"REG_A{number}")
            agent = live_unit_agent(run, f"A{number}")
            run.wait(lambda: run.live_agent(agent).state.get_data().get("inputs") is not None, what="the HIT's data")
            shown = run.live_agent(agent).state.get_data()["inputs"]["shown"]
            answers = {p["item_id"]: {"choice": "a" if level_of(p["response_a"]) > level_of(p["response_b"]) else "b"}
                       for p in shown}
            run.server.submit_mock_unit(agent.get_agent_id(), {"answers": answers})
            run.settle()
        run.wait(lambda: finished(run), timeout=30, what="the run to end at the budget")
    finally:
        run.shutdown()
    source = TaskSource("ab_dash", tmp_path / "mephisto")
    data = source.snapshot()
    view = data["adaptive"]
    assert view["status"] == "budget_spent" and [b["batch"] for b in view["batches"]] == [2, 1]
    assert sorted(view["ranking"]) == sorted(LEVELS.keys() - {"bot_poor"})
    comparisons = [r for r in source.records() if r["type"] == "comparison" and not r.get("onboarding")]
    assert sum(p["outcomes"] for p in view["pairs"]) == view["judgments"] == len(comparisons) == 8
    for pair in [p for p in view["pairs"] if p["outcomes"]]:  # every answer picked the better bot
        better_first = LEVELS[pair["a"]] > LEVELS[pair["b"]]
        assert pair["win_rate_a"] == (1.0 if better_first else 0.0)
        assert (pair["e_a_beats_b"] > 1) == better_first
    assert sum(g["done"] for g in data["groups"]) == 8 and data["progress"]["done"] == 2
    app = create_app(source, "test-secret-1234")
    with app.test_client() as web:
        web.post("/login", data={"token": "test-secret-1234"})
        assert "Adaptive collection: budget_spent" in web.get("/").get_data(as_text=True)
        png = web.get("/plot/certify.png")
        assert png.status_code == 200 and png.data.startswith(b"\x89PNG")
