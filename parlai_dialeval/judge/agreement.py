"""Judge against humans on the same items: agreement next to the humans' agreement with each other,
position bias, and where the judge ranks systems differently. Pure functions: DataFrames in, out.

Pairwise (per protocol and criterion): judge-human agreement is the share of (judge answer, human vote)
pairs that agree, over every human vote on a judged item; human-human agreement the share of agreeing
pairs of votes on one item, over every unordered pair of votes (Lee et al.'s measure). "Without ties"
keeps the pairs where neither side is a tie. Cohen's kappa is over the same pairs (the human pairs
counted in both orders, so neither vote is "the first rater"). Ratings: Spearman between the judge and
the humans' mean per item and per system; human-human is one rater (the first in the data) against the
mean of the others, next to the judge against that same mean on the same items; quadratic-weighted
kappa for Likert and binary scales.
"""
from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from parlai_dialeval.protocols.base import normalise

SWAP = {"a": "b", "b": "a", "tie": "tie"}


def is_judge(worker: pd.Series) -> pd.Series:
    return worker.astype(str).str.startswith("judge:")


def _meta(frame: pd.DataFrame, key: str) -> pd.Series:
    return frame["meta"].map(lambda m: m.get(key) if isinstance(m, dict) else None)


def _turn(value) -> int:
    return -1 if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)


def _kappa(x, y, weights=None) -> float:
    if len(x) < 2 or len(set(x) | set(y)) < 2:
        return float("nan")
    return float(cohen_kappa_score(x, y, weights=weights))


def _share(pairs) -> float:
    return float(np.mean([a == b for a, b in pairs])) if pairs else float("nan")


def _no_ties(pairs):
    return [(a, b) for a, b in pairs if a != "tie" and b != "tie"]


def match_comparisons(judge: pd.DataFrame, human: pd.DataFrame) -> list[dict]:
    """Per judge comparison: its choice and the human votes on that item and question, oriented to the
    judge record's model_a (a human who saw the models the other way round is swapped)."""
    human = human[~is_judge(human["worker_id"])]
    for flag in ("automatic", "onboarding"):
        if flag in human:
            human = human[~human[flag].fillna(False).astype(bool)]
    votes: dict[tuple, list] = {}
    for row in human.itertuples(index=False):
        key = (row.item_id, tuple(sorted((row.model_a, row.model_b))), _turn(row.turn_index))
        asked = normalise(row.question) if isinstance(row.question, str) and row.question.strip() else None
        votes.setdefault(key, []).append((asked, row.model_a, row.choice))
    matched = []
    for row, protocol, criterion in zip(judge.itertuples(index=False), _meta(judge, "protocol"),
                                        _meta(judge, "criterion")):
        key = (row.item_id, tuple(sorted((row.model_a, row.model_b))), _turn(row.turn_index))
        wanted = normalise(row.question) if isinstance(row.question, str) else None
        human_votes = [choice if model_a == row.model_a else SWAP[choice]
                       for asked, model_a, choice in votes.get(key, []) if asked is None or asked == wanted]
        matched.append({"protocol": protocol, "criterion": criterion, "item_id": row.item_id,
                        "model_a": row.model_a, "model_b": row.model_b, "judge": row.choice,
                        "humans": human_votes, "meta": row.meta})
    return matched


def pairwise_agreement(matched: list[dict]) -> pd.DataFrame:
    rows = []
    for (protocol, criterion), group in _groups(matched):
        judged = [m for m in group if m["humans"]]
        jh = [(m["judge"], h) for m in judged for h in m["humans"]]
        hh = [pair for m in judged for pair in combinations(m["humans"], 2)]
        both = hh + [(b, a) for a, b in hh]
        rows.append({"protocol": protocol, "criterion": criterion, "items": len(judged),
                     "items_2plus_votes": sum(len(m["humans"]) >= 2 for m in judged), "human_votes": len(jh),
                     "judge_human": _share(jh), "human_human": _share(hh),
                     "judge_human_no_ties": _share(_no_ties(jh)), "human_human_no_ties": _share(_no_ties(hh)),
                     "judge_human_kappa": _kappa([a for a, _ in jh], [b for _, b in jh]),
                     "human_human_kappa": _kappa([a for a, _ in both], [b for _, b in both]),
                     "judge_ties": float(np.mean([m["judge"] == "tie" for m in judged])) if judged else float("nan"),
                     "human_ties": float(np.mean([b == "tie" for _, b in jh])) if jh else float("nan")})
    return pd.DataFrame(rows)


def position_bias(judge: pd.DataFrame) -> pd.DataFrame:
    """Per protocol and criterion: the judge's answers by position over both orders, the share of
    first-position picks among non-ties (0.5 = no bias; two-sided binomial test) and order flips."""
    rows = []
    frame = judge.assign(protocol=_meta(judge, "protocol"), criterion=_meta(judge, "criterion"))
    for (protocol, criterion), group in frame.groupby(["protocol", "criterion"], sort=True):
        answers = [a for m in group["meta"] for a in (m.get("answers") or {}).values()]
        first, second = answers.count("A"), answers.count("B")
        orders = [m.get("order") for m in group["meta"]]
        rows.append({"protocol": protocol, "criterion": criterion, "items": len(group), "answered_first": first,
                     "answered_second": second, "answered_tie": answers.count("tie"),
                     "first_share": first / (first + second) if first + second else float("nan"),
                     "binomial_p": stats.binomtest(first, first + second).pvalue if first + second else float("nan"),
                     "order_flips": orders.count("flip"), "one_order_tie": orders.count("one tie")})
    return pd.DataFrame(rows)


def pairwise_rankings(matched: list[dict]) -> pd.DataFrame:
    """Per system: its win rate (wins + half the ties, over its comparisons) by the judge and by the
    humans on the judged items, and both ranks (1 = best)."""
    rows = []
    for (protocol, criterion), group in _groups(matched):
        tally: dict[str, dict[str, list]] = {}
        for m in (m for m in group if m["humans"]):
            for who, choices in (("judge", [m["judge"]]), ("human", m["humans"])):
                for choice in choices:
                    for model, won in ((m["model_a"], "a"), (m["model_b"], "b")):
                        score = 1.0 if choice == won else 0.5 if choice == "tie" else 0.0
                        tally.setdefault(model, {"judge": [], "human": []})[who].append(score)
        rows += [{"protocol": protocol, "criterion": criterion, "model": model,
                  "judge_win_rate": np.mean(t["judge"]), "human_win_rate": np.mean(t["human"])}
                 for model, t in sorted(tally.items())]
    return _ranked(pd.DataFrame(rows), "judge_win_rate", "human_win_rate")


def _ranked(frame: pd.DataFrame, judge_col: str, human_col: str) -> pd.DataFrame:
    if frame.empty:
        return frame
    grouped = frame.groupby(["protocol", "criterion"])
    frame["judge_rank"] = grouped[judge_col].rank(ascending=False, method="min").astype(int)
    frame["human_rank"] = grouped[human_col].rank(ascending=False, method="min").astype(int)
    frame["rank_differs"] = frame["judge_rank"] != frame["human_rank"]
    return frame


def _groups(matched):
    keys = sorted({(m["protocol"], m["criterion"]) for m in matched}, key=str)
    return [(key, [m for m in matched if (m["protocol"], m["criterion"]) == key]) for key in keys]


def match_ratings(judge: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """One row per judged unit (conversation, turn, criterion, model): the judge's value and the human
    values in data order."""
    human = human[~is_judge(human["worker_id"])]
    values: dict[tuple, list] = {}
    for row in human.itertuples(index=False):
        key = (row.conversation_id, _turn(row.turn_index), row.criterion, row.model)
        values.setdefault(key, []).append(float(row.value))
    rows = []
    for row, protocol in zip(judge.itertuples(index=False), _meta(judge, "protocol")):
        key = (row.conversation_id, _turn(row.turn_index), row.criterion, row.model)
        rows.append({"protocol": protocol, "criterion": row.criterion, "conversation_id": row.conversation_id,
                     "turn_index": key[1], "model": row.model, "scale": row.scale, "judge": float(row.value),
                     "humans": values.get(key, [])})
    return pd.DataFrame(rows)


def _spearman(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(stats.spearmanr(x, y).statistic)


def rating_agreement(units: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (protocol, criterion), group in units.groupby(["protocol", "criterion"], sort=True):
        judged = group[group["humans"].map(len) > 0]
        multi = judged[judged["humans"].map(len) >= 2]
        mean = judged["humans"].map(np.mean)
        first = multi["humans"].map(lambda v: v[0])
        others = multi["humans"].map(lambda v: np.mean(v[1:]))
        systems = judged.assign(human=mean).groupby("model")[["judge", "human"]].mean()
        first_sys = multi.assign(first=first, others=others).groupby("model")[["first", "others"]].mean()
        discrete = group["scale"].iloc[0] in ("likert", "binary")
        jh = [(int(j), int(h)) for j, hs in zip(judged["judge"], judged["humans"]) for h in hs] if discrete else []
        hh = [p for hs in multi["humans"] for p in combinations([int(h) for h in hs], 2)] if discrete else []
        both = hh + [(b, a) for a, b in hh]
        rows.append({"protocol": protocol, "criterion": criterion, "items": len(judged),
                     "items_2plus_ratings": len(multi), "systems": len(systems),
                     "judge_human_spearman_item": _spearman(judged["judge"], mean),
                     "judge_others_spearman_item": _spearman(multi["judge"], others),
                     "human_human_spearman_item": _spearman(first, others),
                     "judge_human_spearman_system": _spearman(systems["judge"], systems["human"]),
                     "human_human_spearman_system": _spearman(first_sys["first"], first_sys["others"]),
                     "judge_human_kappa_quadratic": _kappa(*zip(*jh), weights="quadratic") if jh else float("nan"),
                     "human_human_kappa_quadratic": (_kappa(*zip(*both), weights="quadratic") if both
                                                     else float("nan"))})
    return pd.DataFrame(rows)


def rating_rankings(units: pd.DataFrame) -> pd.DataFrame:
    judged = units[units["humans"].map(len) > 0].assign(human=lambda f: f["humans"].map(np.mean))
    frame = (judged.groupby(["protocol", "criterion", "model"])[["judge", "human"]].mean()
             .rename(columns={"judge": "judge_mean", "human": "human_mean"}).reset_index())
    return _ranked(frame, "judge_mean", "human_mean")
