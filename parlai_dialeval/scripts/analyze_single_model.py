"""dialeval analyze_single_model: SM-Turn and SM-Dialog analysis (Smith et al. 2022, 4.3, 4.4.1, App. G).

CLI glue only: the statistics live in parlai_dialeval.analysis.single_model. See docs/single_model_analysis.md.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.analysis import single_model as sm
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.report import Report
from parlai_dialeval.utils.worker_check_option import (add_worker_checks_arg, report_worker_checks,
                                                       run_worker_checks, worker_checks_text)
from parlai_dialeval.utils.script_args import add_data_args, load_data, write_csv


def parse_turns(text: str | None) -> tuple[int, int] | None:
    """'3-6' -> (3, 6); 'all' or empty -> None (every turn)."""
    if not text or text == "all":
        return None
    try:
        first, last = (int(x) for x in text.split("-"))
    except ValueError:
        raise DialevalError(f"turn range '{text}': expected FIRST-LAST, e.g. 3-6, or 'all'") from None
    if not 1 <= first <= last:
        raise DialevalError(f"turn range '{text}': expected 1 <= FIRST <= LAST")
    return first, last


def parse_weights(text: str) -> list[tuple[float, float]]:
    """'1:0,1:5' -> [(1, 0), (1, 5)] (SM-Turn : SM-Dialog)."""
    try:
        weights = [tuple(float(x) for x in part.split(":")) for part in text.split(",")]
    except ValueError:
        raise DialevalError(f"weights '{text}': expected TURN:DIALOG pairs separated by commas") from None
    if any(len(w) != 2 or min(w) < 0 or sum(w) == 0 for w in weights):
        raise DialevalError(f"weights '{text}': each pair needs two non-negative numbers, not both 0")
    return weights


def _weights_text(weights) -> str:
    return ",".join(f"{a:g}:{b:g}" for a, b in weights)


def analyze(data, out: Path, turns=sm.DEFAULT_SM_TURNS, reference=None, n_boot=1000, seed=0,
            weights=sm.DEFAULT_WEIGHTS, worker_checks="report") -> dict:
    data, checks = run_worker_checks(data, worker_checks)
    turn = sm.sm_turn_ratings(data.ratings)
    dialog = sm.sm_dialog_ratings(data.ratings)
    if turn.empty and dialog.empty:
        raise DialevalError("no SM-Turn (binary, per-turn) or SM-Dialog (Likert) ratings of engaging / humanlike / "
                            "interesting in the data; see docs/single_model_analysis.md for the conventions")
    models = set(turn["model"]) | set(dialog["model"])
    if reference is not None and reference not in models:
        raise DialevalError(f"--reference '{reference}' has no SM ratings; models: {', '.join(sorted(models))}")
    pairs = sm.model_pairs(models, reference)
    subset = sm.select_turns(turn, turns)
    label = "all" if turns is None else f"{turns[0]}-{turns[1]}"
    results = {}
    rates = pd.concat([sm.success_rates(turn).assign(turns="all"), sm.success_rates(subset).assign(turns=label)])
    results["success_rates"] = rates
    results["per_turn"] = sm.per_turn_table(turn)
    results["likert"] = sm.likert_summary(dialog)
    subset_conv = sm.per_conversation_success(subset)
    results["ttests"] = pd.concat([
        sm.ttests(subset, pairs).assign(technique=f"sm_turn linear (turns {label})"),
        sm.ttests(subset_conv, pairs, value="wta").assign(technique=f"sm_turn wta (turns {label})"),
        sm.ttests(dialog, pairs).assign(technique="sm_dialog likert")])
    results["effective_win_rates"] = pd.concat([
        sm.effective_win_rates(subset_conv, pairs, value="wta", n_boot=n_boot, seed=seed)
        .assign(technique=f"sm_turn wta (turns {label})"),
        sm.effective_win_rates(dialog, pairs, n_boot=n_boot, seed=seed).assign(technique="sm_dialog likert")])
    combos = []
    if not subset.empty and not dialog.empty:
        for w_turn, w_dialog in weights:
            scores = sm.combined_scores(subset, dialog, w_turn, w_dialog)
            tests = sm.ttests(scores, pairs)
            wins = sm.effective_win_rates(scores, pairs, n_boot=n_boot, seed=seed)
            merged = tests.merge(wins[["criterion", "model_a", "model_b", "win_rate_a"]],
                                 on=["criterion", "model_a", "model_b"], how="outer")
            combos.append(merged.assign(weights=f"{w_turn:g}:{w_dialog:g}"))
    results["combination"] = pd.concat(combos) if combos else pd.DataFrame()
    if checks is not None:
        results["worker_checks"] = checks
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in results.items():
        write_csv(frame, out / f"{name}.csv")
    _report(results, out, turn, dialog, label, n_boot, weights, worker_checks)
    return results


def _report(results, out, turn, dialog, label, n_boot, weights, worker_checks) -> None:
    report = Report("Single-model evaluation (SM-Turn, SM-Dialog)", out)
    report.text(f"{turn['conversation_id'].nunique()} conversations with SM-Turn ratings ({len(turn)} ratings), "
                f"{dialog['conversation_id'].nunique()} with SM-Dialog ratings ({len(dialog)}). Turn subset: Bot "
                f"Speaker turns {label}. WTA: a conversation succeeds when at least half of its rated responses "
                "were marked successful (Smith Table 2).", note=True)
    if "worker_checks" in results:
        report_worker_checks(report, results["worker_checks"], worker_checks)
    report.heading("SM-Turn success rates and SM-Dialog Likert scores (Smith Table 2)")
    report.table(results["success_rates"])
    report.table(results["likert"], caption="SM-Dialog Likert mean and SD")
    report.heading("Success rate by Bot Speaker turn (Smith Table 5)")
    report.table(results["per_turn"], floatfmt="{:.0f}")
    if not turn.empty:
        criteria = sorted(turn["criterion"].unique())
        fig, axes = plt.subplots(1, len(criteria), figsize=(4 * len(criteria), 3.2), squeeze=False)
        for ax, criterion in zip(axes[0], criteria):
            part = turn[turn["criterion"] == criterion]
            for model, frame in part.groupby("model"):
                curve = frame.groupby("bot_turn")["value"].mean() * 100
                ax.plot(curve.index, curve.to_numpy(), marker="o", label=model)
            ax.set_title(criterion)
            ax.set_xlabel("Bot Speaker turn")
            ax.set_ylabel("success rate (%)")
        axes[0][0].legend(fontsize="small")
        report.figure(fig, "success_by_turn", "SM-Turn success rate by Bot Speaker turn")
    report.heading("t-tests (two-sided, independent)")
    report.table(results["ttests"])
    report.heading(f"Effective win rates (Smith 4.4.1; {n_boot} bootstrap resamples)")
    report.table(results["effective_win_rates"])
    if len(results["combination"]):
        report.heading("SM-Turn + SM-Dialog weighted combination (Smith App. G)")
        report.text("Per conversation: (w_turn * SM-Turn WTA + w_dialog * (Likert - 1) / 4) / (w_turn + w_dialog); "
                    f"weightings {_weights_text(weights)}.")
        report.table(results["combination"])
    report.write()


@register_script("analyze_single_model")
class AnalyzeSingleModel(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "SM-Turn / SM-Dialog analysis (Smith et al. 2022)")
        add_data_args(parser)
        group = parser.add_argument_group("Single-model analysis")
        group.add_argument("--sm-turns", default="3-6", help="Bot Speaker turns FIRST-LAST for the subset "
                           "(WTA, t-tests, win rates, combination), or 'all' (default: 3-6, Smith 4.4.1)")
        group.add_argument("--reference", default=None, help="compare this model with each other model "
                           "(default: every pair)")
        group.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples for effective win rates")
        group.add_argument("--seed", type=int, default=0, help="random seed")
        group.add_argument("--weights", default=_weights_text(sm.DEFAULT_WEIGHTS),
                           help="SM-Turn:SM-Dialog weightings for the App. G combination, comma separated")
        add_worker_checks_arg(group)
        return parser

    def run(self):
        data = load_data(self.opt)
        out = Path(self.opt["out"])
        results = analyze(data, out, parse_turns(self.opt["sm_turns"]), self.opt["reference"], self.opt["n_boot"],
                          self.opt["seed"], parse_weights(self.opt["weights"]), self.opt["worker_checks"])
        if "worker_checks" in results:
            checks = results["worker_checks"]
            print(worker_checks_text(checks, self.opt["worker_checks"]))
            if len(checks):
                print(checks.to_string(index=False))
        print(f"wrote success_rates, per_turn, likert, ttests, effective_win_rates, combination (.csv) and "
              f"report.html to {out}")
