"""judge_agreement's verdict, its bootstrap intervals and the scale check, on simulated votes: items with
their own lean (clustered votes, several per item), judges whose behaviour the test sets. The generator
below shares no code with parlai_dialeval.judge.agreement."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.cli import main
from parlai_dialeval.data.dataset import write_jsonl
from parlai_dialeval.judge import agreement as ag


def simulate(items: int, judge: str, seed: int = 1, votes: int = 3) -> list[dict]:
    """Matched comparisons: per item a lean p ~ Beta(0.6, 0.6) towards 'a', ``votes`` human votes drawn
    from it. Judges: 'person' (one more vote from the same lean), 'coin' (a or b at random)."""
    rng = np.random.default_rng(seed)
    matched = []
    for i in range(items):
        lean = rng.beta(0.6, 0.6)
        humans = ["a" if rng.random() < lean else "b" for _ in range(votes)]
        choice = ("a" if rng.random() < lean else "b") if judge == "person" else rng.choice(["a", "b"])
        matched.append({"protocol": "ab", "criterion": "overall", "item_id": f"i{i}", "model_a": "x",
                        "model_b": "y", "judge": str(choice), "humans": humans, "meta": {}})
    return matched


def verdict_of(matched, bias=None, answered=None) -> str:
    table = ag.verdicts(ag.pairwise_agreement(matched), ag.pairwise_intervals(matched), bias, answered)
    return table.iloc[0]["verdict"]


def no_bias(items: int) -> pd.DataFrame:
    return pd.DataFrame([{"protocol": "ab", "criterion": "overall", "first_share": 0.5, "binomial_p": 1.0,
                          "order_flips": 0}])


def test_a_judge_that_votes_like_one_more_person_agrees_about_as_well_as_people():
    assert verdict_of(simulate(300, "person"), no_bias(300)).startswith("agrees with people about as well")


def test_a_coin_judge_agrees_clearly_less():
    # items lean strongly one way (Beta(0.6, 0.6)): people agree about 0.7 of pairs, a coin 0.5
    assert verdict_of(simulate(300, "coin"), no_bias(300)).startswith("agrees clearly less")


def test_position_bias_and_too_few_readable_answers_come_first():
    biased = pd.DataFrame([{"protocol": "ab", "criterion": "overall", "first_share": 0.983, "binomial_p": 1e-40,
                            "order_flips": 145}])
    assert verdict_of(simulate(300, "person"), biased).startswith("position-biased")
    assert verdict_of(simulate(20, "person"), no_bias(20)) == "too few readable answers"
    # 300 judged, but 700 of 1000 asked got no readable answer (the 59 unreadable of 148 would pass)
    assert verdict_of(simulate(300, "person"), no_bias(300), {"ab": (1000, 300)}) == "too few readable answers"


def test_a_judge_matching_no_human_item_is_told_so_not_called_unreadable():
    unmatched = [m | {"humans": []} for m in simulate(300, "person")]
    table = ag.verdicts(ag.pairwise_agreement(unmatched), ag.pairwise_intervals(unmatched), no_bias(300),
                        {"ab": (300, 300)})
    assert table.iloc[0][["verdict", "because"]].tolist() == [
        "no item in common with the humans",
        "none of the judge's 300 items matches a human item on item_id, the two models, turn_index and question"]


def test_the_intervals_cover_the_agreement_and_narrow_with_more_items():
    small, large = (ag.pairwise_intervals(simulate(n, "person", seed=3)).iloc[0] for n in (60, 960))
    point = ag.pairwise_agreement(simulate(960, "person", seed=3)).iloc[0]
    assert large["judge_human_low"] < point["judge_human"] < large["judge_human_high"]
    assert large["human_human_low"] < point["human_human"] < large["human_human_high"]
    # 16x the items: about a quarter of the width (bootstrap noise allowed)
    ratio = (large["judge_human_high"] - large["judge_human_low"]) / (small["judge_human_high"] - small["judge_human_low"])
    assert 0.15 < ratio < 0.4


def _ratings(worker, low, high, values):
    return [{"type": "rating", "conversation_id": f"c{i}", "worker_id": worker, "model": f"m{i % 3}",
             "criterion": "overall", "scale": "likert", "scale_min": low, "scale_max": high, "value": v,
             "meta": {"protocol": "sm_dialog"}} for i, v in enumerate(values)]


def test_a_judge_on_another_scale_is_refused_or_rescaled_with_a_warning(tmp_path, capsys):
    # FED sm_dialog: humans rate 0-2; a judge asked 1-5
    human = [0, 1, 2, 2, 1, 0] * 6
    write_jsonl(_ratings("w1", 0, 2, human) + _ratings("w2", 0, 2, human), tmp_path / "human.jsonl")
    write_jsonl(_ratings("judge:x", 1, 5, [1 + 2 * v for v in human]), tmp_path / "judge.jsonl")
    args = ["judge_agreement", "--judge", str(tmp_path / "judge.jsonl"), "--human", str(tmp_path / "human.jsonl"),
            "--out", str(tmp_path / "out")]
    assert main(args) != 0
    assert "the judge rated on 1-5, the humans on 0-2" in capsys.readouterr().err
    assert main(args + ["--rescale", "linear"]) == 0
    out = capsys.readouterr().out
    assert "rescaled linearly (v -> 0 + (v - 1) x 0.5)" in out
    ranks = pd.read_csv(tmp_path / "out" / "rating_rankings.csv")
    # 1 + 2v mapped back onto 0-2 is v itself: the judge's system means equal the humans'
    assert np.allclose(ranks["judge_mean"], ranks["human_mean"])
    html = (tmp_path / "out" / "report.html").read_text()
    assert "rescaled linearly" in html and "Verdict" in html
