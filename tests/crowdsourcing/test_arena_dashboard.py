"""The arena's study level: the researcher's leaderboard on the dashboard while the arena runs (weighted
Bradley-Terry with intervals, style control, provisional marks, what was left out), and ``adaptive=true`` letting
participants in only until the ranking asked about is certified (its state read by the dashboard's adaptive view)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from parlai_dialeval.crowdsourcing.arena.adaptive import ArenaStudy
from parlai_dialeval.crowdsourcing.arena.sampler import ArenaSampler
from parlai_dialeval.dashboard.leaderboard import leaderboard

SECRET = "a-dashboard-token-for-tests"


def arena_records(votes: int = 120, seed: int = 0) -> list[dict]:
    """Votes as the arena exports them: strong > middle > weak, uneven weights, a few "both bad" ties, and the
    votes of one battle where a reply named its maker (anonymity_leak)."""
    rng = np.random.default_rng(seed)
    strength = {"strong": 1.0, "middle": 0.0, "weak": -1.0}
    names = list(strength)
    records = [{"type": "study", "name": "arena"}]
    for k in range(votes):
        a, b = rng.choice(names, 2, replace=False)
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        draw = rng.random()
        choice = "tie" if draw < 0.1 else "a" if rng.random() < p else "b"
        record = {"type": "comparison", "study": "arena", "item_id": f"battle{k}", "worker_id": f"w{k % 7}",
                  "model_a": str(a), "model_b": str(b), "choice": choice, "turn_index": 1, "question": "Which reply is better?",
                  "context": f"prompt {k}", "response_a": "word " * int(rng.integers(1, 20)),
                  "response_b": "word " * int(rng.integers(1, 20)), "weight": float(rng.choice([0.5, 1.0, 2.0])),
                  "sampling_probability": 1 / 3}
        if choice == "tie":
            record["tie_kind"] = "both_bad" if k % 2 else "tie"
        if k < 4:
            record["anonymity_leak"] = True
        records.append(record)
    return records


def test_the_leaderboard_ranks_with_weights_intervals_style_and_provisional_marks():
    board = leaderboard(arena_records(), rounds=50)
    assert board["weighted"] and board["votes"] == 116
    assert board["left_out"] == {"votes of battles where a reply named its model or maker (anonymity_leak)": 4}
    (section,) = board["sections"]
    rows = section["rows"]
    assert [r["model"] for r in rows] == ["strong", "middle", "weak"] and [r["rank"] for r in rows] == [1, 2, 3]
    for row in rows:
        assert row["low"] < row["bt"] < row["high"] and row["style"] is not None
        assert row["provisional"] and "fewer than 100" in row["why"]  # 116 votes shared by three models
    assert section["both_bad"] > 0 and section["ties"] > section["both_bad"]
    assert leaderboard([{"type": "study", "name": "empty"}])["sections"] == []


class StandIn:
    task_name = "arena_study"

    def leaderboard(self):
        records = arena_records(60)
        records[10]["model_a"] = "<img src=x onerror=alert(1)>"  # a counted vote (the first four are voided)
        return leaderboard(records, rounds=20)


def test_the_leaderboard_page_needs_the_token_and_escapes_names():
    from parlai_dialeval.dashboard.app import create_app

    app = create_app(StandIn(), SECRET)
    app.testing = True
    with app.test_client() as client:
        assert client.get("/leaderboard").status_code == 401
        client.get(f"/?token={SECRET}")
        answer = client.get("/leaderboard")
        page = answer.get_data(as_text=True)
    assert answer.status_code == 200 and 'data-testid="board"' in page and "provisional" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "each vote weighted" in page and "Left out: 4 votes of battles where a reply named" in page


def test_adaptive_arena_lets_participants_in_until_the_top_model_is_certified(tmp_path):
    sampler = ArenaSampler(["strong", "middle", "weak"], kind="informative", alpha=0.05, seed=0)
    units = []
    db = SimpleNamespace(find_tasks=lambda task_name: [SimpleNamespace(db_id="1")],
                         find_units=lambda task_id: units)
    settings = SimpleNamespace(budget=0, batch_size=2)
    said = []
    study = ArenaStudy(sampler, db, "arena_adaptive", settings, fixed_hits=50, say=said.append,
                       path=tmp_path / "adaptive" / "arena_adaptive.json")
    hits = study.hits()
    places = [next(hits), next(hits)]
    assert [p["server"]["adaptive_place"] for p in places] == [1, 2]
    # two places open: the next one waits for one of them (the generator sleeps; a finished unit frees it)
    units += [SimpleNamespace(get_status=lambda: "assigned"), SimpleNamespace(get_status=lambda: "completed")]
    assert study.open_places() == 1
    battle = 0
    while not sampler.certified():  # the participants' battles: strong wins every one
        for other in ("middle", "weak"):
            battle += 1
            sampler.add_battle("strong", other, 1.0, f"b{battle}")
    assert list(hits) == []  # certified: no one new is let in
    state = json.loads((tmp_path / "adaptive" / "arena_adaptive.json").read_text())
    assert state["status"] == "certified" and state["ranking"][0] == "strong"
    assert "the top ranking is certified at alpha 0.05" in said[-1]
    from parlai_dialeval.dashboard.adaptive_view import read_state

    view = read_state(tmp_path, "arena_adaptive")
    assert view["status"] == "certified" and {p["certified"] for p in view["pairs"]} == {"strong"}


def test_adaptive_arena_stops_at_its_budget(tmp_path):
    sampler = ArenaSampler(["a", "b", "c"], seed=0)
    db = SimpleNamespace(find_tasks=lambda task_name: [], find_units=lambda task_id: [])
    study = ArenaStudy(sampler, db, "arena_budget", SimpleNamespace(budget=3, batch_size=5), fixed_hits=10,
                       say=lambda text: None, path=tmp_path / "state.json")
    assert len(list(study.hits())) == 3 and json.loads((tmp_path / "state.json").read_text())["status"] == "budget_spent"


@pytest.mark.parametrize("target", ["top", "full"])
def test_certification_of_the_asked_ranking(target):
    sampler = ArenaSampler(["x", "y", "z"], target=target, seed=0)
    for k in range(40):
        sampler.add_battle("x", "y", 1.0, f"xy{k}")
        sampler.add_battle("x", "z", 1.0, f"xz{k}")
    assert sampler.certified() == (target == "top")  # y vs z never met: the full order is not settled


def test_the_overviews_win_rates_leave_voided_votes_out():
    from parlai_dialeval.dashboard.summary import win_rates

    records = arena_records(40)
    counted = [r for r in records if r["type"] == "comparison" and not r.get("anonymity_leak")]
    assert sum(row["wins_a"] + row["wins_b"] + row["ties"] for row in win_rates(records)) == len(counted) == 36
