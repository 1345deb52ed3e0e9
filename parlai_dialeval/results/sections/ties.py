"""Ties as information in the pairwise reports (analysis/ties.py): per question and unit, the Bradley-Terry-
Davidson fit (a tie parameter nu) beside the plain fit (a tie half a win), tie and 'both bad' rates per model,
and how well the question separates the models."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section

TIES_HELP = ("auto: per question, a Bradley-Terry-Davidson fit that treats ties as information (a tie parameter "
             "nu) beside the plain fit (a tie half a win), with tie and 'both bad' rates per model; off: skip it")


@dataclass
class PerQuestion:
    """A fit per question and unit: a row per model, the question's figures, what it says, and the sentences
    that change the conclusion (the report's first screen)."""

    table: pd.DataFrame
    figures: pd.DataFrame
    sentences: list[str]
    verdicts: list[str]


def per_question(comparisons: pd.DataFrame, section_fit, words, alpha: float) -> PerQuestion | None:
    """``section_fit`` (comparisons, alpha -> (table, figures)) on each question and unit; ``words`` (question,
    unit, figures, table -> sentences) says it; a sentence about the order changing goes to the verdicts."""
    tables, rows, said, verdicts = [], [], [], []
    for (question, unit), part in comparisons.groupby(["question", "unit"], sort=False):
        table, figures = section_fit(part, alpha)
        if table.empty:
            continue
        tables.append(table.assign(question=question, unit=unit))
        rows.append({"question": question, "unit": unit, **figures})
        lines = words(question, unit, figures, table)
        said += lines
        verdicts += [line for line in lines if "changes the order" in line]
    if not tables:
        return None
    table = pd.concat(tables, ignore_index=True)
    table = table[["question", "unit", *[c for c in table.columns if c not in ("question", "unit")]]]
    return PerQuestion(table, pd.DataFrame(rows), said, verdicts)


def compute(inputs, config, done: dict) -> PerQuestion | None:
    from parlai_dialeval.analysis import ties

    if config.ties == "off":
        return None
    return per_question(inputs.comparisons, ties.section_fit, lambda *args: [ties.sentence(*args)], config.alpha)


SECTION = Section(
    "ties", compute, tables=lambda part: {"ties": part.table, "ties_questions": part.figures},
    summary=lambda part: {"ties": {"sentences": part.sentences}}, sentences=lambda part: part.sentences,
    title="Ties as information (Bradley-Terry-Davidson)",
    config=(("ties", str, option("auto", TIES_HELP, choices=("auto", "off"))),))
