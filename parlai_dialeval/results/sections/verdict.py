"""The pairwise analysis's verdict: one paragraph per question and unit from the win rates (verdict.pairwise),
each settled pair with how few removals would lose its significance (analysis/significance_loss.py; the
fragility section reports the same table as fragility_significance.csv)."""
from __future__ import annotations

from parlai_dialeval.results.section import Section


class Verdict(list):
    """The verdict's paragraphs, with ``losses``: the significance-loss table they were written from."""

    def __init__(self, paragraphs, losses):
        super().__init__(paragraphs)
        self.losses = losses


def losses_of(inputs, config, rates):
    from parlai_dialeval.analysis.significance_loss import significance_loss

    return significance_loss(inputs.comparisons, rates, config.alpha, config.correction)


def compute(inputs, config, done: dict) -> Verdict:
    from parlai_dialeval import verdict

    rates = done["core"].tables["win_rates"]
    losses = losses_of(inputs, config, rates)
    return Verdict(verdict.pairwise(rates, config.alpha, losses), losses)


SECTION = Section("verdict", compute, sentences=lambda part: list(part), title="Verdict")
