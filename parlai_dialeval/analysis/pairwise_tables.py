"""analyze_pairwise's core tables: win rates, rankings and agreement per question and unit of judgement, from
the comparisons (onboarding left out, sections added), and their summary (results/sections/core.py makes them
the core section of a PairwiseResult). ``config``: alpha, correction, bootstrap_rounds, seed,
min_annotator_items, turns."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.analysis import pairwise
from parlai_dialeval.analysis.multiple_testing import adjust

SECTION = pairwise.SECTION
WIN_RATE_COLUMNS = SECTION + ["model_a", "model_b", "wins_a", "wins_b", "ties", "win_rate_a", "ci_low", "ci_high",
                              "p_value", "p_adjusted", "clusters", "clusters_won_a", "clusters_won_b",
                              "votes_per_cluster", "icc", "design_effect", "workers", "effective_workers", "p_two_way"]


def summary(comparisons: pd.DataFrame, tables: dict, config, automatic: int, onboarding: int) -> dict:
    """agreement.json's counts, policies, per-section agreement and annotators. ``comparisons`` without onboarding
    and with sections; ``automatic``: automatic ties among them, ``onboarding``: onboarding comparisons left out."""
    from parlai_dialeval.analysis import rankings

    return {
        "comparisons": int(len(comparisons)), "automatic_ties": automatic, "onboarding_excluded": onboarding,
        "tie_policy": {"win_rates": pairwise.TIE_POLICY, "rankings": rankings.TIE_POLICY},
        "correction": config.correction, "alpha": config.alpha,
        "sections": tables["agreement"].to_dict(orient="records"),
        "annotators": {"with_correlation": int(tables["annotators"]["spearman"].notna().sum()),
                       "negatively_correlated": int(tables["annotators"]["negative"].sum()),
                       "min_items": config.min_annotator_items},
    }


def sections(frame: pd.DataFrame):
    """(question, unit, part) per section, in first-seen order."""
    for (question, unit), part in frame.groupby(SECTION, sort=False, dropna=False):
        yield question, unit, part


def keyed(frame: pd.DataFrame, question: str, unit: str) -> pd.DataFrame:
    frame = frame.copy()
    frame.insert(0, "unit", unit)
    frame.insert(0, "question", question)
    return frame


def _agreement_row(votes: pd.DataFrame) -> dict:
    from parlai_dialeval.analysis import agreement

    fleiss, weak = agreement.kappa_and_weak_agreement(votes)
    return {"items": sum(fleiss["vote_counts"].values()),
            "votes_per_item": ", ".join(f"{n} vote{'s' * (n != 1)}: {k} item{'s' * (k != 1)}"
                                        for n, k in fleiss["vote_counts"].items()),
            "fleiss_kappa": fleiss["fleiss_kappa"], "kappa_items": fleiss["items"],
            "kappa_votes_per_item": fleiss["votes_per_item"], "items_left_out": fleiss["items_left_out"],
            "krippendorff_alpha": fleiss["krippendorff_alpha"],
            **{k: weak[k] for k in agreement.WEAK}, "weak_items": weak["items"]}


def _by_study(comparisons: pd.DataFrame, alpha: float) -> pd.DataFrame | None:
    if "study" not in comparisons or comparisons["study"].nunique(dropna=False) < 2:
        return None
    keys = SECTION + ["study"]
    rates = pairwise.win_rates(comparisons, by=keys, alpha=alpha)
    rows = [{**dict(zip(keys, key)), **_agreement_row(part)}
            for key, part in comparisons.groupby(keys, sort=False, dropna=False)]
    return rates.merge(pd.DataFrame(rows), on=keys, how="left")


def win_rate_table(comparisons: pd.DataFrame, alpha: float, correction: str) -> pd.DataFrame:
    """Win rates per section and model pair with p values adjusted for the number of pairs (what the verdict
    reads; ``dialeval publish`` states it in a dataset card without the rest of the analysis)."""
    rates = pairwise.win_rates(comparisons, by=SECTION, alpha=alpha)
    rates["p_adjusted"] = adjust(rates["p_value"], correction)
    return rates


def tables(comparisons: pd.DataFrame, config) -> dict:
    rates = win_rate_table(comparisons, config.alpha, config.correction)
    wmt = pairwise.wmt_scores(rates, by=SECTION)
    ranks, agree, annotators, items, per_conversation, per_turn, by_conversation = [], [], [], [], [], [], []
    from parlai_dialeval.analysis import agreement, rankings

    for question, unit, part in sections(comparisons):
        section_wmt = wmt[(wmt["question"] == question) & (wmt["unit"] == unit)]
        wins = pairwise.system_win_counts(section_wmt)
        ranks.append(keyed(rankings.rankings(part, rounds=config.bootstrap_rounds, seed=config.seed,
                                              win_counts=wins, progress=True, ci=1 - config.alpha), question, unit))
        agree.append({"question": question, "unit": unit, **_agreement_row(part)})
        annotators.append(keyed(agreement.annotator_correlations(part, config.min_annotator_items), question, unit))
        items.append(keyed(agreement.item_total_correlations(part), question, unit))
        if unit == "turn":
            per_conversation.append(keyed(pairwise.conversation_win_rates(part, config.turns), question, unit))
            per_turn.append(keyed(pairwise.win_rate_by_turn(part, config.alpha), question, unit))
            by_conversation.append(keyed(pairwise.conversation_tests(part, config.turns), question, unit))
    texts = pairwise.response_stats(comparisons)
    return {"win_rates": rates[WIN_RATE_COLUMNS + ["automatic_ties", "distinct_a", "distinct_b"]],
            "rankings": pd.concat(ranks, ignore_index=True), "agreement": pd.DataFrame(agree),
            "annotators": pd.concat(annotators, ignore_index=True), "items": pd.concat(items, ignore_index=True),
            "wmt_scores": wmt, "win_rates_by_study": _by_study(comparisons, config.alpha),
            "conversation_win_rates": pd.concat(per_conversation, ignore_index=True) if per_conversation else None,
            "win_rate_by_turn": pd.concat(per_turn, ignore_index=True) if per_turn else None,
            "conversation_tests": _adjusted(pd.concat(by_conversation, ignore_index=True), config)
            if by_conversation else None,
            "responses": texts if not texts.empty else None}


def _adjusted(tests: pd.DataFrame, config) -> pd.DataFrame:
    tests["p_conversations_adjusted"] = adjust(tests["p_conversations"], config.correction)
    return tests
