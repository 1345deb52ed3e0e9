"""Position effects per model in the pairwise reports (analysis/position.py): per question and unit, the
strengths net of a shared and a per-model effect of being shown first, beside the plain fit's, and a warning
where the design leaves a model's position confounded with its strength."""
from __future__ import annotations

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section
from parlai_dialeval.results.sections.ties import PerQuestion, per_question

POSITION_HELP = ("auto: per question, Bradley-Terry strengths net of the side each reply was shown on (model_a: "
                 "first, or left), with a shared and a per-model position effect (ridge), beside the plain fit; "
                 "off: skip it")


def compute(inputs, config, done: dict) -> PerQuestion | None:
    from parlai_dialeval.analysis import position

    if config.position_effects == "off":
        return None
    return per_question(inputs.comparisons, position.section_fit, position.sentences, config.alpha)


SECTION = Section(
    "position", compute, tables=lambda part: {"position": part.table, "position_questions": part.figures},
    summary=lambda part: {"position": {"sentences": part.sentences}}, sentences=lambda part: part.sentences,
    title="Position effects per model",
    config=(("position_effects", str, option("auto", POSITION_HELP, choices=("auto", "off"))),))
