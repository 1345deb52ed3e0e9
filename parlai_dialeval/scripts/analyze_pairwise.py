"""dialeval analyze_pairwise: win rates, rankings and agreement of pairwise (A/B) human judgements, per
question and per unit of judgement (turn, dialog, response).

CLI glue only: results/pairwise_result.py computes every section into a PairwiseResult (the same object
``parlai_dialeval.results.pairwise`` gives a notebook), scripts/pairwise_report.py shows it, and this command
writes its tables, agreement.json and report.html. See docs/pairwise_analysis.md.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from parlai.core.script import register_script

from parlai_dialeval.analysis.completeness import finished_only
from parlai_dialeval.analysis.pairwise_tables import WIN_RATE_COLUMNS
from parlai_dialeval.results.pairwise_result import PairwiseConfig
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs

__all__ = ["WIN_RATE_COLUMNS", "PairwiseConfig", "analyze", "AnalyzePairwise"]


def analyze(comparisons: pd.DataFrame, out: Path, config=None, log=print, worker_checks=None,
            left_out: dict[str, int] | None = None, judge: pd.DataFrame | None = None,
            conversation_style: pd.DataFrame | None = None, evidence=None) -> dict:
    """Compute everything per question and unit (``parlai_dialeval.results.pairwise``), write the CSV/JSON
    outputs and report.html into ``out``; returns the tables, the summary, the files written and the
    PairwiseResult (``result``). ``worker_checks``: a WorkerChecks (already applied to the data) or None;
    ``left_out``: counts of judgments the caller left out, and why (shown in the report); ``judge``: an LLM
    judge's comparisons (``dialeval judge`` output) for the PPI++ section, or None; ``conversation_style``:
    style_features.conversation_features of the conversations ACUTE / PW-Dialog votes compare (style control);
    ``evidence``: the evidence about participants (scripts/evidence_option.py), whose rule --exclude-flagged
    applies, or None (the voter tests alone)."""
    from parlai_dialeval import results
    from parlai_dialeval.scripts import pairwise_report

    result = results.pairwise(comparisons, judge=judge, conversation_style=conversation_style,
                              worker_checks=worker_checks, left_out=left_out, evidence=evidence,
                              config=config if config is not None else PairwiseConfig())
    voters, inputs = result.voters, result.inputs
    gone = f"; their {voters.left_out} votes left out" if voters.left_out else ""
    if voters.by_evidence and voters.left_out:
        gone = f"; the {voters.left_out} votes of the {voters.workers_left_out} worker(s) the evidence table flags " \
               "left out"
    log(f"voter tests: {len(voters.flags.flagged)} of {voters.flags.workers} workers flagged{gone}")
    log(f"{len(inputs.comparisons)} comparisons ({inputs.automatic} automatic ties); {inputs.onboarding} onboarding "
        "excluded" + "".join(f"; left out {n} {why}" for why, n in inputs.voided.items()))
    tables, summary = result.tables, result.summary
    written = Outputs(tables, {"agreement": summary}, pairwise_report.build(result, out)).write(out)
    return {**tables, "summary": summary, "written": written, "result": result}


@register_script("analyze_pairwise")
class AnalyzePairwise(AnalysisCommand):
    description = ("Win rates, rankings and agreement of pairwise (A/B, PW-Turn, PW-Dialog/ACUTE-Eval) judgements, "
                   "per question")
    options_title = "Pairwise analysis"
    config_class = PairwiseConfig
    worker_checks = True
    evidence_applies = True
    excludes_itself = True  # in its voter section (results/sections/voters.py), by the evidence table's rule

    def analyse(self, data, config, checks, out):
        _, comparisons, left_out = finished_only(data.ratings.iloc[:0], data.comparisons, data.conversations)
        for reason, count in left_out.items():
            print(f"left out {count} {reason}")
        judge = None
        if config.judge:
            from parlai_dialeval.judge.output import load_judge

            judge = load_judge(config.judge, "comparisons")
        style = None
        if config.style_control != "off" and comparisons.get("conversation_a", pd.Series(dtype=object)).notna().any():
            from parlai_dialeval.metrics.style_features import conversation_features

            style = conversation_features(data.turns())
        return analyze(comparisons, out, config, worker_checks=checks, left_out=left_out, judge=judge,
                       conversation_style=style, evidence=self.evidence)
