"""dialeval analyze_pairwise: win rates, rankings and agreement of pairwise (A/B) human judgements.

CLI glue only: the statistics live in parlai_dialeval.analysis.{pairwise,rankings,agreement}.
See docs/pairwise_analysis.md.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from parlai.core.params import ParlaiParser  # noqa: E402
from parlai.core.script import ParlaiScript, register_script  # noqa: E402

from parlai_dialeval.analysis import agreement, pairwise, rankings  # noqa: E402
from parlai_dialeval.errors import DialevalError  # noqa: E402
from parlai_dialeval.report import Report  # noqa: E402
from parlai_dialeval.utils.script_args import add_data_args, load_data, write_csv, write_json  # noqa: E402
from parlai_dialeval.utils.worker_check_option import (add_worker_checks_arg, report_worker_checks,  # noqa: E402
                                                       run_worker_checks, worker_checks_text)

WIN_RATE_COLUMNS = ["model_a", "model_b", "wins_a", "wins_b", "ties", "win_rate_a", "ci_low", "ci_high",
                    "p_value"]


def parse_turns(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        low, _, high = text.partition("-")
        turns = (int(low), int(high or low))
    except ValueError:
        raise DialevalError(f"--turns {text!r}: expected FIRST-LAST, e.g. 2-6") from None
    if turns[0] < 1 or turns[1] < turns[0]:
        raise DialevalError(f"--turns {text!r}: expected 1 <= FIRST <= LAST")
    return turns


def analyze(comparisons: pd.DataFrame, out: Path, turns=None, rounds: int = 1000, seed: int = 0,
            alpha: float = 0.05, min_items: int = 5, log=print, worker_checks: pd.DataFrame | None = None,
            worker_check_mode: str = "report") -> dict:
    """Compute everything, write the CSV/JSON outputs and report.html into ``out``; returns the tables."""
    if comparisons.empty:
        raise DialevalError("no comparison records in the data (analyze_pairwise needs pairwise votes)")
    comparisons, onboarding = pairwise.split_onboarding(comparisons)
    automatic = int(comparisons["automatic"].eq(True).sum()) if "automatic" in comparisons else 0
    log(f"{len(comparisons)} comparisons ({automatic} automatic ties); {onboarding} onboarding excluded")

    rates = pairwise.win_rates(comparisons, alpha=alpha)
    wmt = pairwise.wmt_scores(rates)
    win_counts = pairwise.system_win_counts(wmt)
    ranks = rankings.rankings(comparisons, rounds=rounds, seed=seed, win_counts=win_counts, progress=True)
    studies = comparisons["study"].dropna().unique() if "study" in comparisons else []
    by_study = None
    if len(studies) > 1:
        by_study = pairwise.win_rates(comparisons, by=["study"], alpha=alpha)
        kappas = {s: agreement.fleiss_kappa(part) for s, part in comparisons.groupby("study")}
        by_study["fleiss_kappa"] = by_study["study"].map(lambda s: kappas[s]["fleiss_kappa"])
        for column in agreement.WEAK:
            by_study[column] = by_study["study"].map(
                lambda s, c=column: agreement.weak_agreement(comparisons[comparisons["study"] == s])[c])
    has_turns = "turn_index" in comparisons and comparisons["turn_index"].notna().any()
    per_conversation = pairwise.conversation_win_rates(comparisons, turns) if has_turns else None
    per_turn = pairwise.win_rate_by_turn(comparisons, alpha) if has_turns else None
    kappa = agreement.fleiss_kappa(comparisons)
    weak = agreement.weak_agreement(comparisons)
    annotators = agreement.annotator_correlations(comparisons, min_items=min_items)
    items = agreement.item_total_correlations(comparisons)
    texts = pairwise.response_stats(comparisons)

    out.mkdir(parents=True, exist_ok=True)
    write_csv(rates[WIN_RATE_COLUMNS + ["automatic_ties", "distinct_a", "distinct_b"]], out / "win_rates.csv")
    write_csv(ranks, out / "rankings.csv")
    write_csv(annotators, out / "annotators.csv")
    write_csv(items, out / "items.csv")
    write_csv(wmt, out / "wmt_scores.csv")
    if by_study is not None:
        write_csv(by_study, out / "win_rates_by_study.csv")
    if per_conversation is not None:
        write_csv(per_conversation, out / "conversation_win_rates.csv")
        write_csv(per_turn, out / "win_rate_by_turn.csv")
    if not texts.empty:
        write_csv(texts, out / "responses.csv")
    summary = {
        "comparisons": int(len(comparisons)), "automatic_ties": automatic, "onboarding_excluded": onboarding,
        "tie_policy": {"win_rates": pairwise.TIE_POLICY, "rankings": rankings.TIE_POLICY},
        "fleiss": kappa, "weak_agreement": weak,
        "annotators": {"with_correlation": int(annotators["spearman"].notna().sum()),
                       "negatively_correlated": int(annotators["negative"].sum()),
                       "min_items": min_items},
        "per_study": ({s: {"fleiss_kappa": k} for s, k in zip(by_study["study"], by_study["fleiss_kappa"])}
                      if by_study is not None else {}),
    }
    if worker_checks is not None:
        summary["worker_checks"] = {"mode": worker_check_mode, "workers": len(worker_checks),
                                    "flagged": int(worker_checks["flagged"].sum())}
        write_csv(worker_checks, out / "worker_checks.csv")
    write_json(summary, out / "agreement.json")
    _report(out, rates, by_study, ranks, wmt, win_counts, per_conversation, per_turn, turns, summary,
            annotators, items, texts, worker_checks, worker_check_mode)
    return {"win_rates": rates, "rankings": ranks, "by_study": by_study, "agreement": summary,
            "annotators": annotators, "items": items, "conversation_win_rates": per_conversation,
            "win_rate_by_turn": per_turn, "responses": texts}


def _report(out, rates, by_study, ranks, wmt, win_counts, per_conversation, per_turn, turns, summary,
            annotators, items, texts, worker_checks, worker_check_mode) -> None:
    report = Report("Pairwise analysis", out)
    report.text(f"{summary['comparisons']} comparisons, of which {summary['automatic_ties']} automatic ties "
                f"(identical responses, reported apart); {summary['onboarding_excluded']} onboarding "
                "comparisons excluded.")
    report.text("Tie policy. Win rates and binomial tests: " + pairwise.TIE_POLICY + ". Rankings: "
                + rankings.TIE_POLICY + ".", note=True)
    if worker_checks is not None:
        report_worker_checks(report, worker_checks, worker_check_mode)
    report.heading("Win rates per model pair")
    report.table(rates[WIN_RATE_COLUMNS + ["automatic_ties"]],
                 caption="win_rate_a = wins_a / (wins_a + wins_b) (= WMT major score) with 95% Wilson CI; "
                         "two-sided binomial test, ties excluded")
    if by_study is not None:
        report.heading("Per comparison (study): counts, win rate and agreement")
        report.table(by_study.drop(columns=["distinct_a", "distinct_b"]))
    report.heading("Rankings")
    report.table(ranks, caption="Bradley-Terry log-strengths (mean 0) with bootstrap 95% CI; TrueSkill "
                                "mu/sigma; system win count (opponents beaten, Lee 2.2)")
    report.figure(_rank_plot(ranks), "rankings", "Bradley-Terry strength with 95% bootstrap interval")
    report.heading("WMT scores (Lee et al. 2.2)")
    report.figure(_heatmap(wmt, list(win_counts.index)), "heatmap",
                  "Rows win against columns: colour = major score, cell value = distinct score; models "
                  "ordered by system win count")
    if per_conversation is not None:
        report.heading("Per-conversation win rates (Smith et al. 4.2)")
        span = f"turns {turns[0]}-{turns[1]}" if turns else "all turns"
        report.table(per_conversation, caption=f"{span}: linear, squared and winner-takes-all")
        report.heading("Win rate per turn")
        report.table(per_turn)
        report.figure(_turn_plot(per_turn), "win_rate_by_turn", "Win rate of model_a per Bot Speaker turn")
    report.heading("Agreement")
    fleiss = summary["fleiss"]
    report.text(f"Fleiss' kappa {fleiss['fleiss_kappa']:.3f} over {fleiss['items']} items with "
                f"{fleiss['votes_per_item']} votes ({fleiss['items_left_out']} items with other counts left "
                f"out); Krippendorff's alpha (nominal, all items) {fleiss['krippendorff_alpha']:.3f}.")
    report.table(pd.DataFrame([summary["weak_agreement"]]), caption="Weak agreement per item (Lee 5.1)")
    flagged = summary["annotators"]["negatively_correlated"]
    report.text(f"{flagged} of {summary['annotators']['with_correlation']} annotators correlate negatively "
                "with the others (annotators.csv, column negative).", note=bool(flagged))
    values = annotators["spearman"].dropna()
    if len(values):
        report.figure(_histogram(values, "Spearman rho with the other annotators"), "annotators",
                      "Annotator correlation with the others (Lee Figure 1)")
    valid = items["item_total_r"].dropna()
    if len(valid):
        report.figure(_histogram(valid, "item-total correlation"), "items",
                      "Prompt validity: item-total correlation per prompt (Lee 5.2); items.csv lists them")
    if not texts.empty:
        report.heading("Responses (Lee 5.4)")
        report.table(texts, caption="distinct-n = unique n-grams / tokens; mean length in tokens")
    report.write()


def _rank_plot(ranks: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(ranks) + 1))
    y = np.arange(len(ranks))[::-1]
    err = np.vstack([ranks["bt_score"] - ranks["bt_ci_low"], ranks["bt_ci_high"] - ranks["bt_score"]])
    ax.errorbar(ranks["bt_score"], y, xerr=np.nan_to_num(err), fmt="o", capsize=3)
    ax.set_yticks(y, ranks["model"])
    ax.set_xlabel("Bradley-Terry log-strength")
    return fig


def _heatmap(wmt: pd.DataFrame, order: list[str]):
    major, distinct = pairwise.heatmap_matrices(wmt, order)
    size = 0.6 * len(order) + 2
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(major.to_numpy(dtype=float), cmap="RdBu", vmin=0, vmax=1)
    for i in range(len(order)):
        for j in range(len(order)):
            value = distinct.iat[i, j]
            if not np.isnan(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(order)), order, rotation=60, ha="right")
    ax.set_yticks(range(len(order)), order)
    ax.set_xlabel("loses")
    ax.set_ylabel("wins")
    fig.colorbar(image, ax=ax, label="major score (win)")
    return fig


def _turn_plot(per_turn: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(7, 4))
    for (a, b), part in per_turn.groupby(["model_a", "model_b"], sort=False):
        ax.plot(part["turn_number"], part["win_rate_a"], marker="o", label=f"{a} vs {b}")
    ax.axhline(0.5, color="grey", lw=0.8)
    ax.set_xlabel("Bot Speaker turn")
    ax.set_ylabel("win rate of model_a")
    ax.legend(fontsize=7)
    return fig


def _histogram(values: pd.Series, label: str):
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(values, bins=20, range=(-1, 1))
    ax.axvline(0, color="red", lw=0.8)
    ax.set_xlabel(label)
    ax.set_ylabel("count")
    return fig


@register_script("analyze_pairwise")
class AnalyzePairwise(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Win rates, rankings and agreement of pairwise (A/B, PW-Turn, "
                                            "PW-Dialog/ACUTE-Eval) judgements")
        add_data_args(parser)
        group = parser.add_argument_group("Pairwise analysis")
        group.add_argument("--turns", default=None, metavar="FIRST-LAST",
                           help="restrict per-conversation win rates (linear, squared, winner-takes-all) to "
                                "these 1-based Bot Speaker turns, e.g. 2-6 (PW-Turn data)")
        group.add_argument("--bootstrap-rounds", type=int, default=1000,
                           help="bootstrap rounds for Bradley-Terry confidence intervals")
        group.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap")
        group.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level of intervals")
        group.add_argument("--min-annotator-items", type=int, default=5,
                           help="items an annotator must share with others to get a correlation")
        add_worker_checks_arg(group)
        return parser

    def run(self):
        data = load_data(self.opt)
        out = Path(self.opt["out"])
        mode = self.opt["worker_checks"]
        data, checks = run_worker_checks(data, mode)
        if checks is not None:
            print(worker_checks_text(checks, mode))
        result = analyze(data.comparisons, out, turns=parse_turns(self.opt.get("turns")),
                         rounds=self.opt["bootstrap_rounds"], seed=self.opt["seed"], alpha=self.opt["alpha"],
                         min_items=self.opt["min_annotator_items"], worker_checks=checks, worker_check_mode=mode)
        print(f"wrote win_rates.csv, rankings.csv, agreement.json, annotators.csv, items.csv and report.html "
              f"to {out}")
        return result
