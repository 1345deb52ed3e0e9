"""How fragile the pairwise results are (analysis/fragility.py): the fewest votes and workers whose removal
reverses each pair's win rate and the Bradley-Terry order, and (analysis/significance_loss.py) the fewest whose
removal takes a settled pair's significance away."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.results.section import Section

BT_PAIRS = 10  # adjacent pairs of the Bradley-Terry order checked, from the top


@dataclass
class Fragility:
    pairs: pd.DataFrame
    rankings: pd.DataFrame
    significance: pd.DataFrame | None = None  # None: not computed (no win rates to settle)


def of(comparisons: pd.DataFrame, bt_pairs: int = BT_PAIRS, significance: pd.DataFrame | None = None) -> Fragility:
    from parlai_dialeval.analysis.fragility import bt_fragility, pair_fragility

    return Fragility(pair_fragility(comparisons), bt_fragility(comparisons, pairs=bt_pairs), significance)


def compute(inputs, config, done: dict) -> Fragility:
    from parlai_dialeval.results.sections.verdict import losses_of

    said = done.get("verdict")  # the verdict computed the same table from the same votes
    losses = getattr(said, "losses", None)
    if losses is None and done.get("core") is not None:
        losses = losses_of(inputs, config, done["core"].tables["win_rates"])
    return of(inputs.comparisons, significance=losses)


def _tables(part: Fragility) -> dict:
    tables = {"fragility_pairs": part.pairs, "fragility_rankings": part.rankings}
    if part.significance is not None:
        tables["fragility_significance"] = part.significance
    return tables


def _summary(part: Fragility) -> dict:
    said = {"pairs": part.pairs["sentence"].tolist(), "rankings": part.rankings["sentence"].tolist()}
    if part.significance is not None:
        said["significance"] = part.significance["sentence"].tolist()
    return {"fragility": said}


def _sentences(part: Fragility) -> list[str]:
    losses = [] if part.significance is None else part.significance["sentence"].tolist()
    return losses + part.rankings["sentence"].tolist() + part.pairs["sentence"].tolist()


SECTION = Section("fragility", compute, tables=_tables, summary=_summary, sentences=_sentences,
                  title="How fragile the results are")
