"""Results by the people who judged in the live-chat analysis (issue 54): model means per group with
worker-clustered intervals at the Bonferroni level, and a permutation test of whether the groups disagree, on
simulated studies written here (its own generator: a group's quality per model, each worker's own offset)."""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.analysis import groups
from parlai_dialeval.data import from_records

CRITERIA = [{"name": n, "positive": True, "scale": "continuous", "min": 0, "max": 100, "question": n}
            for n in ("interesting", "fun", "fluent")]


def study(quality: dict[str, dict[str, float]], workers: int, seed: int) -> tuple[list[dict], pd.DataFrame]:
    """Records of a live-chat study (each worker rates one conversation with each model and the QC bot, rated
    lowest) and a participants table (worker_id, group)."""
    rng = random.Random(seed)
    records = [{"type": "study", "name": "demo", "criteria": CRITERIA, "qc_models": ["degraded"]}]
    people = []
    for group, levels in quality.items():
        for w in range(workers):
            worker, own = f"{group}{w}", rng.gauss(0, 5)
            people.append({"worker_id": worker, "group": group})
            for slot, model in enumerate([*levels, "degraded"]):
                cid = f"{worker}-{slot}"
                records.append({"type": "conversation", "study": "demo", "id": cid, "models": [model],
                                "worker_id": worker, "assignment_id": f"{worker}-A", "slot": slot,
                                "task": "live_chat_da", "turns": [{"speaker": "human", "text": "hello"},
                                                                  {"speaker": model, "text": "hi"}]})
                for c in CRITERIA:
                    value = min(100, max(0, rng.gauss(levels.get(model, 10) + own, 10)))
                    records.append({"type": "rating", "study": "demo", "conversation_id": cid, "worker_id": worker,
                                    "model": model, "criterion": c["name"], "scale": "continuous", "scale_min": 0,
                                    "scale_max": 100, "value": round(value, 1), "assignment_id": f"{worker}-A"})
    return records, pd.DataFrame(people)


def test_live_chat_groups_that_disagree_are_said_on_the_first_screen(tmp_path):
    from parlai_dialeval import results
    from parlai_dialeval.report import Report
    from parlai_dialeval.scripts import groups_report

    records, people = study({"young": {"x": 75, "y": 50}, "old": {"x": 50, "y": 80}}, 12, seed=1)
    result = results.live_chat(from_records(records), participants=people, by="group", group_permutations=199)
    part = result.parts["groups"]
    ranked = part.result.rankings
    assert set(ranked["group"]) == {"old", "young"} and np.allclose(ranked["confidence"], 1 - 0.05 / 2)
    leaders = ranked.sort_values("score", ascending=False).groupby("group")["model"].first()
    assert (leaders["young"], leaders["old"]) == ("x", "y")
    assert part.result.tests.iloc[0]["p_value"] == pytest.approx(1 / 200)
    report = Report("Live chat", tmp_path, "live_chat.html")  # the view build_report calls, without the figures
    groups_report.view(report, part)
    assert any("groups by group disagree (permutation test, p = 0.005)" in v for v in report.verdicts), report.verdicts


def test_live_chat_disagreement_test_holds_its_level():
    # 40 studies whose groups agree: the permutation p-values are uniform (at most 5 rejections at 0.05 of 40:
    # binomial P(X >= 6) = 0.014)
    rng = np.random.default_rng(0)
    p_values = []
    for seed in range(40):
        workers, per = 20, 3
        worker = np.repeat(np.arange(workers), per)
        model = np.tile(np.arange(per), workers)
        score = np.array([0.5, 0.0, -0.5])[model] + rng.normal(0, 0.6, workers)[worker] * np.array(
            [1, -1, 0])[model] + rng.normal(0, 0.5, len(worker))  # each worker's own taste for model 0 over 1
        labels = rng.permutation(np.repeat([0, 1], workers // 2))
        p_values.append(groups.score_disagreement(score, model, worker, labels, permutations=99, seed=seed)[1])
    assert sum(p < 0.05 for p in p_values) <= 5 and 0.35 < np.mean(p_values) < 0.65
