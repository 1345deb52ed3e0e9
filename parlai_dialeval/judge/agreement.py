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

from parlai_dialeval.errors import DataError, DialevalError, record_line
from parlai_dialeval.protocols.base import normalise

SWAP = {"a": "b", "b": "a", "tie": "tie"}


def is_judge(worker: pd.Series) -> pd.Series:
    return worker.astype(str).str.startswith("judge:")


def _meta(frame: pd.DataFrame, key: str) -> pd.Series:
    return frame["meta"].map(lambda m: m.get(key) if isinstance(m, dict) else None)


def require_meta(data, source: str) -> None:
    """Refuse, in one line naming the file (``_file``, else ``source``) and the first record, judge records
    without what every table is grouped by: the protocol (``meta.protocol``) and, for comparisons, the
    criterion (``meta.criterion``), which their own fields do not give (``dialeval judge`` writes both)."""
    for kind, frame, keys in (("comparisons", data.comparisons, ("protocol", "criterion")),
                              ("ratings", data.ratings, ("protocol",))):
        if frame.empty:
            continue
        lacking = pd.Series(False, index=frame.index)
        for key in keys:
            lacking |= _meta(frame, key).map(lambda v: not (isinstance(v, str) and v.strip()))
        if lacking.any():
            first = frame[lacking].iloc[0]
            path, line = first.get("_file", source), record_line(first.get("_line"))
            mine = frame["_file"] == path if "_file" in frame else pd.Series(True, index=frame.index)
            wanted = " and ".join(f"meta.{key}" for key in keys)
            raise DataError(path, f"{int((lacking & mine).sum())} of {int(mine.sum())} judge {kind} have no {wanted}, "
                                  "which the agreement is grouped by", line=line,
                            expected='"meta": {' + ", ".join(f'"{key}": ...' for key in keys)
                            + "} on each, as dialeval judge writes")


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
        rows.append({"protocol": protocol, "criterion": criterion, "judge_items": len(group), "items": len(judged),
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
        rows.append({"protocol": protocol, "criterion": criterion, "judge_items": len(group), "items": len(judged),
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


# ----------------------------------------------------------------------------- scales, intervals, verdicts
MIN_READABLE_ITEMS = 30  # fewer judged items than this cannot separate "as well as people" from "less"
MIN_READABLE_SHARE = 0.5  # nor can a judge that left more than half of its items unreadable
BIASED_FIRST_SHARE = 0.15  # first-position share this far from 0.5 (p < 0.01) is position bias
RULE = (f"Rule: too few readable answers when fewer than {MIN_READABLE_ITEMS} items were judged or fewer than "
        f"{MIN_READABLE_SHARE:.0%} of the items asked got a readable answer; else position-biased when the judge "
        f"picks the first position in more than {0.5 + BIASED_FIRST_SHARE:.0%} or fewer than "
        f"{0.5 - BIASED_FIRST_SHARE:.0%} of its non-tie answers (binomial p < 0.01) or its answer flips with the "
        "order on at least half of the items; else clearly less than people when the 95% bootstrap interval "
        "(items resampled) of judge-human minus human-human agreement lies below 0; else about as well as people. "
        "Before the rule: no item in common with the humans when none of the judge's items matches a human item.")


class ScaleMismatch(DialevalError):
    """The judge rated on another scale than the humans (and no rescaling was asked for)."""


def _unit(frame: pd.DataFrame) -> pd.Series:
    """"turn" for ratings of one turn (with a turn_index), "dialog" for ratings of a whole conversation."""
    return frame["turn_index"].isna().map({True: "dialog", False: "turn"})


def check_scales(judge: pd.DataFrame, human: pd.DataFrame, rescale: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The judge's ratings on the humans' scale, per criterion and unit, and a warning for each changed.

    Per unit (ratings of one turn, of a whole conversation) because one study may rate a criterion both
    ways on different scales (SM-Eval: a 0-1 tick per turn, 1-5 per dialog); the judge's ratings are
    compared with the humans' ratings they are matched with. A judge whose scale (scale_min, scale_max)
    differs from the humans' is refused, naming both, unless ``rescale == "linear"``: then its values
    are mapped linearly onto the humans' range (the judge's lowest point to theirs, its highest to
    theirs), which is the one rule that keeps order and spacing.
    """
    human = human[~is_judge(human["worker_id"])]
    warnings, judge = [], judge.copy()
    human_units, judge_units = _unit(human), _unit(judge)
    for (criterion, unit), group in judge.groupby([judge["criterion"], judge_units], sort=True):
        people = human[(human["criterion"] == criterion) & (human_units == unit)]
        if people.empty or "scale_min" not in people or "scale_min" not in group:
            continue
        theirs = (people["scale_min"].min(), people["scale_max"].max())
        ours = (group["scale_min"].min(), group["scale_max"].max())
        if any(pd.isna(v) for v in theirs + ours) or tuple(map(float, theirs)) == tuple(map(float, ours)):
            continue
        where = f"criterion {criterion!r} ({'per turn' if unit == 'turn' else 'per dialog'}): the judge rated on " \
                f"{ours[0]:g}-{ours[1]:g}, the humans on {theirs[0]:g}-{theirs[1]:g}"
        if rescale != "linear":
            raise ScaleMismatch(f"{where}; agreement on different scales means nothing. Ask the judge on the "
                                "humans' scale, or pass --rescale linear to map its values linearly")
        rows = group.index
        span = (float(theirs[1]) - float(theirs[0])) / (float(ours[1]) - float(ours[0]))
        judge.loc[rows, "value"] = float(theirs[0]) + (judge.loc[rows, "value"] - float(ours[0])) * span
        judge.loc[rows, "scale_min"], judge.loc[rows, "scale_max"] = theirs
        warnings.append(f"{where}; its values were rescaled linearly (v -> {theirs[0]:g} + (v - {ours[0]:g}) x "
                        f"{span:.3g}), so agreement is on the humans' scale")
    return judge, warnings


def _interval(columns, statistic, seed: int = 0, resamples: int = 2000) -> tuple[float, float]:
    """95% percentile bootstrap interval of ``statistic`` over items (``columns``: one array per
    quantity, one entry per item, resampled together)."""
    if len(columns[0]) < 2:
        return float("nan"), float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        result = stats.bootstrap(tuple(np.asarray(c, float) for c in columns), statistic, paired=True,
                                 vectorized=True, n_resamples=resamples, method="percentile",
                                 random_state=np.random.default_rng(seed))
    low, high = result.confidence_interval
    return float(low), float(high)


def pairwise_intervals(matched: list[dict], seed: int = 0) -> pd.DataFrame:
    """Per protocol and criterion: bootstrap intervals, items resampled, of judge-human and human-human
    agreement (shares of agreeing pairs) and of their difference."""
    rows = []
    for (protocol, criterion), group in _groups(matched):
        judged = [m for m in group if m["humans"]]
        jh_agree = [sum(m["judge"] == h for h in m["humans"]) for m in judged]
        jh_total = [len(m["humans"]) for m in judged]
        pairs = [list(combinations(m["humans"], 2)) for m in judged]
        hh_agree = [sum(a == b for a, b in p) for p in pairs]
        hh_total = [len(p) for p in pairs]

        def ratio(a, b, axis=-1):
            return a.sum(axis) / b.sum(axis)

        def difference(ja, jt, ha, ht, axis=-1):
            return ja.sum(axis) / jt.sum(axis) - ha.sum(axis) / ht.sum(axis)

        jh, hh = _interval((jh_agree, jh_total), ratio, seed), _interval((hh_agree, hh_total), ratio, seed)
        both = [i for i, t in enumerate(hh_total) if t]  # the difference needs items with 2+ votes
        diff = _interval([[c[i] for i in both] for c in (jh_agree, jh_total, hh_agree, hh_total)], difference, seed)
        rows.append({"protocol": protocol, "criterion": criterion, "judge_human_low": jh[0], "judge_human_high": jh[1],
                     "human_human_low": hh[0], "human_human_high": hh[1], "difference_low": diff[0],
                     "difference_high": diff[1]})
    return pd.DataFrame(rows)


def rating_intervals(units: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per protocol and criterion, on items with 2+ human ratings: bootstrap intervals (items resampled)
    of Spearman judge vs the other raters' mean, first rater vs that mean, and their difference."""
    rows = []
    for (protocol, criterion), group in units.groupby(["protocol", "criterion"], sort=True):
        multi = group[group["humans"].map(len) >= 2]
        judge = multi["judge"].to_numpy(float)
        first = multi["humans"].map(lambda v: v[0]).to_numpy(float)
        others = multi["humans"].map(lambda v: np.mean(v[1:])).to_numpy(float)

        def rho(x, y, axis=-1):
            return _rank_corr(x, y)

        def difference(j, f, o, axis=-1):
            return _rank_corr(j, o) - _rank_corr(f, o)

        jh, hh = _interval((judge, others), rho, seed), _interval((first, others), rho, seed)
        diff = _interval((judge, first, others), difference, seed)
        rows.append({"protocol": protocol, "criterion": criterion, "judge_human_low": jh[0], "judge_human_high": jh[1],
                     "human_human_low": hh[0], "human_human_high": hh[1], "difference_low": diff[0],
                     "difference_high": diff[1]})
    return pd.DataFrame(rows)


def _rank_corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho along the last axis of (resamples x items) arrays (Pearson of average ranks)."""
    rx, ry = stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1)
    rx, ry = rx - rx.mean(-1, keepdims=True), ry - ry.mean(-1, keepdims=True)
    return (rx * ry).sum(-1) / np.sqrt((rx ** 2).sum(-1) * (ry ** 2).sum(-1))


def verdicts(agreement: pd.DataFrame, intervals: pd.DataFrame, bias: pd.DataFrame | None,
             answered: dict | None) -> pd.DataFrame:
    """One plain-words verdict per protocol and criterion, by ``RULE``. ``answered``: protocol ->
    (items asked, items with a readable answer) from the judge's summary (None: not known)."""
    rows = []
    frame = agreement.merge(intervals, on=["protocol", "criterion"], how="left")
    if bias is not None and not bias.empty:
        frame = frame.merge(bias[["protocol", "criterion", "first_share", "binomial_p", "order_flips"]]
                            .rename(columns={"order_flips": "flips"}), on=["protocol", "criterion"], how="left")
    for row in frame.to_dict(orient="records"):
        asked, readable = (answered or {}).get(row["protocol"], (None, None))
        share = readable / asked if asked else None
        first, p, flips = row.get("first_share"), row.get("binomial_p"), row.get("flips")
        if not row["items"]:
            # Not a judge that could not answer: its records name items the humans' records do not.
            keys = ("item_id, the two models, turn_index and question" if "human_votes" in row
                    else "conversation_id, turn_index, criterion and model")
            verdict, why = "no item in common with the humans", (
                f"none of the judge's {row['judge_items']} items matches a human item on {keys}")
        elif row["items"] < MIN_READABLE_ITEMS or (share is not None and share < MIN_READABLE_SHARE):
            verdict, why = "too few readable answers", (
                f"{row['items']} items judged" + (f"; {readable} of {asked} items asked got a readable answer"
                                                  if asked else ""))
        elif (first is not None and not pd.isna(first) and abs(first - 0.5) > BIASED_FIRST_SHARE and p < 0.01) or \
                (flips is not None and not pd.isna(flips) and flips >= row["items"] / 2):
            verdict, why = "position-biased: do not use this judge for this protocol", (
                f"first position in {first:.0%} of non-tie answers (p = {p:.2g}); answer flips with the order "
                f"on {int(flips)} of {row['items']} items")
        elif row["difference_high"] < 0:
            verdict, why = "agrees clearly less than people agree with each other: do not use it in their place", (
                f"difference {row['difference_low']:+.3f} to {row['difference_high']:+.3f}")
        else:
            verdict, why = "agrees with people about as well as people agree with each other", (
                "difference interval not computable" if pd.isna(row["difference_high"]) else
                f"difference interval {row['difference_low']:+.3f} to {row['difference_high']:+.3f} includes 0"
                + (" or lies above it" if row["difference_low"] > 0 else ""))
        rows.append({"protocol": row["protocol"], "criterion": row["criterion"], "verdict": verdict, "because": why})
    return pd.DataFrame(rows)
