"""The pairwise analysis's core: win rates, rankings, agreement, annotators and items, WMT scores, the
per-conversation and per-turn tables of PW-Turn, responses (analysis/pairwise_tables.py), with its summary
and what the reader must be warned of (pairs too small to test)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.analysis.multiple_testing import CORRECTIONS, DEFAULT_CORRECTION, HELP
from parlai_dialeval.options import option, turn_range
from parlai_dialeval.results.section import Section

# Fewer decided votes than this in a pair: the report warns that its interval is wide.
SMALL_PAIR = 10


@dataclass
class Core:
    tables: dict  # name -> DataFrame (None where the data have none)
    summary: dict
    warnings: list[str]


def compute(inputs, config, done: dict) -> Core:
    from parlai_dialeval.analysis import pairwise_tables

    tables = pairwise_tables.tables(inputs.comparisons, config)
    summary = pairwise_tables.summary(inputs.comparisons, tables, config, inputs.automatic, inputs.onboarding)
    if inputs.worker_checks is not None:
        summary["worker_checks"] = inputs.worker_checks.summary()
        tables["worker_checks"] = inputs.worker_checks.table
    summary["left_out"] = dict(inputs.left_out)
    summary["voided"] = dict(inputs.voided)
    return Core(tables, summary, _warnings(tables["win_rates"], config.alpha))


def _warnings(rates: pd.DataFrame, alpha: float) -> list[str]:
    out = []
    decided = rates["wins_a"] + rates["wins_b"]
    small = rates[decided < SMALL_PAIR]
    if len(small):
        out.append(f"{len(small)} of {len(rates)} model pair(s) have fewer than {SMALL_PAIR} decided votes (ties "
                   "excluded): their Wilson intervals are wide and their tests weak.")
    # The test counts items (clusters) won and lost, not votes: with n of them its smallest two-sided p is
    # 2 * 0.5^n, however many votes each holds; below it nothing can be significant.
    items = (rates["clusters_won_a"] + rates["clusters_won_b"]).astype(float)
    hopeless = rates[(2 * 0.5 ** items) >= alpha]
    if len(hopeless):
        out.append(f"{len(hopeless)} pair(s) have too few decided votes on different items for any result to reach "
                   f"p < {alpha:g}: the test counts items won and lost (clusters_won_a, clusters_won_b), and its "
                   "smallest possible two-sided p with n of them is 2 x 0.5^n.")
    if rates["question"].nunique() > 1 or rates["unit"].nunique() > 1:
        out.append(f"The data hold {rates[['question', 'unit']].drop_duplicates().shape[0]} questions or units of "
                   "judgement; every result below is per question and unit, never pooled.")
    return out


SECTION = Section(
    "core", compute, tables=lambda part: part.tables, summary=lambda part: part.summary,
    sentences=lambda part: part.warnings, title="Win rates, rankings and agreement",
    config=(
        ("turns", tuple[int, int] | None, option(
            None, "restrict per-conversation win rates (linear, squared, winner-takes-all) to these 1-based Bot "
                  "Speaker turns, e.g. 2-6 (PW-Turn data); default all", parse=turn_range, metavar="FIRST-LAST")),
        ("bootstrap_rounds", int, option(1000, "bootstrap rounds for Bradley-Terry intervals (>= 1; with fewer "
                                               "than 100, bt_note and the report say they are rough)",
                                         kind="positive_int")),
        ("seed", int, option(0, "random seed of the bootstrap (>= 0)", kind="non_negative_int")),
        ("alpha", float, option(0.05, "significance level; intervals are 1 - alpha (0 < alpha < 1)",
                                kind="probability")),
        ("correction", str, option(DEFAULT_CORRECTION, HELP, choices=CORRECTIONS)),
        ("min_annotator_items", int, option(5, "items an annotator must share with others to get a correlation",
                                            kind="positive_int")),
    ))
