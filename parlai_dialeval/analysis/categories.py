"""Rankings per category: prompt categories from a rule file (category -> regular expressions matched
against the prompt), a ``category`` label in a comparison's ``meta`` (an LLM judge's or an importer's), or
live-chat topics. A vote or conversation may fall in several categories.

Each category's intervals are at level 1 - alpha / K for K categories (Bonferroni, as
multiple_testing's family-wise corrections: the K rankings' intervals hold together with probability at
least 1 - alpha), so a difference seen in one category is not the luckiest of many looks. Pure: DataFrames
in, DataFrames out.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

PAIRWISE_COLUMNS = ["category", "model", "votes", "bt", "ci_low", "ci_high", "rank", "note", "confidence"]
LIVE_CHAT_COLUMNS = ["category", "model", "conversations", "score", "ci_low", "ci_high", "rank", "confidence"]
CATEGORY_KEY = "category"  # the key of a comparison's meta that labels it


def category_alpha(alpha: float, categories: int) -> float:
    """Bonferroni: each of ``categories`` intervals at 1 - alpha / categories."""
    return alpha / max(categories, 1)


def rule_membership(texts: pd.Series, rules: dict[str, list[str]]) -> pd.DataFrame:
    """One boolean column per category: whether the text matches any of its regular expressions (case
    insensitive; one combined pattern per category over the whole column)."""
    texts = texts.astype(object).where(texts.notna(), "").astype(str)
    return pd.DataFrame({name: texts.str.contains("|".join(f"(?:{p})" for p in patterns), flags=re.IGNORECASE,
                                                  regex=True).to_numpy()
                         for name, patterns in rules.items()}, index=texts.index)


def label_membership(labels: pd.Series) -> pd.DataFrame:
    """One boolean column per distinct label (missing labels belong to none)."""
    present = labels.dropna().astype(str)
    return pd.DataFrame({name: (labels.astype(object) == name).to_numpy() for name in sorted(present.unique())},
                        index=labels.index)


def prompt_texts(comparisons: pd.DataFrame) -> pd.Series:
    """The prompt of each comparison as one string (a context list's turns joined by newlines)."""
    if "context" not in comparisons:
        return pd.Series("", index=comparisons.index)
    return comparisons["context"].map(lambda c: "\n".join(map(str, c)) if isinstance(c, (list, tuple, np.ndarray))
                                      else "" if c is None or (isinstance(c, float) and np.isnan(c)) else str(c))


def meta_labels(comparisons: pd.DataFrame) -> pd.Series | None:
    """The ``category`` of each comparison's meta, or None where no comparison has one."""
    if "meta" not in comparisons:
        return None
    labels = comparisons["meta"].map(lambda m: m.get(CATEGORY_KEY) if isinstance(m, dict) else None)
    return labels if labels.notna().any() else None


def pairwise_rankings(comparisons: pd.DataFrame, membership: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per question, unit and category: Bradley-Terry log-strengths (logistic, mean 0) with cluster-robust
    intervals at the Bonferroni level over the categories (style_control.bt_table's fit)."""
    from parlai_dialeval.analysis.pairwise import SECTION, with_sections
    from parlai_dialeval.analysis import bradley_terry
    from parlai_dialeval.analysis.style_control import bt_table

    frame = comparisons if "unit" in comparisons else with_sections(comparisons)
    keep = ~frame["automatic"].eq(True).to_numpy() if "automatic" in frame else np.ones(len(frame), bool)
    level = category_alpha(alpha, membership.shape[1])
    tables = []
    for name in membership.columns:
        chosen = frame[keep & membership[name].to_numpy()]
        for (question, unit), part in chosen.groupby(SECTION, sort=False, dropna=False):
            table, _ = bt_table(bradley_terry.encode(part), level)
            tables.append(table.sort_values("bt", ascending=False, na_position="last").assign(
                question=question, unit=unit, category=name, confidence=1 - level))
    columns = SECTION + PAIRWISE_COLUMNS
    return pd.concat(tables, ignore_index=True)[columns] if tables else pd.DataFrame(columns=columns)


def live_chat_rankings(conversations: pd.DataFrame, membership: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per category: each model's mean score (``conversations``: conversation_id, worker_id, model, score;
    ``membership`` on the same rows) with an interval clustered by worker at the Bonferroni level, t on the
    category's effective number of workers less 1 (cluster_robust.effective_worker_inference)."""
    from parlai_dialeval.analysis.cluster_robust import effective_worker_inference, worker_robust_fit

    level = category_alpha(alpha, membership.shape[1])
    rows = []
    for name in membership.columns:
        part = conversations[membership[name].to_numpy()]
        models = sorted(pd.unique(part["model"].astype(str)))
        if not models or part["worker_id"].nunique() < 2 or len(part) <= len(models):
            continue
        dummies = (part["model"].astype(str).to_numpy()[:, None] == np.array(models)[None, :]).astype(float)
        fit = worker_robust_fit(part["score"].to_numpy(float), dummies, part["worker_id"])
        _, low, high = effective_worker_inference(fit, part["worker_id"], level)
        table = pd.DataFrame({"category": name, "model": models, "conversations": dummies.sum(axis=0).astype(int),
                              "score": fit.params, "ci_low": low, "ci_high": high,
                              "confidence": 1 - level})
        table["rank"] = table["score"].rank(ascending=False, method="min")
        rows.append(table.sort_values("score", ascending=False))
    return pd.concat(rows, ignore_index=True)[LIVE_CHAT_COLUMNS] if rows else pd.DataFrame(columns=LIVE_CHAT_COLUMNS)
