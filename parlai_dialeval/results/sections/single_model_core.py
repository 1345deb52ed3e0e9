"""The single-model analysis's core (analysis/single_model_tables.py): SM-Turn success rates, SM-Dialog Likert
summaries, tests between models, effective win rates and weighted combinations, and what the reader must be
warned of (tests resting on few conversations, nothing testable)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.analysis import single_model as sm
from parlai_dialeval.analysis.multiple_testing import CORRECTIONS, DEFAULT_CORRECTION, HELP
from parlai_dialeval.options import option, turn_range, turns_text, weightings, weightings_text
from parlai_dialeval.results.section import Section

# Fewer conversations than this per model in a test: the report warns that the test is weak.
SMALL_N = 5


@dataclass
class SingleModelCore:
    tables: dict  # name -> DataFrame, as the command writes them
    warnings: list[str]


def compute(inputs, config, done: dict) -> SingleModelCore:
    from parlai_dialeval.analysis import single_model_tables

    tables = single_model_tables.tables(inputs.turn, inputs.dialog, config, inputs.pairs, inputs.label)
    if inputs.worker_checks is not None:
        tables["worker_checks"] = inputs.worker_checks.table
    return SingleModelCore(tables, _warnings(tables["ttests"], config))


def _warnings(tests: pd.DataFrame, config) -> list[str]:
    out = []
    small = tests[(tests["n_a"] < SMALL_N) | (tests["n_b"] < SMALL_N)]
    if len(small):
        out.append(f"{len(small)} of {len(tests)} test(s) rest on fewer than {SMALL_N} conversations for a model: "
                   "their intervals are wide and their tests weak.")
    untested = tests[tests["note"] != ""]
    for note, count in untested["note"].value_counts().items():
        out.append(f"{count} comparison(s) without a test ({note.removeprefix('no test: ')}).")
    if not len(tests):
        out.append("Nothing could be tested: fewer than two models have SM ratings.")
    elif tests["p"].isna().all():
        out.append("Nothing could be tested: no pair of models has two or more conversations each with varying "
                   "scores.")
    elif not (tests["p_adjusted"] < config.alpha).any():
        out.append(f"No difference reached p < {config.alpha:g}" + (" after correction." if config.correction != "none"
                                                                     else "."))
    return out


SECTION = Section(
    "core", compute, tables=lambda part: part.tables, sentences=lambda part: part.warnings,
    title="Success rates, Likert scores and tests",
    config=(
        ("sm_turns", tuple[int, int] | None, option(
            sm.DEFAULT_SM_TURNS, "Bot Speaker turns FIRST-LAST for the subset (WTA, t-tests, win rates, "
                                 "combination), or 'all' (Smith 4.4.1)", parse=turn_range,
            metavar="FIRST-LAST", shown=turns_text(sm.DEFAULT_SM_TURNS))),
        ("reference", str | None, option(None, "compare this model with each other model (default: every pair)")),
        ("n_boot", int, option(1000, "bootstrap resamples for effective win rates (>= 1)", kind="positive_int")),
        ("seed", int, option(0, "random seed (>= 0)", kind="non_negative_int")),
        ("weights", list, option(list(sm.DEFAULT_WEIGHTS), "SM-Turn:SM-Dialog weightings for the App. G "
                                 "combination, comma separated", parse=weightings, metavar="T:D,...",
                                 shown=weightings_text(sm.DEFAULT_WEIGHTS))),
        ("alpha", float, option(0.05, "significance level; intervals are 1 - alpha (0 < alpha < 1)",
                                kind="probability")),
        ("correction", str, option(DEFAULT_CORRECTION, HELP, choices=CORRECTIONS)),
    ))
