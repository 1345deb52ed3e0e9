"""Provisional places in the pairwise rankings (analysis/provisional.py): too few votes, or one of several
variants of a family tested against the same opponents."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section


def compute(inputs, config, done: dict) -> pd.DataFrame:
    """analysis.provisional per question and unit, with the variants (a JSON file's path, or what it holds:
    {family: [model, ...]}; checked alike, results/user_files.py)."""
    from parlai_dialeval.analysis import provisional
    from parlai_dialeval.analysis.pairwise_tables import keyed, sections
    from parlai_dialeval.results.user_files import read_variants

    variants = read_variants(config.variants) if config.variants is not None else None
    parts = [keyed(provisional.from_comparisons(part, config.provisional_votes, variants, config.variant_pattern),
                   question, unit) for question, unit, part in sections(inputs.comparisons)]
    return pd.concat(parts, ignore_index=True)


def sentences(table: pd.DataFrame) -> list[str]:
    marked = table[table["provisional"]]
    if not len(marked):
        return ["No model is provisional."]
    return [f"{len(marked)} model(s) are provisional: " + "; ".join(
        f"{row.model} ({row.reason})" for row in marked.head(10).itertuples()) + ("; ..." if len(marked) > 10 else "")]


# Provisional results (issue 43): analysis/provisional.py says why each default.
SECTION = Section(
    "provisional", compute, tables=lambda part: {"provisional": part}, sentences=sentences,
    title="Provisional results",
    config=(
        ("provisional_votes", int, option(100, "a model with fewer worker votes than this is marked provisional",
                                          kind="positive_int")),
        ("variants", str | None, option(None, "JSON file {family: [model, ...]}: models of one family tested "
                                              "against the same opponents are marked provisional",
                                        metavar="F.json")),
        ("variant_pattern", str | None, option(None, "regular expression whose first group is a model's family, "
                                                     "e.g. '(.+)-exp-\\d+' (an alternative to --variants)",
                                               metavar="REGEX")),
    ))
