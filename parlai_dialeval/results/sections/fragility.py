"""How fragile the pairwise results are (analysis/fragility.py): the fewest votes and workers whose removal
reverses each pair's win rate and the Bradley-Terry order."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.results.section import Section

BT_PAIRS = 10  # adjacent pairs of the Bradley-Terry order checked, from the top


@dataclass
class Fragility:
    pairs: pd.DataFrame
    rankings: pd.DataFrame


def of(comparisons: pd.DataFrame, bt_pairs: int = BT_PAIRS) -> Fragility:
    from parlai_dialeval.analysis.fragility import bt_fragility, pair_fragility

    return Fragility(pair_fragility(comparisons), bt_fragility(comparisons, pairs=bt_pairs))


def compute(inputs, config, done: dict) -> Fragility:
    return of(inputs.comparisons)


SECTION = Section(
    "fragility", compute,
    tables=lambda part: {"fragility_pairs": part.pairs, "fragility_rankings": part.rankings},
    summary=lambda part: {"fragility": {"pairs": part.pairs["sentence"].tolist(),
                                        "rankings": part.rankings["sentence"].tolist()}},
    sentences=lambda part: part.rankings["sentence"].tolist() + part.pairs["sentence"].tolist(),
    title="How fragile the results are")
