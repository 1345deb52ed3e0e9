"""`dialeval analyze_pairwise --worker-checks` (Smith et al. 2022, Appendix B) on PW-Turn-style data: the
worker who types in capitals is flagged; `apply` drops their votes, `report` keeps them. Expected win
counts are counted by hand from the votes below."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from parlai_dialeval.cli import main as dialeval
from parlai_dialeval.data import write_jsonl

TYPED = {"careful": ["I spent the weekend hiking in the hills", "My favourite food is pasta with tomatoes"],
         "shouter": ["I SPENT THE WEEKEND HIKING", "MY FAVOURITE FOOD IS PASTA"]}
# careful prefers alpha in 3 of 4 turns; shouter always prefers beta
VOTES = {"careful": ["a", "a", "a", "b"], "shouter": ["b", "b", "b", "b"]}


def records() -> list[dict]:
    rows = []
    for worker, typed in TYPED.items():
        conv = f"pw-{worker}"
        turns = []
        for text in ["Hi!", *typed]:
            turns += [{"speaker": "human", "text": text}, {"speaker": "alpha", "text": "That sounds nice."}]
        rows.append({"type": "conversation", "id": conv, "models": ["alpha", "beta"], "worker_id": worker,
                     "turns": turns, "task": "pw_turn"})
        for turn, choice in enumerate(VOTES[worker]):
            rows.append({"type": "comparison", "item_id": conv, "turn_index": turn, "worker_id": worker,
                         "model_a": "alpha", "model_b": "beta", "choice": choice,
                         "question": "Which next response from your partner would you prefer?"})
    return rows


@pytest.mark.parametrize("mode, wins_alpha, wins_beta, flagged", [
    ("off", 3, 5, None), ("report", 3, 5, 1), ("apply", 3, 1, 1)])
def test_worker_checks_modes(tmp_path, mode, wins_alpha, wins_beta, flagged):
    data = tmp_path / "pw.jsonl"
    write_jsonl(records(), data)
    out = tmp_path / mode
    assert dialeval(["analyze_pairwise", "--data", str(data), "--out", str(out), "--worker-checks", mode,
                     "--bootstrap-rounds", "20"]) == 0
    rates = pd.read_csv(out / "win_rates.csv").iloc[0]
    assert (rates["model_a"], rates["model_b"]) == ("alpha", "beta")
    assert (rates["wins_a"], rates["wins_b"]) == (wins_alpha, wins_beta)
    summary = json.loads((out / "agreement.json").read_text())
    if flagged is None:
        assert "worker_checks" not in summary and not (out / "worker_checks.csv").exists()
    else:
        checks = pd.read_csv(out / "worker_checks.csv")
        assert sorted(checks.loc[checks["flagged"], "worker_id"]) == ["shouter"]
        assert summary["worker_checks"]["flagged"] == flagged
        assert "Worker checks (Smith App. B)" in (out / "report.html").read_text()


def test_participants_who_left_after_the_practice_are_not_flagged(tmp_path):
    # Issue 50 item 3: two PW-Turn participants who stopped after the practice were "2 flagged", "short messages
    # 1" each: their only turn is the "Hi!" the page sends by itself. Their records as the PW-Turn export writes
    # a unit whose session never finished (crowdsourcing/pw_turn/task.py: status incomplete, the fixed opening
    # marked meta.fixed, no comparison).
    leavers = [{"type": "conversation", "id": f"pw-left{n}", "models": ["alpha", "beta"], "worker_id": f"left{n}",
                "turns": [{"speaker": "human", "text": "Hi!", "meta": {"fixed": True}}], "task": "pw_turn",
                "status": "incomplete"} for n in range(2)]
    data = tmp_path / "pw.jsonl"
    write_jsonl(records() + leavers, data)
    out = tmp_path / "report"
    assert dialeval(["analyze_pairwise", "--data", str(data), "--out", str(out), "--bootstrap-rounds", "20"]) == 0
    checks = pd.read_csv(out / "worker_checks.csv")
    assert sorted(checks["worker_id"]) == ["careful", "shouter"]
    assert sorted(checks.loc[checks["flagged"], "worker_id"]) == ["shouter"]
    report = (out / "report.html").read_text()
    # the evidence table (issue 51) lists every participant, the leavers too: there, and only there, not flagged
    evidence = pd.read_csv(out / "evidence.csv").set_index("worker_id")
    assert not evidence.loc[["left0", "left1"], "flagged"].any() and evidence.loc["shouter", "flagged"]
    before_table = report.split("evidence.csv holds every worker")[0]
    assert "on 2 worker(s): 1 flagged (shouter)" in report and "left0" not in before_table
