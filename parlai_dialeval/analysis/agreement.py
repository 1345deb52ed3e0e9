"""Agreement among pairwise annotators (Lee et al. 2020, 5.1-5.2): Fleiss' kappa (statsmodels),
Krippendorff's alpha (krippendorff, for items with unequal numbers of votes), Lee's weak agreement
(allagree, A/Bdis, onedis, alldis), each annotator's correlation with the others, and item-total
correlation per prompt (prompt validity). Automatic ties carry no judgement and are left out; a vote's
category (a, b, tie) is read in the pair's first-seen orientation, so it names the model chosen.
"""
from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

from parlai_dialeval.analysis.keys import first_seen_codes

CATEGORIES = ("a", "b", "tie")
SCORE = {"a": 1.0, "tie": 0.0, "b": -1.0}
WEAK = ("allagree", "A/Bdis", "onedis", "alldis")


def worker_votes(comparisons: pd.DataFrame) -> pd.DataFrame:
    """The worker votes (automatic ties left out) with each model pair in one orientation (as first seen,
    pairwise.oriented) and ``choice`` read in it: a vote's category is the model chosen, whichever side
    the worker saw it on (an item shown A/B to one worker and B/A to another)."""
    from parlai_dialeval.analysis.pairwise import oriented

    votes = comparisons
    if "automatic" in votes:
        votes = votes[~votes["automatic"].eq(True)]
    frame = oriented(votes)
    choice = np.select([frame["score"] > 0, frame["score"] < 0], ["a", "b"], "tie")
    return frame.assign(model_a=frame["first"], model_b=frame["second"], choice=choice).drop(
        columns=["first", "second", "score", "auto"])


def item_keys(votes: pd.DataFrame) -> list[str]:
    """An item is an (item_id, turn_index) pair: PW-Turn votes are per turn, PW-Dialog votes (no
    turn_index) per item_id; a missing turn_index is a key of its own, so mixed data keep every item."""
    return ["item_id"] + (["turn_index"] if "turn_index" in votes else [])


def item_ids(votes: pd.DataFrame) -> pd.Series:
    """One integer per item (see item_keys), missing keys kept."""
    return pd.Series(first_seen_codes([votes[key] for key in item_keys(votes)]), index=votes.index)


def item_table(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Items x categories (a, b, tie): how many workers chose each, per item (see item_keys)."""
    return _tabulate(worker_votes(comparisons))


def _tabulate(votes: pd.DataFrame) -> pd.DataFrame:
    table = (votes.assign(choice=votes["choice"].astype(str))
             .groupby(item_keys(votes) + ["choice"], dropna=False, sort=False).size().unstack(fill_value=0))
    return table.reindex(columns=list(CATEGORIES), fill_value=0)


def fleiss_kappa(comparisons: pd.DataFrame) -> dict:
    """Fleiss' kappa over items with the most common number of votes (Fleiss' kappa needs a constant
    number per item), plus Krippendorff's alpha (nominal) over every item with two or more votes.
    ``vote_counts`` = {votes: items} over all items, so two-vote items are visible."""
    votes = worker_votes(comparisons)
    return _kappa_of(votes, _tabulate(votes))


def kappa_and_weak_agreement(comparisons: pd.DataFrame) -> tuple[dict, dict]:
    """fleiss_kappa's and weak_agreement's results from one reading of the votes (a report section shows both;
    each reading orients the votes anew, the most of a small study's agreement time)."""
    votes = worker_votes(comparisons)
    table = _tabulate(votes)
    return _kappa_of(votes, table), _weak_of(table)


def _kappa_of(votes: pd.DataFrame, table: pd.DataFrame) -> dict:
    n = table.sum(axis=1)
    counts = {int(k): int(v) for k, v in n.value_counts().sort_index().items()}
    table = table[n >= 2]
    if table.empty:
        return {"fleiss_kappa": np.nan, "items": 0, "votes_per_item": 0, "items_left_out": int(len(n)),
                "vote_counts": counts, "krippendorff_alpha": np.nan}
    modal = int(table.sum(axis=1).mode().max())
    equal = table[table.sum(axis=1) == modal]
    kappa = _fleiss(equal.to_numpy()) if len(equal) > 1 else np.nan
    return {"fleiss_kappa": float(kappa), "items": int(len(equal)), "votes_per_item": modal,
            "items_left_out": int(len(n) - len(equal)), "vote_counts": counts,
            "krippendorff_alpha": _alpha_of(votes)}


def nominal_alpha(comparisons: pd.DataFrame) -> float:
    """Krippendorff's alpha (nominal) of the worker votes over the items (see item_keys); nan below two items."""
    return _alpha_of(worker_votes(comparisons))


def _alpha_of(votes: pd.DataFrame) -> float:
    item = item_ids(votes)
    # Krippendorff's reliability data is raters x units; one row per vote slot within an item keeps
    # repeat votes by the same worker on the same item (ChatEval has them) instead of overwriting them.
    slot = item.groupby(item).cumcount()
    codes = votes["choice"].astype(str).map({c: i for i, c in enumerate(CATEGORIES)})
    matrix = pd.DataFrame({"slot": slot, "item": item, "code": codes}).pivot(index="slot", columns="item",
                                                                             values="code")
    if matrix.shape[1] < 2 or matrix.notna().sum().max() < 2:
        return float("nan")
    try:
        return float(krippendorff.alpha(reliability_data=matrix.to_numpy(dtype=float),
                                        level_of_measurement="nominal"))
    except ValueError:
        return float("nan")


def weak_agreement(comparisons: pd.DataFrame) -> dict:
    """Lee et al. 2020 (5.1, Tables 4-8) per item with two or more worker votes: allagree (all votes in
    one category), onedis (exactly two of a, b, tie chosen), alldis (all three chosen), so allagree +
    onedis + alldis = items; A/Bdis (votes for both A and B, no tie) is the part of onedis without ties."""
    return _weak_of(item_table(comparisons))


def _weak_of(table: pd.DataFrame) -> dict:
    table = table[table.sum(axis=1) >= 2]
    has = table > 0
    kinds = has.sum(axis=1)
    return {"allagree": int((kinds == 1).sum()), "A/Bdis": int((has["a"] & has["b"] & ~has["tie"]).sum()),
            "onedis": int((kinds == 2).sum()), "alldis": int((kinds == 3).sum()), "items": int(len(table))}


def annotator_correlations(comparisons: pd.DataFrame, min_items: int = 5) -> pd.DataFrame:
    """Per worker: Spearman rho between their choices (+1 A, 0 tie, -1 B) and the mean choice of the
    other workers on the same items (Lee Figure 1); ``negative`` flags rho < 0. Workers with fewer than
    ``min_items`` shared items get rho nan."""
    votes = worker_votes(comparisons)
    keys = item_keys(votes)
    frame = votes[keys + ["worker_id"]].copy()
    frame["score"] = votes["choice"].astype(str).map(SCORE).to_numpy()
    group = frame.groupby(keys, dropna=False)["score"]
    total, count = group.transform("sum"), group.transform("count")
    frame["others"] = (total - frame["score"]) / (count - 1).where(count > 1)
    frame = frame.dropna(subset=["others"])
    rows = []
    for worker, part in frame.groupby("worker_id"):
        enough = len(part) >= min_items and part["score"].nunique() > 1 and part["others"].nunique() > 1
        rho = stats.spearmanr(part["score"], part["others"]).statistic if enough else np.nan
        rows.append({"worker_id": worker, "items": len(part), "spearman": rho,
                     "negative": bool(rho < 0) if enough else False})
    return pd.DataFrame(rows, columns=["worker_id", "items", "spearman", "negative"])


def item_total_correlations(comparisons: pd.DataFrame, prompt_column: str = "context",
                            group_columns: tuple[str, ...] = ("study", "model_a", "model_b")) -> pd.DataFrame:
    """Prompt validity (Lee 5.2, Henrysson 1963): each prompt's corrected item-total correlation. A
    "test taker" is one comparison (one group of ``group_columns``), an item is a prompt scored by the
    mean worker choice (+1 A, 0 tie, -1 B); the total is the mean over the group's other prompts.
    A vote without a prompt text counts under its item_id. Hand-written: pingouin/statsmodels offer
    Cronbach's alpha but not per-item total correlations."""
    votes = worker_votes(comparisons)
    prompt = votes["item_id"]
    if prompt_column in votes:  # a vote without a prompt text is its own prompt, never dropped
        prompt = votes[prompt_column].where(votes[prompt_column].notna(), prompt)
    groups = [c for c in group_columns if c in votes and votes[c].notna().any()]
    # prompts as codes in sorted order: grouping and sorting a million prompt texts took 10 s of 14 (issue 56)
    codes, prompts = pd.factorize(prompt.astype(str).to_numpy(), sort=True)
    frame = pd.DataFrame({"prompt": codes,
                          "group": (votes.groupby(groups, dropna=False).ngroup() if groups
                                    else pd.Series(0, index=votes.index)).to_numpy(),
                          "score": votes["choice"].astype(str).map(SCORE).to_numpy()})
    # Long form, one row per (group, prompt) cell: the groups x prompts table was dense (200 models of
    # Arena battles, every battle its own prompt: 19,900 x 20,000 cells, 3 GB; issue 43).
    cells = frame.groupby(["group", "prompt"], sort=True)["score"].mean().reset_index()
    per_group = cells.groupby("group")["score"].agg(["sum", "count"])
    total = cells["group"].map(per_group["sum"])
    count = cells["group"].map(per_group["count"])
    present = cells[count > 1].assign(rest=(total - cells["score"]) / (count - 1))
    x, y = present["score"], present["rest"]
    sums = present.assign(xy=x * y, xx=x * x, yy=y * y).groupby("prompt").agg(
        n=("score", "size"), x=("score", "sum"), y=("rest", "sum"), xy=("xy", "sum"), xx=("xx", "sum"),
        yy=("yy", "sum"), x_low=("score", "min"), x_high=("score", "max"), y_low=("rest", "min"),
        y_high=("rest", "max"))
    ok = (sums["n"] >= 3) & (sums["x_high"] > sums["x_low"]) & (sums["y_high"] > sums["y_low"])  # two values or more
    n = sums["n"]
    r = (n * sums["xy"] - sums["x"] * sums["y"]) / np.sqrt((n * sums["xx"] - sums["x"] ** 2)
                                                           * (n * sums["yy"] - sums["y"] ** 2))
    out = pd.DataFrame({"prompt": prompts}, index=pd.RangeIndex(len(prompts)))
    out["comparisons"] = n.reindex(out.index).fillna(0).astype(int)
    out["mean_score"] = (sums["x"] / n).reindex(out.index)
    out["item_total_r"] = r.clip(-1, 1).where(ok).reindex(out.index)
    return out[["prompt", "comparisons", "mean_score", "item_total_r"]]
