"""The dashboard of an adaptive run (`dialeval launch ab_next_utterance adaptive=true`, in-process with
the simulated workers of test_adaptive_launch.py): the state file the launch writes is read into the
ranking, each pair's evidence and the batches' allocation, agreeing with the export's comparisons; the
certify plot is served."""
from __future__ import annotations

import pytest

from parlai_dialeval.testing.ports import free_port

from .test_adaptive_launch import LEVELS, quick_batches, run_ab_adaptive  # noqa: F401  (quick_batches: autouse)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_dashboard_of_an_adaptive_run(tmp_path):
    from parlai_dialeval.dashboard.app import create_app
    from parlai_dialeval.dashboard.source import TaskSource

    run_ab_adaptive(tmp_path, free_port(), "ab_dash")
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
