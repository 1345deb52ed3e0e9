"""Rankings per category: membership from a rule file or labels, and intervals at the Bonferroni level."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.analysis import categories
from parlai_dialeval.errors import DataError
from parlai_dialeval.results.user_files import read_covariates, read_rules


def test_rule_membership_on_hand_written_prompts():
    prompts = pd.Series(["What is 2 + 2?", "Tell me a JOKE about cats", "How do I cook rice?", None])
    rules = {"math": [r"\d+\s*[-+*/]\s*\d+"], "humour": ["joke", "funny"], "cooking": ["cook", "recipe"]}
    got = categories.rule_membership(prompts, rules)
    assert got["math"].tolist() == [True, False, False, False]
    assert got["humour"].tolist() == [False, True, False, False]
    assert got["cooking"].tolist() == [False, False, True, False]


def _votes(seed: int, n: int = 1200) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = {"x": 0.6, "y": 0.0, "z": -0.6}
    rows = []
    for i in range(n):
        a, b = rng.choice(list(strength), size=2, replace=False)
        p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
        rows.append({"item_id": f"p{i}", "worker_id": f"w{i % 30}", "model_a": a, "model_b": b,
                     "choice": "a" if rng.random() < p else "b", "context": ["small talk", "trivia"][i % 2],
                     "meta": {"category": ["chat", "quiz"][i % 2]}})
    return pd.DataFrame(rows)


def test_category_intervals_are_bonferroni_corrected():
    votes = _votes(1)
    one = categories.pairwise_rankings(votes, categories.rule_membership(votes["context"], {"talk": ["talk"]}))
    labels = categories.label_membership(categories.meta_labels(votes))
    both = categories.pairwise_rankings(votes, labels)
    assert set(both["category"]) == {"chat", "quiz"}
    assert np.allclose(both["confidence"], 0.975) and np.allclose(one["confidence"], 0.95)
    # the same votes (category "talk" = label "chat"), a wider interval at the corrected level
    width_one = (one["ci_high"] - one["ci_low"]).to_numpy()
    chat = both[both["category"] == "chat"].set_index("model").loc[one["model"]]
    assert np.all((chat["ci_high"] - chat["ci_low"]).to_numpy() > width_one)
    assert chat["bt"].idxmax() == "x"


def test_bad_rule_files_and_covariate_files_give_one_line(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("math: ['(unclosed']\n", encoding="utf-8")
    with pytest.raises(DataError, match="rules.yaml.*field 'math'.*not a regular expression"):
        read_rules(rules)
    rules.write_text("- just a list\n", encoding="utf-8")
    with pytest.raises(DataError, match="not a mapping of categories"):
        read_rules(rules)
    covariates = tmp_path / "cov.csv"
    covariates.write_text("item_id,model,politeness\np1,x,0.5\np1,y,high\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"cov.csv, row 3: field 'politeness': not a finite number"):
        read_covariates(covariates, ("item_id", "model"))
    covariates.write_text("item,politeness\np1,0.5\n", encoding="utf-8")
    with pytest.raises(DataError, match="field 'item_id': missing column"):
        read_covariates(covariates, ("item_id", "model"))


def test_live_chat_topics_rank_models_per_topic_at_the_corrected_level():
    rng = np.random.default_rng(3)
    rows = []
    for c in range(400):
        topic = ["music", "sports"][c % 2]
        model = ["p", "q"][(c // 2) % 2]
        best = "p" if topic == "music" else "q"  # each model better on its own topic
        rows.append({"conversation_id": f"c{c}", "worker_id": f"w{c % 40}", "model": model, "topic": topic,
                     "score": (0.5 if model == best else -0.5) + rng.normal(0, 0.5)})
    conv = pd.DataFrame(rows)
    ranked = categories.live_chat_rankings(conv, categories.label_membership(conv["topic"]))
    top = ranked[ranked["rank"] == 1].set_index("category")["model"]
    assert top.to_dict() == {"music": "p", "sports": "q"}
    assert np.allclose(ranked["confidence"], 0.975)
    assert (ranked["ci_low"] < ranked["score"]).all() and (ranked["score"] < ranked["ci_high"]).all()
