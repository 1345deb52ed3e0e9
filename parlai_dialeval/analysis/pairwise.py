"""Pairwise (A/B) comparison statistics: win counts, win rates with Wilson intervals and binomial
tests, per-conversation squared and winner-takes-all win rates (Smith et al. 2022, 4.2), win rate per
turn (Figure 5 / Table 4), WMT major/distinct scores and system win counts (Lee et al. 2020, 2.2) and
response diversity per model (Lee 5.4). Pure functions: DataFrames in, DataFrames out.

Conventions: a model pair is oriented as it first appears in the data (model_a = the first model
shown as option A); ``wins_a``/``wins_b`` count worker choices, ``ties`` worker ties and
``automatic_ties`` ties decided without a worker (identical responses), which never enter win rates or
tests. The binomial test excludes ties (TIE_POLICY).
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from parlai_dialeval.analysis.bradley_terry import model_codes
from parlai_dialeval.analysis.keys import first_seen_codes
from parlai_dialeval.data.schema import VOIDED
from parlai_dialeval.metrics.distinct import distinct_counts

# Every pairwise statistic is computed per question and per unit of judgement: votes on different
# questions (Smith et al.'s engagingness, humanness, ...) or units must never be pooled.
SECTION = ["question", "unit"]
NO_QUESTION = "(question not recorded)"
TIE_POLICY = ("ties (worker and automatic) are excluded from win rates, Wilson intervals and the "
              "two-sided binomial test (p = 0.5 over wins_a + wins_b); they are reported as counts")


def wilson_ci(successes, n, alpha: float = 0.05):
    """Wilson score interval(s) for successes out of n; nan where n is 0. Arrays or scalars."""
    successes, n = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    safe = np.where(n > 0, n, 1)
    from statsmodels.stats.proportion import proportion_confint  # imported here: commands' --help stays fast

    low, high = proportion_confint(successes, safe, alpha=alpha, method="wilson")
    return np.where(n > 0, low, np.nan), np.where(n > 0, high, np.nan)


def binomial_p(wins, losses) -> float:
    """Two-sided exact binomial test of wins vs losses against p = 0.5 (ties already excluded)."""
    return float(binomial_ps([wins], [losses])[0])


def binomial_ps(wins, losses) -> np.ndarray:
    """``binomial_p`` of every (wins, losses) at once: scipy's binomtest, which takes one count at a time
    (4.7 s for 4,950 model pairs, issue 43), computed as it does: at p = 0.5 the terms as unlikely as
    ``wins`` on the other side of the mode start at ``decided - wins``, the point its binary search finds;
    where the pmf does not fall strictly there (a tie at binomtest's 1e-7 tolerance, underflow), binomtest
    itself is called."""
    from scipy import stats  # imported here: commands' --help stays fast

    wins, losses = np.asarray(wins, dtype=np.int64), np.asarray(losses, dtype=np.int64)
    n = wins + losses
    low = np.minimum(wins, losses)  # the tail binomtest sums from k; the other ends at n - k
    d = stats.binom.pmf(low, n, 0.5) * (1 + 1e-7)  # binomtest's tolerance
    # The other side's terms below d start at n - low; binomtest's search lands there where the pmf
    # crosses d strictly between n - low - 1 and n - low.
    strict = (stats.binom.pmf(n - low - 1, n, 0.5) > d) & (stats.binom.pmf(n - low, n, 0.5) < d)
    p = np.minimum(1.0, stats.binom.cdf(low, n, 0.5) + stats.binom.sf(n - low - 1, n, 0.5))
    p = np.where(2 * low == n, 1.0, p)
    for i in np.flatnonzero(~strict & (2 * low != n)):
        p[i] = _binomtest_p(int(wins[i]), int(n[i]))
    return np.where(n > 0, p, np.nan)


@functools.lru_cache(maxsize=2 ** 16)
def _binomtest_p(wins: int, n: int) -> float:
    """scipy's two-sided binomtest at 0.5, kept: the significance-loss search asks for the same near-even splits
    (an odd count split k to k + 1) thousands of times."""
    from scipy import stats

    return stats.binomtest(wins, n, 0.5, alternative="two-sided").pvalue


def split_voided(comparisons: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """(comparisons without the votes the collection kept and marked as void, how many were left out for each
    reason of data.schema.VOIDED)."""
    drop = pd.Series(False, index=comparisons.index)
    counts = {}
    for column, reason in VOIDED.items():
        if column in comparisons:
            marked = comparisons[column].eq(True) & ~drop
            if marked.any():
                counts[reason] = int(marked.sum())
                drop |= marked
    return (comparisons[~drop], counts) if counts else (comparisons, counts)


def both_bad_counts(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Worker ties per question, unit and model pair (names in sorted order), and how many of them the worker
    called "both bad" (``tie_kind``); ``comparisons`` with sections."""
    worker = comparisons["choice"].eq("tie")
    if "automatic" in comparisons:
        worker &= ~comparisons["automatic"].eq(True)
    ties = comparisons[worker]
    low = np.minimum(ties["model_a"].astype(str), ties["model_b"].astype(str))
    high = np.maximum(ties["model_a"].astype(str), ties["model_b"].astype(str))
    both_bad = ties["tie_kind"].eq("both_bad") if "tie_kind" in ties else pd.Series(False, index=ties.index)
    frame = pd.DataFrame({"question": ties["question"], "unit": ties["unit"], "model_a": low, "model_b": high,
                          "ties": 1, "both_bad": both_bad.astype(int)})
    return frame.groupby(SECTION + ["model_a", "model_b"], sort=False, as_index=False)[["ties", "both_bad"]].sum()


def split_onboarding(comparisons: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """(comparisons without onboarding items, how many onboarding comparisons were set aside). Answers to check
    items (attention, gold: docs/data_model.md) go too, uncounted here: ``load_data`` sets them aside and says so,
    and a caller with records of its own (adaptive collection) must not take them for votes either."""
    onboarding = comparisons["onboarding"].eq(True) if "onboarding" in comparisons else None
    if "check" in comparisons and comparisons["check"].notna().any():
        comparisons = comparisons[comparisons["check"].isna()]
        onboarding = onboarding[comparisons.index] if onboarding is not None else None
    if onboarding is None or not onboarding.any():
        return comparisons, 0
    return comparisons[~onboarding], int(onboarding.sum())


def with_sections(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Comparisons with ``question`` (missing or blank: NO_QUESTION) and ``unit``: ``turn`` (PW-Turn:
    one vote per bot turn, ``turn_index`` set), ``dialog`` (PW-Dialog/ACUTE: whole conversations,
    ``conversation_a`` set) or ``response`` (A/B next utterance)."""
    frame = comparisons.reset_index(drop=True)
    question = frame["question"] if "question" in frame else pd.Series(np.nan, index=frame.index, dtype=object)
    blank = question.isna() | question.astype(str).str.strip().eq("")
    turn = frame["turn_index"].notna() if "turn_index" in frame else pd.Series(False, index=frame.index)
    dialog = frame["conversation_a"].notna() if "conversation_a" in frame else pd.Series(False, index=frame.index)
    unit = np.select([turn.to_numpy(), dialog.to_numpy()], ["turn", "dialog"], "response")
    return frame.assign(question=question.astype(object).where(~blank, NO_QUESTION), unit=unit)


def group_ids(frame: pd.DataFrame, by: list[str] | None) -> pd.Series:
    """One integer per distinct combination of ``by`` (missing values are a key of their own, never
    dropped); 0 for every row when ``by`` is empty."""
    if not by:
        return pd.Series(0, index=frame.index)
    return pd.Series(first_seen_codes([frame[column] for column in by]), index=frame.index)


def oriented(comparisons: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Comparisons with ``first``/``second`` (the pair in first-seen orientation, per group of ``by``),
    ``score`` (+1 when ``first`` was chosen, -1 for ``second``, 0 for a tie) and a boolean ``auto``."""
    frame = comparisons.reset_index(drop=True)
    a, b, names = model_codes(frame)
    codes = first_seen_codes([group_ids(frame, by).to_numpy(), np.minimum(a, b), np.maximum(a, b)])
    _, first_row = np.unique(codes, return_index=True)  # the row where each pair is first seen
    first = a[first_row[codes]]
    flipped = a != first
    choice, kinds = pd.factorize(frame["choice"].astype(str), use_na_sentinel=False)
    score = np.select([kinds == "a", kinds == "b"], [1, -1], 0)[choice]
    score = np.where(flipped, -score, score)
    auto = frame["automatic"].eq(True).to_numpy() if "automatic" in frame else np.zeros(len(frame), bool)
    return frame.assign(first=names[first], second=names[np.where(flipped, a, b)], score=score, auto=auto)


def _count_table(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    worker = ~frame["auto"]
    counts = frame.assign(
        wins_a=(worker & (frame["score"] > 0)).astype(int), wins_b=(worker & (frame["score"] < 0)).astype(int),
        ties=(worker & (frame["score"] == 0)).astype(int), automatic_ties=frame["auto"].astype(int),
    ).groupby(keys, sort=False, dropna=False)[["wins_a", "wins_b", "ties", "automatic_ties"]].sum().reset_index()
    return counts.rename(columns={"first": "model_a", "second": "model_b"})


def add_rates(counts: pd.DataFrame, alpha: float = 0.05, clusters: pd.DataFrame | None = None) -> pd.DataFrame:
    """Linear win rate of model_a, Wilson CI, binomial p, and Lee's WMT major/distinct scores. With
    ``clusters`` (from ``cluster_counts``, same rows) the interval and test allow for votes clustered on
    one item: the Wilson interval over the effective number of decided votes (decided / design effect,
    Kish's effective sample size) and the exact binomial (sign) test over clusters won vs lost. Where
    every cluster is one vote both equal the plain vote-level versions."""
    counts = counts.copy()
    decided = counts["wins_a"] + counts["wins_b"]
    all_ties = counts["ties"] + counts["automatic_ties"]
    counts["win_rate_a"] = np.where(decided > 0, counts["wins_a"] / decided.where(decided > 0), np.nan)
    if clusters is None:
        counts["ci_low"], counts["ci_high"] = wilson_ci(counts["wins_a"], decided, alpha)
        counts["p_value"] = binomial_ps(counts["wins_a"], counts["wins_b"])
    else:
        for column in CLUSTER_COLUMNS:
            counts[column] = clusters[column].to_numpy()
        effective = decided / counts["design_effect"].fillna(1.0)
        counts["ci_low"], counts["ci_high"] = wilson_ci(counts["win_rate_a"].fillna(0) * effective, effective, alpha)
        counts["p_value"] = binomial_ps(counts["clusters_won_a"], counts["clusters_won_b"])
    total = decided + all_ties
    counts["distinct_a"] = counts["wins_a"] / total.where(total > 0)
    counts["distinct_b"] = counts["wins_b"] / total.where(total > 0)
    return counts


CLUSTER_COLUMNS = ["clusters", "clusters_won_a", "clusters_won_b", "votes_per_cluster", "icc", "design_effect",
                   "workers", "effective_workers", "p_two_way"]


def cluster_counts(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per ``keys`` group of an ``oriented`` frame with ``unit`` (the rows of ``_count_table``, same
    order): the clusters of decided votes (parlai_dialeval.analysis.cluster_robust's rule: the votes on one
    item), those won and lost by model_a (more decided votes one way), the mean decided votes per
    cluster, the ICC of decided votes within clusters, the design effect (floored at 1), the workers of
    the decided votes, how many equal workers they count as (``effective_workers``, Kish: a few who gave most
    votes count as few) and ``p_two_way``, the test clustered by item and by worker (cluster_robust.two_way_p)."""
    from parlai_dialeval.analysis.cluster_robust import (cluster_cells, cluster_ids, clustering_summaries,
                                                         effective_clusters, two_way_ps)

    group = first_seen_codes([frame[key] for key in keys])  # _count_table's row order
    groups = int(group.max()) + 1 if len(group) else 0
    decided = (~frame["auto"] & (frame["score"] != 0)).to_numpy()
    part_of = frame.loc[decided, [c for c in ("item_id", "context", "unit", "worker_id", "score") if c in frame]]
    number, won = group[decided], (part_of["score"] > 0).to_numpy(dtype=float)
    cluster = pd.factorize(cluster_ids(part_of))[0]  # codes: factorised again below, faster than strings
    # Every group at once, from sums per (group, cluster) and (group, worker): a pandas aggregation per
    # model pair took 23 s of analyze_pairwise on 100,000 votes (issue 43).
    cell, owner = cluster_cells(number, cluster)
    margin = 2 * np.bincount(cell, won) - np.bincount(cell)
    workers = part_of["worker_id"] if "worker_id" in part_of else pd.Series(None, index=part_of.index, dtype=object)
    worker = pd.factorize(workers.to_numpy(dtype=object))[0]
    named = worker >= 0
    span = worker.max(initial=-1) + 1
    pairs = pd.unique(number[named] * span + worker[named])  # (group, worker) pairs
    out = clustering_summaries(number, won, cluster, groups).assign(
        clusters_won_a=np.bincount(owner, margin > 0, groups).astype(int),
        clusters_won_b=np.bincount(owner, margin < 0, groups).astype(int),
        workers=np.bincount(pairs // max(span, 1), minlength=groups),
        effective_workers=effective_clusters(number, workers.to_numpy(dtype=object), groups), p_two_way=np.nan)
    if len(number):
        p_two_way = two_way_ps(number, won, cluster, workers)
        out.loc[:len(p_two_way) - 1, "p_two_way"] = p_two_way
    return out[CLUSTER_COLUMNS]


def win_rates(comparisons: pd.DataFrame, by: list[str] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Per model pair (and per ``by`` columns, e.g. ``["study"]``): wins_a, wins_b, ties,
    automatic_ties, win_rate_a (linear: wins_a / (wins_a + wins_b); = Lee's major score), the clusters
    of votes (votes on one item: CLUSTER_COLUMNS, with ICC and design effect), Wilson ci_low/ci_high
    over the effective decided votes, two-sided binomial p_value over clusters won and lost (ties
    excluded), distinct_a/distinct_b (Lee's distinct scores, ties included)."""
    frame = comparisons if "unit" in comparisons else with_sections(comparisons)
    frame = oriented(frame, by)
    keys = (by or []) + ["first", "second"]
    counts = _count_table(frame, keys)
    return add_rates(counts, alpha, cluster_counts(frame, keys))


def turn_numbers(frame: pd.DataFrame) -> pd.Series:
    """1-based position of each comparison's turn among the compared turns of its conversation (Smith's
    "Bot Speaker turn"), from the order of ``turn_index`` within ``item_id``."""
    return frame.groupby("item_id")["turn_index"].rank(method="dense").astype(int)


def _select_turns(frame: pd.DataFrame, turns: tuple[int, int] | None) -> pd.DataFrame:
    frame = frame[frame["turn_index"].notna()].copy()
    frame["turn_number"] = turn_numbers(frame) if len(frame) else pd.Series(dtype=int)
    if turns is not None:
        frame = frame[frame["turn_number"].between(*turns)]
    return frame


def conversation_win_rates(comparisons: pd.DataFrame, turns: tuple[int, int] | None = None) -> pd.DataFrame:
    """PW-Turn aggregates per model pair over conversations (Smith et al. 2022, Table 1): with x and y
    the turns model_a and model_b won in a conversation, ``linear`` = sum x / sum (x + y),
    ``squared`` = mean x^2/(x^2+y^2) and ``wta`` = mean of 1 (x > y), 0.5 (x = y), 0 (x < y), the limit
    of x^p/(x^p+y^p); conversations with no decided turn are left out of squared and wta.
    ``turns`` (inclusive, 1-based Bot Speaker turns) restricts the turns used, e.g. (2, 6)."""
    frame = _select_turns(oriented(comparisons), turns)
    frame = frame[~frame["auto"]]
    per_conv = frame.assign(x=(frame["score"] > 0).astype(int), y=(frame["score"] < 0).astype(int)).groupby(
        ["first", "second", "item_id"], sort=False)[["x", "y"]].sum().reset_index()
    per_conv = per_conv[(per_conv["x"] + per_conv["y"]) > 0]
    x, y = per_conv["x"].to_numpy(float), per_conv["y"].to_numpy(float)
    per_conv["squared"] = x ** 2 / (x ** 2 + y ** 2)
    per_conv["wta"] = np.sign(x - y) / 2 + 0.5
    out = per_conv.groupby(["first", "second"], sort=False).agg(
        conversations=("item_id", "size"), x=("x", "sum"), y=("y", "sum"), squared=("squared", "mean"),
        wta=("wta", "mean")).reset_index()
    out["linear"] = out["x"] / (out["x"] + out["y"])
    return out.rename(columns={"first": "model_a", "second": "model_b", "x": "wins_a", "y": "wins_b"})[
        ["model_a", "model_b", "conversations", "wins_a", "wins_b", "linear", "squared", "wta"]]


CONVERSATION_TEST_COLUMNS = ["model_a", "model_b", "conversations", "conversations_won_a", "conversations_won_b",
                             "conversations_tied", "p_conversations", "turns_decided", "p_turns",
                             "icc_within_conversation", "design_effect", "per_turn_test_doubtful"]


def conversation_tests(comparisons: pd.DataFrame, turns: tuple[int, int] | None = None) -> pd.DataFrame:
    """PW-Turn tested by conversation beside the per-turn binomial test (``cluster_robust`` says why): per
    model pair, conversations won (more turns won than lost), lost and tied, a two-sided binomial
    (sign) test over the decided conversations, the per-turn test on the same turns, the intraclass
    correlation of turn outcomes within conversations, the design effect, and whether the per-turn
    test's independence assumption is doubtful."""
    from parlai_dialeval.analysis.cluster_robust import DOUBTFUL_ICC, design_effect, icc_oneway, weighted_size

    frame = _select_turns(oriented(comparisons), turns)
    frame = frame[~frame["auto"]]  # worker ties stay: a conversation of tied turns is a tied conversation
    rows = []
    for (first, second), pair in frame.groupby(["first", "second"], sort=False):
        decided = pair[pair["score"] != 0]
        won = (decided["score"] > 0).astype(float)
        per_conv = pair.assign(x=pair["score"] > 0, y=pair["score"] < 0).groupby("item_id", sort=False)[
            ["x", "y"]].sum()
        x, y = per_conv["x"], per_conv["y"]
        wins, losses = int((x > y).sum()), int((x < y).sum())
        icc = icc_oneway(won.to_numpy(), decided["item_id"].to_numpy())
        decided_per_conv = (x + y)[(x + y) > 0]
        rows.append({"model_a": first, "model_b": second, "conversations": len(per_conv),
                     "conversations_won_a": wins, "conversations_won_b": losses,
                     "conversations_tied": int((x == y).sum()),
                     "p_conversations": binomial_p(wins, losses),
                     "turns_decided": len(decided),
                     "p_turns": binomial_p(int(won.sum()), int(len(won) - won.sum())),
                     "icc_within_conversation": icc,
                     "design_effect": design_effect(icc, weighted_size(decided_per_conv)) if len(decided_per_conv) else np.nan,
                     "per_turn_test_doubtful": bool(np.isfinite(icc) and icc > DOUBTFUL_ICC)})
    return pd.DataFrame(rows, columns=CONVERSATION_TEST_COLUMNS)


def win_rate_by_turn(comparisons: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Win rate of model_a per Bot Speaker turn number (Smith et al. 2022, Figure 5 / Table 4)."""
    frame = _select_turns(oriented(comparisons), None)
    if frame.empty:
        return pd.DataFrame(columns=["model_a", "model_b", "turn_number", "wins_a", "wins_b", "ties",
                                     "automatic_ties", "win_rate_a", "ci_low", "ci_high", "p_value"])
    counts = _count_table(frame, ["first", "second", "turn_number"])
    return add_rates(counts, alpha).drop(columns=["distinct_a", "distinct_b"])


def wmt_scores(rates: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Per ordered (model, opponent): Lee 2.2's major and distinct scores for wins and losses, both
    orientations of every pair, from a ``win_rates`` table (``by`` columns carried over)."""
    by = list(by or [])
    rows = []
    for r in rates.to_dict("records"):
        total = r["wins_a"] + r["wins_b"] + r["ties"] + r["automatic_ties"]
        decided = r["wins_a"] + r["wins_b"]
        for model, opponent, win, loss in ((r["model_a"], r["model_b"], r["wins_a"], r["wins_b"]),
                                           (r["model_b"], r["model_a"], r["wins_b"], r["wins_a"])):
            rows.append({**{k: r[k] for k in by}, "model": model, "opponent": opponent, "wins": win,
                         "losses": loss, "ties": r["ties"] + r["automatic_ties"],
                         "major_win": win / decided if decided else np.nan,
                         "major_loss": loss / decided if decided else np.nan,
                         "distinct_win": win / total if total else np.nan,
                         "distinct_loss": loss / total if total else np.nan})
    return pd.DataFrame(rows, columns=by + ["model", "opponent", "wins", "losses", "ties", "major_win",
                                            "major_loss", "distinct_win", "distinct_loss"])


def system_win_counts(wmt: pd.DataFrame) -> pd.Series:
    """Lee 2.2: a system's win count is the number of opponents it beats (major score above 0.5)."""
    wins = wmt.assign(beat=wmt["major_win"] > 0.5).groupby("model")["beat"].sum().astype(int)
    return wins.sort_values(ascending=False, kind="stable")


def heatmap_matrices(wmt: pd.DataFrame, order: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(major, distinct) win-score matrices, rows = winner, columns = loser (Lee Figure 2)."""
    order = order or list(system_win_counts(wmt).index)
    major = wmt.pivot_table(index="model", columns="opponent", values="major_win").reindex(index=order,
                                                                                          columns=order)
    distinct = wmt.pivot_table(index="model", columns="opponent", values="distinct_win").reindex(
        index=order, columns=order)
    return major, distinct


def response_stats(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Per model: distinct-1, distinct-2 (Lee 5.4's definition: unique n-grams divided by the total number
    of tokens, not of n-grams) and mean length in tokens of its responses (Lee 5.4), each response counted
    once per prompt (the same response is shown to several workers)."""
    rows = []
    for side in ("a", "b"):
        if f"response_{side}" not in comparisons:
            continue
        part = comparisons[comparisons[f"response_{side}"].notna()]
        prompt = part["item_id"].astype(str)
        if "context" in part:
            prompt = part["context"].astype(str).where(part["context"].notna(), prompt)
        rows.append(pd.DataFrame({"model": part[f"model_{side}"].astype(str), "prompt": prompt,
                                  "text": part[f"response_{side}"].astype(str)}))
    columns = ["model", "responses", "distinct_1", "distinct_2", "mean_length"]
    if not rows:
        return pd.DataFrame(columns=columns)
    texts = pd.concat(rows, ignore_index=True)
    code, models = pd.factorize(texts["model"], sort=True)
    prompt = pd.factorize(texts["prompt"])[0]
    first = ~pd.Series(code * (prompt.max(initial=0) + 1) + prompt).duplicated().to_numpy()  # per model and prompt
    model = code[first]
    text = texts["text"][first]
    out = pd.DataFrame({"model": list(models), "responses": np.bincount(model, minlength=len(models))})
    for n in (1, 2):
        unique, grams, tokens = distinct_counts(text, model, n, len(models))
        with np.errstate(divide="ignore", invalid="ignore"):  # no n-grams or tokens: NaN
            out[f"distinct_{n}"] = np.where(tokens > 0, unique / grams * grams / tokens, np.nan)
    out["mean_length"] = tokens / out["responses"]
    return out[columns]
