"""The item pool of a task's design, read directly for `dialeval judge --design` (docs/ppi.md): a lab
judges the items an adaptive launch with a judge will draw from before anyone votes. The A/B task's
items file (``ab.items_file``) is that pool: every item whose two responses differ (identical ones are
automatic ties, never shown), matched to the launch by item id and model pair."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.data.dataset import EvalData
from parlai_dialeval.data.schema import columns_of


def ab_design(path: str) -> EvalData:
    """The items of an A/B items file as comparison rows without a vote (what `judge.items.build_items`
    reads: item, model pair, question, context, responses), in the file's order."""
    from parlai_dialeval.crowdsourcing.ab_next_utterance.protocol import QUESTION, is_identical
    from parlai_dialeval.crowdsourcing.ab_next_utterance.task import read_items

    rows = [{"item_id": item.item_id, "model_a": item.model_x, "model_b": item.model_y, "question": QUESTION,
             "context": list(item.context), "response_a": item.response_x, "response_b": item.response_y}
            for item in read_items(path) if not is_identical(item)]
    return EvalData(comparisons=pd.DataFrame(rows, columns=columns_of("comparison")))
