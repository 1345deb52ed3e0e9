"""The conclusion a report opens with, in words: who is better, by how much, how sure, and how many more
judgments would settle what is not settled yet (issue 40). Pure: result tables in, sentences out. Above
both the analyses and adaptive/ (whose planner sizes what is unsettled), below the commands."""
from __future__ import annotations

import math
import warnings

import pandas as pd

MAX_PAIRS = 6  # pairs named one by one; beyond, the verdict counts them (the tables list every one)
ITEMS_LIMIT = 1_000_000  # items beyond which "more items would settle it" is no longer a plan anyone can carry out


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _p(p: float) -> str:
    if not _finite(p):  # the sign test counts items won and lost: every item level leaves nothing to test
        return "no test: no item won by either"
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def more_items_needed(win_rate: float, tie_rate: float, votes_per_item: float, icc: float, items: int,
                      alpha: float, power: float = 0.8) -> int | None:
    """Items (prompts, conversations) beyond ``items`` for the sign test to reach ``power`` if the true win
    rate is the one seen (adaptive/planner.py's exact power on clustered votes); None where the models look
    equal (nothing to detect), more than ITEMS_LIMIT items would be needed (as good as equal), or one model won
    every decided vote (no power curve: the caller says so)."""
    from parlai_dialeval.adaptive.planner import Votes, fixed_items

    rate = max(win_rate, 1 - win_rate)
    if not math.isfinite(rate) or rate < 0.52 or rate >= 1:
        return None
    votes = Votes(rate, min(max(tie_rate, 0.0), 0.95), max(1, round(votes_per_item)),
                  min(max(icc if math.isfinite(icc) else 0.0, 0.0), 0.95))
    needed = fixed_items(votes, alpha, power, limit=ITEMS_LIMIT)
    return None if needed is None else max(0, needed - int(items))


def _fragile(losses: dict, row) -> str:
    """How few removals would lose a settled pair's significance (analysis/significance_loss.py), in words;
    ``losses``: its rows by (question, unit, model_a, model_b)."""
    loss = losses.get((row.question, row.unit, row.model_a, row.model_b))
    if loss is None or pd.isna(loss["votes_to_lose_significance"]):
        return ""
    text = (f"; it would no longer be significant if {int(loss['votes_to_lose_significance']):,} of "
            f"{int(loss['votes']):,} decided votes were removed")
    if pd.notna(loss["workers_to_lose_significance"]):
        text += (f" (or the votes of {'' if loss['workers_exact'] else 'at most '}"
                 f"{int(loss['workers_to_lose_significance']):,} of {int(loss['workers']):,} workers)")
    return text


def pairwise(rates: pd.DataFrame, alpha: float, losses: pd.DataFrame | None = None) -> list[str]:
    """One paragraph per question and unit of ``analyze_pairwise``'s win_rates table (p_adjusted decides);
    with ``losses`` (analysis/significance_loss.py) each settled pair says how few removals would unsettle it."""
    out = []
    by_pair: dict = {}  # each pair's (first) row of ``losses``: one lookup a pair, not a filter of the table
    if losses is not None:
        keys = losses[["question", "unit", "model_a", "model_b"]].itertuples(index=False, name=None)
        for key, loss in zip(keys, losses.to_dict(orient="records")):
            by_pair.setdefault(key, loss)
    for (question, unit), part in rates.groupby(["question", "unit"], sort=False):
        settled, open_ = [], []
        for row in part.itertuples():
            if not row.wins_a + row.wins_b:  # no win rate exists: every vote a tie
                open_.append(f"{row.model_a} and {row.model_b}: no decided vote yet ({row.ties:,} tie(s))")
                continue
            a_ahead = row.win_rate_a >= 0.5
            best, other = (row.model_a, row.model_b) if a_ahead else (row.model_b, row.model_a)
            rate = row.win_rate_a if a_ahead else 1 - row.win_rate_a
            low, high = (row.ci_low, row.ci_high) if a_ahead else (1 - row.ci_high, 1 - row.ci_low)
            said = (f"{best} over {other}: {_pct(rate)} of decided votes ({100 * (1 - alpha):g}% interval "
                    f"{_pct(low)}-{_pct(high)}, {_p(row.p_adjusted)})")
            if row.p_adjusted < alpha:
                settled.append((best, said + _fragile(by_pair, row)))
            elif len(open_) >= MAX_PAIRS:  # not named: the planner's search (tens of ms a pair) is skipped
                open_.append(said)
            else:
                decided = row.wins_a + row.wins_b
                if rate == 1:  # no plan from a win rate of 1, nor a sign of equal models: the items are too few
                    open_.append(said + f"; {best} won every decided vote, too few items yet to settle it")
                    continue
                more = more_items_needed(row.win_rate_a, row.ties / max(decided + row.ties, 1),
                                         row.votes_per_cluster, row.icc, row.clusters_won_a + row.clusters_won_b,
                                         alpha)
                open_.append(said + ("; the models look equal so far" if more is None else
                                     f"; about {more:,} more items would settle it if that rate holds" if more else
                                     # the items it has would reach alpha at that rate 8 times in 10 (the planner,
                                     # uncorrected), yet p (corrected) has not: chance or the correction, no count
                                     "; it already has the items that would settle it 8 times in 10 if that rate "
                                     "holds, yet has not settled: a few more items may"))
        head = f"{question} ({unit}): "
        if settled:
            beats = pd.Series([b for b, _ in settled]).value_counts()
            others = part[["model_a", "model_b"]].stack().nunique() - 1
            if beats.iloc[0] == others:
                head += f"{beats.index[0]} is better than every other model; "
            elif len(beats) == 1 or beats.iloc[0] > beats.iloc[1]:
                head += f"{beats.index[0]} leads, better than {beats.iloc[0]} of the {others} others; "
            head += f"{len(settled)} of {len(part)} pair(s) settled at {alpha:g}: "
            head += "; ".join(s for _, s in settled[:MAX_PAIRS]) + ("; ..." if len(settled) > MAX_PAIRS else "")
        else:
            head += f"no model is significantly better than another yet (none of {len(part)} pair(s) at {alpha:g})"
        if open_:
            head += ". Not settled: " + "; ".join(open_[:MAX_PAIRS]) + ("; ..." if len(open_) > MAX_PAIRS else "")
        out.append(head + ".")
    return out


def more_per_model(top: pd.Series, second: pd.Series, mean: str, sd: str, n: str, alpha: float,
                   power: float = 0.8) -> int | None:
    """Units per model beyond the larger of the two ``n`` for a t test to tell the two means apart with
    ``power`` if they and their SDs hold (adaptive/planner.py); None where the means are equal or no SD."""
    from parlai_dialeval.adaptive.planner import sm_dialog_per_model

    spread = math.sqrt((top[sd] ** 2 + second[sd] ** 2) / 2)
    if not (math.isfinite(spread) and spread > 0) or top[mean] == second[mean]:
        return None
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # its "returning nan" is answered below, in words: not a warning in a report
        warnings.simplefilter("ignore", ConvergenceWarning)
        needed = sm_dialog_per_model(top[mean], second[mean], spread, alpha, power)
    if not math.isfinite(needed):  # statsmodels' root finder did not converge (a huge effect, a tiny n): no claim
        return None
    return max(0, math.ceil(needed) - int(max(top[n], second[n])))


def _finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _interval(row: pd.Series, low: str, high: str, n: str | None, unit: str) -> str:
    """", 95% interval a to b", or why there is none (one unit, or no spread among them): never nan."""
    if _finite(row[low]) and _finite(row[high]):
        return f", 95% interval {row[low]:.2f} to {row[high]:.2f}"
    count = int(row[n]) if n and pd.notna(row[n]) else None
    if count is None:
        return "; no interval"
    if count < 2:
        return f"; no interval from {'one' if count else 'no'} {unit.removesuffix('s')}"
    return f"; no interval: its {count:,} {unit} scored alike"


def scores(table: pd.DataFrame, model: str, mean: str, low: str, high: str, what: str,
           significance: pd.DataFrame | None = None, alpha: float = 0.05, p: str = "p_adjusted",
           sd: str | None = None, n: str | None = None, unit: str = "conversations", why: str = "") -> str:
    """Best by ``mean`` with its interval, and whether it is significantly ahead of each other model
    (``significance``: model_a, model_b, one-sided ``p`` that a beats b); with ``sd`` and ``n``, how many
    more ``unit`` per model would settle the first two where they are not settled. ``why``: the reason no
    model has a score, where none has (said after the sentence that none has)."""
    ranked = table.dropna(subset=[mean]).sort_values(mean, ascending=False)
    if ranked.empty:
        return f"No model has a score for {what} yet" + (f": {why}." if why else ".")
    top = ranked.iloc[0]
    level = ranked[ranked[mean] == top[mean]]
    if len(level) > 1:  # a shared first place is said as one: no model is ahead of the others
        names = ", ".join(map(str, level[model]))
        text = f"Best {what}: {names} share first place ({top[mean]:.2f} each)"
        return text + ("; no model is significantly higher than the others" if len(ranked) > 1 else "") + "."
    text = f"Best {what}: {top[model]} ({top[mean]:.2f}{_interval(top, low, high, n, unit)})"
    if len(ranked) > 1:
        second = ranked.iloc[1]
        text += f", ahead of {second[model]} ({second[mean]:.2f}) by {top[mean] - second[mean]:.2f}"
    if significance is None or len(ranked) < 2:
        return text + "."
    mine = significance[significance["model_a"] == top[model]]
    beaten = mine.loc[mine[p] < alpha, "model_b"].tolist()
    others = len(ranked) - 1
    if len(beaten) == others:
        return text + f"; significantly higher than every other model ({p} < {alpha:g})."
    if beaten:
        text += (f"; significantly higher than {', '.join(map(str, beaten))} but not (yet) than the other "
                 f"{others - len(beaten)} model(s)")
    else:
        text += f"; not significantly higher than any other model yet ({p} >= {alpha:g})"
    rival = ranked[(ranked[model] != top[model]) & ~ranked[model].isin(beaten)].iloc[0]
    more = more_per_model(top, rival, mean, sd, n, alpha) if sd and n else None
    if more:
        text += f"; about {more:,} more {unit} per model would tell it from {rival[model]} if these means hold"
    elif more == 0:
        text += (f"; a plain t test at these means would need no more {unit}: what keeps it open is the "
                 "correction for multiple tests or the clustering of the test here")
    return text + "."


def directed(tests: pd.DataFrame, p: str = "p_adjusted") -> pd.DataFrame:
    """Two-sided tests of mean_a - mean_b as ``model_a`` (the higher) over ``model_b`` rows, for ``scores``."""
    higher = tests["diff"] > 0
    return pd.DataFrame({"model_a": tests["model_a"].where(higher, tests["model_b"]),
                         "model_b": tests["model_b"].where(higher, tests["model_a"]), p: tests[p]})


def single_model(likert: pd.DataFrame, success: pd.DataFrame, tests: pd.DataFrame, alpha: float,
                 turns: str) -> list[str]:
    """One paragraph for SM-Dialog's Likert means and one for SM-Turn's success rates (turns ``turns``), per
    criterion: best model, margin, interval, and whether the t tests (``p_adjusted``) settle it."""
    out = []
    for title, table, mean, low, high, technique, sd in (
            ("SM-Dialog (Likert)", likert, "mean", "ci_low", "ci_high", "sm_dialog likert", "sd"),
            (f"SM-Turn (share of good responses, turns {turns})", success[success["turns"] == turns], "lin",
             "lin_ci_low", "lin_ci_high", f"sm_turn linear (turns {turns})", None)):
        if table.empty:
            continue
        said = []
        for criterion, part in table.groupby("criterion", sort=True):
            mine = tests[(tests["technique"] == technique) & (tests["criterion"] == criterion) & tests["p"].notna()]
            said.append(scores(part, "model", mean, low, high, criterion, directed(mine), alpha, sd=sd,
                               n="n" if sd else None))
        out.append(f"{title}: " + " ".join(said))
    return out


def scales(icc: pd.DataFrame) -> list[str]:
    """Per criterion, the most reliable design by ICC(A,1) (absolute agreement of single raters) over all
    workers, with the runner-up; point estimates (the analysis tests each ICC against 0, not two designs
    against each other, and says so)."""
    rows = icc[(icc["workers"] == "all") & icc["icc_a"].notna()]
    out = []
    for criterion, part in rows.groupby("criterion", sort=True):
        ranked = part.sort_values("icc_a", ascending=False)
        top = ranked.iloc[0]
        text = f"{criterion}: most reliable design {top['design']} (ICC(A,1) {top['icc_a']:.2f}"
        text += f", p {top['icc_a_p']:.2g} against 0)" if pd.notna(top.get("icc_a_p")) else ")"
        if len(ranked) > 1:
            second = ranked.iloc[1]
            text += f", ahead of {second['design']} ({second['icc_a']:.2f}) by {top['icc_a'] - second['icc_a']:.2f}"
        out.append(text)
    if not out:
        return ["No design has an ICC yet (each needs items rated by the same two or more workers)."]
    return ["; ".join(out) + ". These are point estimates from one sample of items and workers: no test of the "
            "difference between designs is made."]
