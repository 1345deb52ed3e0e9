"""Calibration of the live-chat style control (style_control.live_chat_style_control) and of the per-category
rankings (categories.live_chat_rankings) where a few workers chat most conversations: 30 workers with loads
proportional to 1 / k^1.5 (3 of them chat 69% of the conversations; Kish's effective number of workers 4.2).

Studies come from ``live_chat_study`` below (numpy only, no project code): every model has the same true mean,
and neither style covariate moves the score. In an independent simulation with this generator (500 studies per
setting, 300 conversations, 3 models, 3 topics; Monte-Carlo SE about 0.01), t on the count of workers less 1
(statsmodels' own, CR1) left the true mean outside 0.21 of the raw and 0.25 of the style-adjusted 95% intervals,
called the per-worker covariate significant in 0.20 of studies at 0.05, and left it outside 0.098 of the category
intervals at 1 - 0.05 / 3; on the effective number less 1 these are 0.072, 0.093, 0.082 and 0.018. With CR2
(cluster_robust.worker_robust_fit) instead of CR1, on the effective number, a second simulation (its own generator
of the same design, 500 studies, the same studies for both) gave 0.050, 0.053, 0.038 and 0.008 against CR1's 0.064,
0.093, 0.084 and 0.012. With equal loads the two are the same within 0.006 (CR2 0.051, 0.053, 0.062, 0.020) and Kish's
number is the count.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from parlai_dialeval.analysis.categories import live_chat_rankings
from parlai_dialeval.analysis.style_control import live_chat_style_control

WORKERS, MODELS, TOPICS, TRUE_MEAN = 30, 3, 3, 50.0
ZIPF_LOADS = 1 / np.arange(1, WORKERS + 1) ** 1.5


def live_chat_study(rng, conversations: int, loads=None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(conversations: conversation_id, worker_id, model, score, each rated by the worker who chatted; their
    style; topic membership). Worker bias SD 10, conversation noise SD 15; ``length`` follows each worker's own
    habit (so it clusters like the scores), ``questions`` varies by conversation. ``loads``: each worker's
    share of the conversations (None: exactly equal counts)."""
    worker = (rng.permutation(np.arange(conversations) % WORKERS) if loads is None
              else rng.choice(WORKERS, conversations, p=loads / loads.sum()))
    ids = [f"c{i}" for i in range(conversations)]
    frame = pd.DataFrame({"conversation_id": ids, "worker_id": [f"w{w}" for w in worker],
                          "model": [f"m{m}" for m in rng.integers(MODELS, size=conversations)],
                          "score": TRUE_MEAN + rng.normal(0, 10, WORKERS)[worker] + rng.normal(0, 15, conversations)})
    style = pd.DataFrame({"length": 12 + rng.normal(0, 3, WORKERS)[worker] + rng.normal(0, 3, conversations),
                          "questions": rng.poisson(1.0, conversations) + rng.random(conversations)}, index=ids)
    topic = rng.integers(TOPICS, size=conversations)
    return frame, style, pd.DataFrame({f"t{k}": topic == k for k in range(TOPICS)})


def misses(low, high) -> np.ndarray:
    return (np.asarray(low) > TRUE_MEAN) | (np.asarray(high) < TRUE_MEAN)


def test_style_control_intervals_hold_where_a_few_workers_chat_most_conversations():
    # each study: 3 raw and 3 style-adjusted 95% intervals that should hold the true mean, and one test at 0.05 of
    # the per-worker covariate (no effect); pooled, over seeds 0-19 of this test they fail 0.02-0.08 of the time (mean
    # 0.05) with CR2 and t on the effective number of workers, 0.03-0.13 with CR1 (above 0.09 for 7 seeds, this one
    # among them: 0.13), whose variance is too small where one worker's conversations weigh this much; with CR1 and
    # t on the count of workers 0.16-0.26
    rng, failed = np.random.default_rng(15), []
    for _ in range(60):
        frame, style, _ = live_chat_study(rng, 200, ZIPF_LOADS)
        table, effects = live_chat_style_control(frame, style)
        failed += [*misses(table["raw_ci_low"], table["raw_ci_high"]),
                   *misses(table["style_ci_low"], table["style_ci_high"]),
                   effects.set_index("covariate").loc["length", "p_value"] < 0.05]
    assert np.mean(failed) <= 0.09

    # equal loads: Kish's number is the count, t on workers - 1. The raw fit is model means, so a worker's block of
    # the hat matrix is 1/n_m on their m-rows: CR2 divides the square of their m-residuals' sum by 1 - their share
    # of m's conversations
    frame, style, _ = live_chat_study(rng, 300)
    table, _ = live_chat_style_control(frame, style)
    residual = frame["score"] - frame.groupby("model")["score"].transform("mean")
    mine = frame["model"].eq("m0")
    by_worker = residual[mine].groupby(frame["worker_id"][mine])
    share = by_worker.size() / mine.sum()
    se = np.sqrt((by_worker.sum() ** 2 / (1 - share)).sum()) / mine.sum()
    half = stats.t.isf(0.025, WORKERS - 1) * se
    mean = frame.loc[mine, "score"].mean()
    row = table.set_index("model").loc["m0"]
    assert [row["raw_ci_low"], row["raw_ci_high"]] == pytest.approx([mean - half, mean + half])


def test_category_intervals_hold_their_bonferroni_level_where_a_few_workers_chat_most_conversations():
    rng, studies = np.random.default_rng(5), 60
    missed = []
    for _ in range(studies):
        frame, _, membership = live_chat_study(rng, 200, ZIPF_LOADS)
        ranked = live_chat_rankings(frame, membership)
        missed += list(misses(ranked["ci_low"], ranked["ci_high"]))
    # each interval at 1 - 0.05 / 3 should miss at most 0.017: over 15 other seeds of this test 0.06-0.12 missed
    # with CR1 and t on the count of workers; on the effective number, over seeds 0-19, 0.004-0.035 with CR1 and
    # 0.004-0.024 with CR2
    assert np.mean(missed) <= 0.045
