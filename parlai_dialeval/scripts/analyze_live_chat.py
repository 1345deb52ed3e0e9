"""dialeval analyze_live_chat: system scores, quality control and significance for live-chat direct
assessment (continuous ratings of live conversations, Ji et al. 2022).

CLI glue only: the statistics live in parlai_dialeval.analysis.live_chat, the figures in
analysis.live_chat_plots. See docs/live_chat_analysis.md.
"""
from __future__ import annotations

import gc
import math
import time
from pathlib import Path

import pandas as pd
from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.analysis import live_chat, live_chat_plots
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.report import Report
from parlai_dialeval.utils.script_args import add_data_args, load_data, write_csv, write_json

WORKER_COLUMNS = ["worker_id", "n_hits", "n_ratings", "p_value", "passed"]


def names(text) -> list[str] | None:
    """Comma-separated names; None when not given; an empty list for ``""``."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)):
        text = ",".join(text)
    return [part.strip() for part in str(text).split(",") if part.strip()]


def config_from_opt(opt) -> live_chat.LiveChatConfig:
    return live_chat.LiveChatConfig(
        study=opt.get("study"), criteria=names(opt.get("criteria")), negative=names(opt.get("negative")),
        scale_min=opt.get("scale_min"), scale_max=opt.get("scale_max"), reverse=opt.get("reverse", True),
        standardise=opt.get("standardise", True), ddof=opt.get("ddof", 1), epsilon=opt.get("epsilon", 1e-6),
        qc_models=names(opt.get("qc_models")), qc_test=opt.get("qc_test", "mannwhitney"),
        qc_alpha=opt.get("qc_alpha", 0.05), qc_criteria=names(opt.get("qc_criteria")),
        sig_test=opt.get("sig_test", "mannwhitney"), correction=opt.get("correction", "none"),
        order=names(opt.get("order")), agreement_by=opt.get("agreement_by", "models"),
        agreement_max_pairs=opt.get("agreement_max_pairs", 2_000_000), seed=opt.get("seed", 0))


def add_args(parser) -> None:
    d = live_chat.LiveChatConfig()
    group = parser.add_argument_group("Live-chat analysis (defaults: Ji et al. 2022)")
    group.add_argument("--study", default=None, help="study to analyse when the data hold several")
    group.add_argument("--criteria", default=None,
                       help="comma-separated statements to analyse (default: all the study declares)")
    group.add_argument("--negative", default=None,
                       help="comma-separated negatively worded statements, reversed as max - x (default: "
                            "those the study declares positive: false; give '' for none)")
    group.add_argument("--scale-min", type=float, default=None, help="scale minimum for reversal (default: metadata)")
    group.add_argument("--scale-max", type=float, default=None, help="scale maximum for reversal (default: metadata)")
    group.add_argument("--reverse", type="bool", default=d.reverse, help="reverse negative statements")
    group.add_argument("--standardise", type="bool", default=d.standardise,
                       help="per-worker z scores over all the worker's ratings (false: reversed raw values)")
    group.add_argument("--ddof", type=int, default=d.ddof, help="degrees of freedom of the worker SD")
    group.add_argument("--epsilon", type=float, default=d.epsilon, help="added to the worker SD")
    group.add_argument("--qc-models", default=None, help="comma-separated quality-control bots (default: study's)")
    group.add_argument("--qc-test", default=d.qc_test, choices=live_chat.QC_TESTS,
                       help="worker test that the QC bot was rated lower: Mann-Whitney U (paper), Welch t, or "
                            "none (everyone passes)")
    group.add_argument("--qc-alpha", type=float, default=d.qc_alpha, help="a worker passes when p < this")
    group.add_argument("--qc-criteria", default=None,
                       help="comma-separated statements the QC test uses (default: the positive ones)")
    group.add_argument("--sig-test", default=d.sig_test, choices=live_chat.SIG_TESTS,
                       help="pairwise test between models on per-conversation overall z")
    group.add_argument("--correction", default=d.correction, choices=live_chat.CORRECTIONS,
                       help="multiple-comparison correction over all ordered model pairs (statsmodels)")
    group.add_argument("--order", default=None,
                       help="comma-separated model order for the tables (default: by overall z)")
    group.add_argument("--agreement-by", default=d.agreement_by, choices=live_chat.AGREEMENT_BY,
                       help="rater agreement pairs HITs that held the same models (paper) or share a hit_id")
    group.add_argument("--agreement-max-pairs", type=int, default=d.agreement_max_pairs,
                       help="rater agreement: above this many candidate pairs among passing (or failing) "
                            "workers, use a seeded random sample of this many")
    group.add_argument("--seed", type=int, default=d.seed, help="random seed (pair sampling)")
    group.add_argument("--sig-plot-threshold", type=float, default=0.1,
                       help="heatmap colours cells with p below this (the paper's Figure 3: 0.1)")


def _with_labels(frame: pd.DataFrame, labels: dict, column: str = "model") -> pd.DataFrame:
    if not labels or column not in frame:
        return frame
    out = frame.copy()
    out.insert(out.columns.get_loc(column) + 1, "label", out[column].map(lambda m: labels.get(m, "")))
    return out


def write_outputs(result: live_chat.LiveChatResult, out: Path, sig_threshold: float = 0.1,
                  timings: dict | None = None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    s = result.settings
    criteria = s.criteria
    scores_columns = ["model", "n", "overall", *criteria]
    write_csv(result.system_scores[scores_columns], out / "system_scores.csv")
    write_csv(result.system_scores_raw[scores_columns], out / "system_scores_raw.csv")
    write_csv(result.workers[WORKER_COLUMNS], out / "workers.csv")
    write_csv(result.significance, out / "significance.csv")
    write_csv(result.correlations_raw.reset_index(names=""), out / "correlations.csv")
    write_csv(result.correlations.reset_index(names=""), out / "correlations_z.csv")
    write_csv(result.agreement["stats"], out / "rater_agreement.csv")
    summary = dict(result.summary)
    summary["durations"] = result.durations.to_dict(orient="records")
    summary["rater_agreement"] = result.agreement["stats"].to_dict(orient="records")
    summary["rater_agreement_by"] = result.agreement["by"]
    summary["rater_agreement_sampled"] = result.agreement["sampled"]
    if result.topics is not None:
        summary["topic_attitudes"] = result.topics.to_dict(orient="records")
    if result.inputs is not None:
        summary["input_lengths"] = result.inputs.to_dict(orient="records")
    summary["ranking"] = result.system_scores["model"].tolist()
    if s.labels:
        summary["model_labels"] = s.labels
    summary["outputs"] = ["report.html", "system_scores.csv", "system_scores_raw.csv", "workers.csv",
                          "significance.csv", "correlations.csv", "correlations_z.csv", "rater_agreement.csv",
                          "summary.json"]
    if timings:
        summary["timings_seconds"] = timings
    write_json(summary, out / "summary.json")
    write_report(result, out, sig_threshold)
    return summary


def _percent(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


TEST_NAMES = {"mannwhitney": "Mann-Whitney U", "ttest": "Welch t"}


def _method_text(s: live_chat.Settings) -> str:
    """The method actually applied, in one paragraph."""
    config = s.config
    parts = []
    if s.negative and config.reverse:
        parts.append(f"negative statements ({', '.join(s.negative)}) reversed as max - x")
    else:
        parts.append("no reversal")
    if config.standardise:
        parts.append(f"per-worker z = (x - mean) / (SD(ddof={config.ddof}) + {config.epsilon:g}) over all the "
                     "worker's ratings, QC included")
    else:
        parts.append("no standardisation (raw values)")
    if config.qc_test != "none":
        parts.append(f"quality control: one-sided {TEST_NAMES[config.qc_test]} test that the QC bot was rated lower "
                     f"than the genuine models on {', '.join(s.qc_criteria)}, pooled over each worker's HITs; pass "
                     f"when p < {config.qc_alpha:g}; failing workers removed whole")
    else:
        parts.append("quality control off")
    parts.append(f"pairwise significance: one-sided {TEST_NAMES[config.sig_test]} on per-conversation overall z, "
                 f"correction: {config.correction}")
    return "Method: " + "; ".join(parts) + "."


def write_report(result: live_chat.LiveChatResult, out: Path, sig_threshold: float = 0.1) -> Path:
    s, summary, config = result.settings, result.summary, result.settings.config
    labels = s.labels
    models = result.system_scores["model"].tolist()
    report = Report(f"Live-chat direct assessment: {s.study or 'study'}", out)
    report.text(
        f"{summary['n_workers']:,} workers submitted {summary['n_assignments']:,} assignments (HITs) holding "
        f"{summary['n_dialogues']:,} rated conversations with {len(models)} genuine models and "
        f"{summary['n_qc_dialogues']:,} with the quality-control bot ({', '.join(s.qc_models) or 'none'}). "
        f"{summary['n_workers_passed']:,} workers ({_percent(summary['worker_pass_rate'])}) passed quality control; "
        f"system scores use their {summary['n_dialogues_passed']:,} genuine-model conversations "
        f"({summary['n_ratings_passed_genuine']:,} ratings). Best overall: "
        f"{models[0] if models else 'none'}.")
    report.text(_method_text(s))
    for note in summary.get("notes", []):
        report.text(note, note=True)

    report.heading("Workers, assignments and dialogues (Table 1)")
    table1 = result.table1.copy()
    table1["pass_rate"] = table1["pass_rate"].map(_percent)
    report.table(table1)
    if not result.durations.empty:
        report.table(result.durations, caption="Durations in minutes: per HIT, and per conversation (the HIT's "
                     "time divided by its conversations, as the paper's Table 1; measured when recorded)",
                     floatfmt="{:.2f}")

    report.heading("System scores")
    caption = ("Average standardised (z) scores over passing workers (Table 3); n = number of ratings; "
               + (f"{', '.join(s.negative)} reversed; " if s.negative and config.reverse else "")
               + "overall = mean of the statements; ordered by overall.")
    report.table(_with_labels(result.system_scores, labels), caption=caption)
    report.figure(live_chat_plots.overall_scores(result.conversations[result.conversations["passed"]
                                                                      & ~result.conversations["qc"]], models, labels),
                  "overall_scores", "Overall z per model: mean of per-conversation overall z with a 95% interval.")
    report.table(_with_labels(result.system_scores_raw, labels), floatfmt="{:.2f}",
                 caption="Average raw scores (0-100, negatives reversed) over the same ratings (Table 10).")

    report.heading("Pairwise significance (Figure 3)")
    column = "p_adjusted" if "p_adjusted" in result.significance else "p_value"
    matrix = live_chat.significance_matrix(result.significance, models, column)
    if len(models) > 1:
        report.figure(live_chat_plots.significance_heatmap(matrix, labels, sig_threshold),
                      "significance", f"A coloured cell: the row's model scored significantly higher than the "
                      f"column's (one-sided, p < {sig_threshold:g}"
                      + (f", {config.correction}-corrected" if column == "p_adjusted" else "") + ").")
        shown = matrix.copy()
        shown.index = [labels.get(m, m) for m in shown.index]
        shown.columns = [labels.get(m, m) for m in shown.columns]
        wins = (matrix < 0.05).sum(axis=1)
        report.text("Significant wins at p < 0.05 per model: "
                    + ", ".join(f"{labels.get(m, m)} {int(wins[m])}" for m in models) + ".")
        report.table(shown.reset_index(names="row beats column"), caption=f"p-values ({column})", floatfmt="{:.4f}")

    report.heading("Correlation between statements (Table 8)")
    for frame, caption in ((result.correlations_raw, "Across systems on raw (reversed) system scores, as the "
                                                     "paper's Table 8: Pearson above the diagonal, Spearman below."),
                           (result.correlations, "The same on standardised (z) system scores.")):
        shown = frame.copy()
        shown.index = [c.capitalize() for c in shown.index]
        shown.columns = [c.capitalize() for c in shown.columns]
        report.table(shown.reset_index(names=""), caption=caption)

    report.heading("Rater agreement (Figure 2)")
    agreement = result.agreement
    report.figure(live_chat_plots.agreement_histogram(agreement["passed"], agreement["failed"]), "rater_agreement",
                  "Pearson r between the per-conversation overall z of two different workers' HITs that held "
                  + ("the same models" if agreement["by"] == "models" else "the same hit_id")
                  + ", conversations matched by model; pairs among passing and among failing workers.")
    report.table(agreement["stats"])

    report.heading("Worker quality control")
    workers = result.workers
    if config.qc_test != "none":
        report.figure(live_chat_plots.worker_p_values(workers["p_value"].to_numpy(dtype=float), config.qc_alpha),
                      "worker_p_values", "Workers' quality-control p-values (all listed in workers.csv).")
    counts = workers.groupby(["passed", "n_hits"]).size().rename("workers").reset_index()
    report.table(counts, caption="Workers by outcome and number of HITs")
    notes = workers[workers["note"] != ""].groupby("note").size().rename("workers").reset_index()
    if len(notes):
        report.table(notes, caption="Workers with nothing to test or constant ratings (they fail)")

    if result.topics is not None:
        report.heading("Topic attitudes (Table 2)")
        report.table(result.topics, caption="% of conversations whose opening topic the worker liked, was "
                     "ambivalent about or disliked (all conversations of each HIT)", floatfmt="{:.1f}")
    if result.inputs is not None:
        report.heading("Worker inputs (Table 12)")
        report.table(result.inputs, caption="Median characters and words (whitespace tokens) of the worker's "
                     "messages, per input and per conversation", floatfmt="{:.1f}")

    report.heading("Files")
    report.text("system_scores.csv (z), system_scores_raw.csv, workers.csv (every worker's p-value and outcome), "
                "significance.csv (model_a over model_b), correlations.csv (raw, Table 8), correlations_z.csv, "
                "rater_agreement.csv, summary.json (counts, settings, notes).")
    report.heading("Settings")
    report.table(pd.DataFrame([(k, str(v)) for k, v in s.as_dict().items()], columns=["setting", "value"]))
    return report.write()


def run_analysis(opt, log=print) -> dict:
    started = time.perf_counter()
    data = load_data(opt, log=log)
    loaded = time.perf_counter()
    # the loaded records live until the end: keep the garbage collector from rescanning millions of
    # them during the analysis (about 15% of its time on 1.3M ratings)
    gc.freeze()
    try:
        result = live_chat.analyze(data, config_from_opt(opt))
    finally:
        gc.unfreeze()
    analysed = time.perf_counter()
    summary = write_outputs(result, Path(opt["out"]), opt.get("sig_plot_threshold", 0.1),
                            {"load": round(loaded - started, 2), "analyse": round(analysed - loaded, 2)})
    log(f"{summary['n_workers']} workers ({summary['n_workers_passed']} passed), {summary['n_dialogues']} dialogues "
        f"({summary['n_dialogues_passed']} passed); wrote {opt['out']}/report.html "
        f"in {time.perf_counter() - started:.1f} s")
    return summary


@register_script("analyze_live_chat")
class AnalyzeLiveChat(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Live-chat direct assessment (Ji et al. 2022): quality control, "
                                            "system scores, significance, agreement")
        add_data_args(parser)
        add_args(parser)
        return parser

    def run(self):
        if not self.opt.get("out"):
            raise DialevalError("--out DIR is required")
        return run_analysis(self.opt)
