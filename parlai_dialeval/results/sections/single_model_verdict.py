"""The single-model analysis's verdict (verdict.single_model on the Likert means, success rates and tests)."""
from __future__ import annotations

from parlai_dialeval.results.section import Section


def compute(inputs, config, done: dict) -> list[str]:
    from parlai_dialeval import verdict

    tables = done["core"].tables
    return verdict.single_model(tables["likert"], tables["success_rates"], tables["ttests"], config.alpha,
                                inputs.label)


SECTION = Section("verdict", compute, sentences=lambda part: part, title="Verdict")
