"""An LLM judge beside the people in the pairwise analysis (adaptive/ppi_pairwise.py): PPI++ win rates and
Bradley-Terry scores next to the human-only ones. Its input is the judge's comparisons (``dialeval judge``
output), which the command reads from ``--judge``."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section

HELP = ("a `dialeval judge` output (canonical JSON Lines) on these items and more: adds prediction-powered "
        "(PPI++) estimates next to the human-only ones, clustered by item, with the judge's power-tuning weight "
        "and the human judgments it was worth (docs/ppi.md)")


@dataclass
class Judged:
    win_rates: pd.DataFrame
    bradley_terry: pd.DataFrame
    source: str | None  # the judge's file, where read from one
    records: int


def ppi_summary(table: pd.DataFrame) -> dict:
    """Rows estimated, those where the judge was set aside (weight below WEIGHT_NEGLIGIBLE), the median weight."""
    from parlai_dialeval.adaptive.ppi import WEIGHT_NEGLIGIBLE

    estimated = table[table["judge_weight"].notna()]
    return {"estimated": int(len(estimated)),
            "judge_set_aside": int((estimated["judge_weight"] < WEIGHT_NEGLIGIBLE).sum()),
            "median_judge_weight": float(estimated["judge_weight"].median()) if len(estimated) else None}


def compute(inputs, config, done: dict) -> Judged | None:
    from parlai_dialeval.adaptive import ppi_pairwise

    if inputs.judge is None:
        return None
    return Judged(ppi_pairwise.win_rates(inputs.comparisons, inputs.judge, config.alpha),
                  ppi_pairwise.bradley_terry(inputs.comparisons, inputs.judge, config.alpha), config.judge,
                  int(len(inputs.judge)))


def summary(part: Judged) -> dict:
    return {"judge": {"file": part.source, "judge_records": part.records, "win_rates": ppi_summary(part.win_rates),
                      "human_unjudged": int(part.win_rates["human_unjudged"].sum())}}


SECTION = Section("ppi", compute,
                  tables=lambda part: {"ppi_win_rates": part.win_rates, "ppi_bradley_terry": part.bradley_terry},
                  summary=summary, title="With the LLM judge",
                  config=(("judge", str | None, option(None, HELP, metavar="F.jsonl")),))
