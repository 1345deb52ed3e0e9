"""analyze_single_model's core tables: SM-Turn success rates, SM-Dialog Likert summaries, t-tests between
models with a multiple-comparison correction, effective win rates and weighted combinations
(results/sections/single_model_core.py makes them the core section of a SingleModelResult). ``config``:
alpha, correction, n_boot, seed, sm_turns, weights."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.analysis import single_model as sm
from parlai_dialeval.analysis.multiple_testing import adjust


def tables(turn: pd.DataFrame, dialog: pd.DataFrame, config, pairs, label: str) -> dict:
    """``turn``/``dialog``: SM-Turn and SM-Dialog ratings; ``pairs``: the model pairs to test; ``label``:
    the selected turns in words."""
    subset = sm.select_turns(turn, config.sm_turns)
    alpha, n_boot, seed = config.alpha, config.n_boot, config.seed
    results = {"success_rates": pd.concat([sm.success_rates(turn, alpha).assign(turns="all"),
                                           sm.success_rates(subset, alpha).assign(turns=label)])}
    results["per_turn"] = sm.per_turn_table(turn)
    results["likert"] = sm.likert_summary(dialog, alpha)
    subset_conv = sm.per_conversation_success(subset)
    dialog_conv = sm.per_conversation_likert(dialog)  # several raters of one conversation: one score
    tests = pd.concat([
        sm.ttests(subset_conv, pairs, value="success", alpha=alpha).assign(
            technique=f"sm_turn linear (turns {label})"),
        sm.ttests(subset_conv, pairs, value="wta", alpha=alpha).assign(technique=f"sm_turn wta (turns {label})"),
        sm.ttests(dialog_conv, pairs, alpha=alpha).assign(technique="sm_dialog likert")],
        ignore_index=True)
    tests["p_adjusted"] = adjust(tests["p"], config.correction)
    results["ttests"] = tests
    results["effective_win_rates"] = pd.concat([
        sm.effective_win_rates(subset_conv, pairs, value="wta", n_boot=n_boot, seed=seed)
        .assign(technique=f"sm_turn wta (turns {label})"),
        sm.effective_win_rates(dialog_conv, pairs, n_boot=n_boot, seed=seed).assign(technique="sm_dialog likert")])
    combos = []
    if not subset.empty and not dialog.empty:
        for w_turn, w_dialog in config.weights:
            scores = sm.combined_scores(subset, dialog, w_turn, w_dialog)
            tested = sm.ttests(scores, pairs, alpha=alpha)
            wins = sm.effective_win_rates(scores, pairs, n_boot=n_boot, seed=seed)
            merged = tested.merge(wins[["criterion", "model_a", "model_b", "win_rate_a"]],
                                  on=["criterion", "model_a", "model_b"], how="outer")
            combos.append(merged.assign(weights=f"{w_turn:g}:{w_dialog:g}"))
    results["combination"] = pd.concat(combos) if combos else pd.DataFrame()
    return results
