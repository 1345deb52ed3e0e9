"""dialeval analyze_live_chat: system scores, quality control and significance for live-chat direct
assessment (continuous ratings of live conversations, Ji et al. 2022).

CLI glue only: the statistics live in parlai_dialeval.analysis.live_chat and the sections of
results/live_chat_result.py (verdict, style adjustment, rankings per topic), the figures in
analysis.live_chat_plots; this command writes them. See docs/live_chat_analysis.md.
"""
from __future__ import annotations

import importlib
import math
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
from parlai.core.script import register_script

from parlai_dialeval.analysis import live_chat
from parlai_dialeval.analysis.multiple_testing import describe
from parlai_dialeval.gc_freeze import frozen_heap
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.report import Report, caught_warnings
from parlai_dialeval.results import live_chat_result
from parlai_dialeval.scripts import (categories_report, command_line, evidence_option, evidence_report, groups_report,
                                     style_report)
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs
from parlai_dialeval.scripts.command_line import load_data

# Loaded on first use, so --help and option errors do not wait for scipy and matplotlib.
live_chat_plots = lazy_module("parlai_dialeval.analysis.live_chat_plots")

WORKER_COLUMNS = ["worker_id", "n_hits", "n_hits_not_submitted", "n_ratings", "p_value", "passed", "outcome"]


# Fewer passing conversations than this for a model: the report warns that its interval is wide.
SMALL_N = 5


# The analysis settings plus the report's own and every section's (results/live_chat_result.py).
LiveChatCommandConfig = live_chat_result.LiveChatOptions


def config_from_opt(opt) -> live_chat.LiveChatConfig:
    """The analysis settings from parsed options (missing ones keep Ji et al.'s defaults)."""
    return command_line.config_from_opt(opt, live_chat.LiveChatConfig)


def _with_labels(frame: pd.DataFrame, labels: dict, column: str = "model") -> pd.DataFrame:
    if not labels or column not in frame:
        return frame
    out = frame.copy()
    out.insert(out.columns.get_loc(column) + 1, "label", out[column].map(lambda m: labels.get(m, "")))
    return out


def write_outputs(result: live_chat.LiveChatResult, out: Path, sig_threshold: float = 0.1,
                  timings: dict | None = None, library_warnings: list[str] = (), data=None, opt=None,
                  evidence=None) -> dict:
    """Tables, summary.json and report.html of ``result`` and its sections (results/live_chat_result.py; those not
    computed yet are, from ``data``, the loaded EvalData, and ``opt``: without data, style control and per-topic
    rankings are left out; with ``evidence`` the evidence about participants, scripts/evidence_option.py)."""
    live_chat_result.complete(result, data, command_line.config_from_opt(opt or {}, LiveChatCommandConfig), evidence,
                              bool((opt or {}).get("exclude_flagged")))
    s = result.settings
    scores_columns = ["model", "n", "overall", *s.criteria]
    tables = {"system_scores": result.system_scores[scores_columns],
              "system_scores_raw": result.system_scores_raw[scores_columns],
              "overall_intervals": result.intervals, "workers": result.outcomes[WORKER_COLUMNS],
              "significance": result.significance,
              "correlations": result.correlations_raw.reset_index(names="statement"),
              "correlations_z": result.correlations.reset_index(names="statement"),
              "rater_agreement": result.agreement["stats"]}
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
    summary["outputs"] = ["report.html", *(f"{name}.csv" for name in tables), "summary.json"]
    if timings:
        summary["timings_seconds"] = timings
    report = build_report(result, out, sig_threshold, library_warnings)
    extra = live_chat_result.tables(result)
    tables.update(extra)
    summary.update(live_chat_result.summary(result))
    summary["outputs"] += [f"{name}.csv" for name in extra]
    Outputs(tables, {"summary": summary}, report).write(out)
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


def _warn(report: Report, result: live_chat.LiveChatResult, sig_threshold: float) -> None:
    intervals, significance = result.intervals, result.significance
    small = intervals[intervals["n_conversations"].fillna(0) < SMALL_N]
    if len(small):
        report.warn(f"{len(small)} model(s) have fewer than {SMALL_N} passing conversations (the unit of every "
                    f"interval and test): {', '.join(map(str, small['model']))}; their intervals are wide.")
    flat = intervals[intervals["sd"].eq(0)]
    if len(flat):
        report.warn(f"Zero variance between conversations for {', '.join(map(str, flat['model']))}: no interval "
                    "can be estimated from them.")
    if len(significance) and significance["p_value"].isna().all():
        report.warn("No pairwise test was possible (a model needs at least one passing conversation on each side).")
    elif len(significance) and result.settings.config.sig_test == "mannwhitney":
        # the smallest one-sided Mann-Whitney p with n_a and n_b values is 1 / C(n_a + n_b, n_a). As
        # C >= 2 ** min(n_a, n_b), a pair with more values on both sides can reach the threshold, and C is
        # computed (exactly) only otherwise: with thousands of conversations it has thousands of digits.
        sizes = list(zip(significance["n_a"], significance["n_b"]))
        few = math.inf if sig_threshold <= 0 else math.log2(1 / sig_threshold)
        floor = np.array([1 / math.comb(a + b, a) if min(a, b) <= few else 0.0 for a, b in sizes])
        if (floor >= sig_threshold).all():
            report.warn(f"With so few conversations no pair can reach p < {sig_threshold:g}: the smallest possible "
                        f"one-sided Mann-Whitney p here is {floor.min():.3g} (1 / C(n_a + n_b, n_a)).")


def build_report(result: live_chat.LiveChatResult, out: Path, sig_threshold: float = 0.1,
                 library_warnings: list[str] = ()) -> Report:
    live_chat_result.complete(result, None, None)  # the sections that need no data beside the result: the verdict
    s, summary, config = result.settings, result.summary, result.settings.config
    labels = s.labels
    models = result.system_scores["model"].tolist()
    report = Report(f"Live-chat direct assessment: {s.study or 'study'}", out, "live_chat.html")
    qc_off = config.qc_test == "none"
    for paragraph in result.parts["verdict"]:
        report.verdict(paragraph)
    for message in [*library_warnings, *(m for caught in result.library_warnings.values() for m in caught)]:
        report.warn(message)
    _warn(report, result, sig_threshold)
    left = summary.get("assignments_not_submitted") or {}

    def count(n: int, noun: str) -> str:  # a one-person pilot is the README's first run
        return f"{n:,} {noun}{'' if n == 1 else 's'}"

    report.text(
        f"{count(summary['n_workers'], 'worker')} submitted {count(summary['n_assignments'], 'assignment')} (HITs) "
        # the models in the data: system_scores holds only those with a passing conversation
        f"holding {count(summary['n_dialogues'], 'rated conversation')} with "
        f"{count(len(summary['models']), 'genuine model')} and "
        f"{summary['n_qc_dialogues']:,} with the quality-control bot ({', '.join(s.qc_models) or 'none'}). "
        + ("Quality control is off (--qc-test none): no worker was checked, and system scores use every "
           "worker's " if qc_off else
           f"{summary['n_workers_passed']:,} workers ({_percent(summary['worker_pass_rate'])}) passed quality "
           "control; system scores use their ")
        + f"{summary['n_dialogues_passed']:,} genuine-model conversations "
        f"({summary['n_ratings_passed_genuine']:,} ratings)."
        + (f" {sum(left.values()):,} more assignment(s) were started and not submitted ("
           + ", ".join(f"{n} {live_chat.NOT_SUBMITTED.get(k, k)}" for k, n in left.items())
           + "): they are not analysed and count neither as passing nor as failing." if left else ""))
    report.text(_method_text(s))
    for note in summary.get("notes", []):
        report.text(note, note=True)

    report.heading("Workers, assignments and dialogues (Table 1)")
    table1 = result.table1.copy()
    table1["pass_rate"] = table1["pass_rate"].map(_percent)
    table1["passed"] = table1["passed"].map(lambda n: "" if pd.isna(n) else f"{n:,}")  # empty: nothing was checked
    report.table(table1.drop(columns=["passed", "pass_rate"]) if qc_off else table1,
                 caption="quality control off: nothing was checked" if qc_off else None)
    if not result.durations.empty:
        report.table(result.durations, caption="Durations in minutes: per HIT, and per conversation (the HIT's "
                     "time divided by its conversations, as the paper's Table 1; measured when recorded)",
                     floatfmt="{:.2f}")

    report.heading("System scores")
    # a reversed statement's score says how little of it there was: named so ("not robotic"); CSVs keep the names
    reversed_names = {name: f"not {name}" for name in s.negative} if s.negative and config.reverse else {}
    caption = ("Average standardised (z) scores over passing workers (Table 3); n = number of ratings; "
               + (f"{', '.join(s.negative)} reversed (shown as {', '.join(reversed_names.values())}); "
                  if reversed_names else "")
               + "overall = mean of the statements; ordered by overall.")
    report.table(_with_labels(result.system_scores, labels).rename(columns=reversed_names), caption=caption)
    report.table(_with_labels(result.intervals, labels), caption="Unit of analysis: the conversation. Mean "
                 "per-conversation overall z per model with its 95% t interval (valid for the n at hand); the "
                 "pairwise tests use the same conversations.")
    if not result.intervals.empty:  # no scored model (nobody passed QC): no chart of empty axes
        report.figure(live_chat_plots.overall_scores(result.intervals, labels), "overall_scores",
                      "Overall z per model: mean of per-conversation overall z with its 95% t interval.")
    report.table(_with_labels(result.system_scores_raw, labels).rename(columns=reversed_names), floatfmt="{:.2f}",
                 caption="Average raw scores (0-100, negatives reversed) over the same ratings (Table 10).")

    report.heading("Pairwise significance (Figure 3)")
    column = "p_adjusted"
    matrix = live_chat.significance_matrix(result.significance, models, column)
    report.text(describe(config.correction, int(result.significance["p_value"].notna().sum())))
    if len(models) > 1 and not (matrix < sig_threshold).any().any():
        report.text(f"No model scored significantly higher than another (every p >= {sig_threshold:g}"
                    + (f" after {config.correction} correction" if config.correction != "none" else "")
                    + "), so there is no heatmap.", note=True)
    elif len(models) > 1:
        report.figure(live_chat_plots.significance_heatmap(matrix, labels, sig_threshold),
                      "significance", f"A coloured cell: the row's model scored significantly higher than the "
                      f"column's (one-sided, p < {sig_threshold:g}"
                      + (f", {config.correction}-corrected" if config.correction != "none" else "") + ").")
    if len(models) > 1:
        shown = matrix.copy()
        shown.index = [labels.get(m, m) for m in shown.index]
        shown.columns = [labels.get(m, m) for m in shown.columns]
        wins = (matrix < 0.05).sum(axis=1)
        report.text("Significant wins at p < 0.05 per model: "
                    + ", ".join(f"{labels.get(m, m)} {int(wins[m])}" for m in models) + ".")
        report.table(shown.reset_index(names="row beats column"), caption=f"p-values ({column})", floatfmt="{:.4f}")

    report.heading("Correlation between statements (Table 8)")
    tables = ((result.correlations_raw, "Across systems on raw (reversed) system scores, as the paper's Table 8: "
                                        "Pearson above the diagonal, Spearman below."),
              (result.correlations, "The same on standardised (z) system scores."))
    scored = len(result.system_scores)
    if scored < 3:  # criteria_correlations' minimum: blank tables said nothing
        report.text(f"No correlation between statements: across systems it needs the scores of three models or "
                    f"more, and {scored:,} {'has' if scored == 1 else 'have'} scores.")
        tables = ()
    for frame, caption in tables:
        shown = frame.copy()
        shown.index = [c.capitalize() for c in shown.index]
        shown.columns = [c.capitalize() for c in shown.columns]
        report.table(shown.reset_index(names="statement"), caption=caption)

    report.heading("Rater agreement (Figure 2)")
    agreement = result.agreement
    matched = "the same models" if agreement["by"] == "models" else "the same hit_id"
    if len(agreement["passed"]) or len(agreement["failed"]):
        report.figure(live_chat_plots.agreement_histogram(agreement["passed"], agreement["failed"]),
                      "rater_agreement", "Pearson r between the per-conversation overall z of two different "
                      f"workers' HITs that held {matched}, conversations matched by model; pairs among passing and "
                      "among failing workers.")
    else:  # an empty chart says nothing: a sentence does
        report.text(f"No rater agreement to show: no two workers' HITs held {matched} (among passing or among "
                    "failing workers), so no pair of workers rated the same thing.")
    report.table(agreement["stats"])

    report.heading("Worker quality control")
    workers = result.workers
    if config.qc_test != "none":
        report.figure(live_chat_plots.worker_p_values(workers["p_value"].to_numpy(dtype=float), config.qc_alpha),
                      "worker_p_values", "Workers' quality-control p-values (all listed in workers.csv).")
    counts = result.outcomes.groupby(["outcome", "n_hits"]).size().rename("workers").reset_index()
    report.table(counts, caption="Workers by outcome and number of HITs submitted")
    notes = workers[(workers["note"] != "") & ~workers["passed"].astype(bool)].groupby("note").size().rename(
        "workers").reset_index()
    if len(notes):
        report.table(notes, caption="Workers with nothing to test or constant ratings (they fail)")

    if result.topics is not None:
        report.heading("Topic attitudes (Table 2)")
        report.table(result.topics, caption="% and number (n) of conversations whose opening topic the worker "
                     "liked, was ambivalent about or disliked (all conversations of each HIT)", floatfmt="{:.1f}")
    if result.inputs is not None:
        report.heading("Worker inputs (Table 12)")
        report.table(result.inputs, caption="Median characters and words (whitespace tokens) of the worker's "
                     "messages, per input and per conversation", floatfmt="{:.1f}")

    style_report.live_chat_view(report, result.parts.get("style"), live_chat_result.live_chat_style.ALPHA)
    categories_part = result.parts.get("categories")
    if isinstance(categories_part, str):
        report.text(categories_part, note=True)
    else:
        categories_report.view(report, categories_part)
    groups_report.view(report, result.parts.get("groups"))
    evidence_report.view(report, result.parts.get("evidence"))
    report.heading("Settings")
    report.table(pd.DataFrame([(k, str(v)) for k, v in s.as_dict().items()], columns=["setting", "value"]))
    return report


def import_in_background() -> threading.Thread:
    """Import the analysis's and the figures' libraries (scipy.stats, matplotlib: about 1.5 s) in a
    thread while the data load: pyarrow's parse runs outside the GIL, so the imports go on beside it.
    Python's per-module import locks make a later import wait for this one."""
    def load():
        importlib.import_module("parlai_dialeval.analysis.live_chat.pipeline")
        importlib.import_module("matplotlib.pyplot")

    thread = threading.Thread(target=load, name="dialeval-imports", daemon=True)
    thread.start()
    return thread


def run_analysis(opt, log=print) -> dict:
    """Load ``opt["data"]``, analyse it and write every output into ``opt["out"]``; returns the summary (tests and
    notebooks call this; the command does the same through AnalysisCommand)."""
    started = time.perf_counter()
    data = _load(opt, log)
    return _analyse_and_write(data, opt, started, time.perf_counter(), log)


def _load(opt, log):
    imports = import_in_background()
    data = load_data(opt, log=log)
    imports.join()
    return data


def _analyse_and_write(data, opt, started: float, loaded: float, log) -> dict:
    options = command_line.config_from_opt(opt, LiveChatCommandConfig)
    analysed_data, llm = data, None
    if opt.get("exclude_flagged"):  # the rule without the QC test, which the analysis applies itself
        first = evidence_option.build(data, opt, log=None)
        analysed_data, llm = evidence_option.exclude(data, first, log), first.llm
    # the loaded records live until the end: keep the garbage collector from rescanning millions of
    # them during the analysis (about 15% of its time on 1.3M ratings)
    with frozen_heap(), caught_warnings() as caught:
        result = live_chat_result.analyse(analysed_data, options)
    analysed = time.perf_counter()
    # the evidence about every participant, the analysis's QC test among it
    found = evidence_option.build(data, opt, quality=result.outcomes[["worker_id", "passed"]], log=log, llm=llm)
    summary = write_outputs(result, Path(opt["out"]), options.sig_plot_threshold,
                            {"load": round(loaded - started, 2), "analyse": round(analysed - loaded, 2)}, caught,
                            data, opt, found)
    log(f"{summary['n_workers']} workers ({summary['n_workers_passed']} passed), {summary['n_dialogues']} dialogues "
        f"({summary['n_dialogues_passed']} passed); wrote {opt['out']}/report.html "
        f"in {time.perf_counter() - started:.1f} s")
    return summary


@register_script("analyze_live_chat")
class AnalyzeLiveChat(AnalysisCommand):
    description = ("Live-chat direct assessment (Ji et al. 2022): quality control, system scores, significance, "
                   "agreement")
    options_title = "Live-chat analysis (defaults: Ji et al. 2022)"
    config_class = LiveChatCommandConfig
    evidence_applies = True
    excludes_itself = True  # and builds the evidence itself: its QC test is the analysis's (_analyse_and_write)

    def build_evidence(self, data, config, checks):
        return None

    def load(self, opt):
        # the analysis's libraries import beside the load (import_in_background); timed for summary.json
        self.started = time.perf_counter()
        return _load(opt, print)

    def analyse(self, data, config, checks, out):
        summary = _analyse_and_write(data, self.opt, self.started, time.perf_counter(), print)
        return {**summary, "written": summary["outputs"]}
