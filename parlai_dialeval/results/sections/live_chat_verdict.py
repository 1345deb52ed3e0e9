"""The live-chat analysis's verdict: the best model's overall score and which models it is significantly above
(verdict.scores on the per-model intervals and the corrected pairwise tests), or why no model has a score."""
from __future__ import annotations

from parlai_dialeval.results.section import Section


def why_no_scores(summary: dict, qc_off: bool) -> str:
    """Why no model has an overall score, in words (the verdict's reason where none has)."""
    if not summary["n_dialogues"]:
        return "no conversation with a genuine model was rated in a submitted assignment"
    if not qc_off and not summary["n_workers_passed"]:
        return (f"no worker passed quality control (the {summary['n_workers']:,} who submitted all failed it: "
                "Worker quality control below says why)")
    return "no rated genuine-model conversation is left to score"


def compute(inputs, config, done: dict) -> list[str]:
    from parlai_dialeval import verdict

    core = inputs.core
    qc_off = core.settings.config.qc_test == "none"
    return [verdict.scores(core.intervals, "model", "mean", "ci_low", "ci_high",
                           "overall (mean per-conversation z of " + ("all workers)" if qc_off else "passing workers)"),
                           core.significance, 0.05, "p_adjusted", "sd", "n_conversations",
                           why=why_no_scores(core.summary, qc_off))]


SECTION = Section("verdict", compute, sentences=lambda part: part, title="Verdict")
