"""The live-chat analysis's verdict: the best model's overall score and which models it is significantly above
(verdict.scores on the per-model intervals and the corrected pairwise tests)."""
from __future__ import annotations

from parlai_dialeval.results.section import Section


def compute(inputs, config, done: dict) -> list[str]:
    from parlai_dialeval import verdict

    core = inputs.core
    return [verdict.scores(core.intervals, "model", "mean", "ci_low", "ci_high",
                           "overall (mean per-conversation z of passing workers)", core.significance, 0.05,
                           "p_adjusted", "sd", "n_conversations")]


SECTION = Section("verdict", compute, sentences=lambda part: part, title="Verdict")
