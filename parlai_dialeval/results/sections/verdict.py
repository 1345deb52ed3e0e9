"""The pairwise analysis's verdict: one paragraph per question and unit from the win rates (verdict.pairwise)."""
from __future__ import annotations

from parlai_dialeval.results.section import Section


def compute(inputs, config, done: dict) -> list[str]:
    from parlai_dialeval import verdict

    return verdict.pairwise(done["core"].tables["win_rates"], config.alpha)


SECTION = Section("verdict", compute, sentences=lambda part: part, title="Verdict")
