"""An LLM judge beside the people in the single-model analysis (adaptive/ppi_single_model.py): PPI++ SM-Turn
success rates (every turn) and SM-Dialog Likert means next to the human-only ones."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section
from parlai_dialeval.results.sections.ppi import HELP, ppi_summary


def compute(inputs, config, done: dict) -> pd.DataFrame | None:
    from parlai_dialeval.adaptive.ppi_single_model import ppi_means
    from parlai_dialeval.analysis import single_model as sm

    if inputs.judge is None:
        return None
    return pd.concat([ppi_means(inputs.turn, sm.sm_turn_ratings(inputs.judge), "sm_turn success rate (all turns)",
                                config.alpha),
                      ppi_means(inputs.dialog, sm.sm_dialog_ratings(inputs.judge), "sm_dialog likert mean",
                                config.alpha)], ignore_index=True)


SECTION = Section("ppi", compute, tables=lambda part: {"ppi_means": part},
                  summary=lambda part: {"judge": ppi_summary(part)}, title="With the LLM judge",
                  config=(("judge", str | None, option(None, HELP, metavar="F.jsonl")),))
