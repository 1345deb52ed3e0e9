"""The item pool of a task's design, read directly for `dialeval judge --design` (docs/ppi.md): a lab
judges the items an adaptive launch with a judge will draw from before anyone votes.

A/B: the task's items file (``ab.items_file``) is that pool: every item whose two responses differ
(identical ones are automatic ties, never shown), matched to the launch by item id and model pair.
ACUTE: the launch draws its conversation pairs from the conversations files and ``acute.seed``; the pool
is built from the launch's own Hydra overrides by the launch's own function (acute/task.py's
``fixed_design``), so its ``pair_id``s hold the conversations the launch will show.
"""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.data.dataset import EvalData
from parlai_dialeval.data.schema import columns_of
from parlai_dialeval.errors import DialevalError


def ab_design(path: str) -> EvalData:
    """The items of an A/B items file as comparison rows without a vote (what `judge.items.build_items`
    reads: item, model pair, question, context, responses), in the file's order."""
    from parlai_dialeval.crowdsourcing.ab_next_utterance.protocol import QUESTION, is_identical
    from parlai_dialeval.crowdsourcing.ab_next_utterance.task import read_items

    rows = [{"item_id": item.item_id, "model_a": item.model_x, "model_b": item.model_y, "question": QUESTION,
             "context": list(item.context), "response_a": item.response_x, "response_b": item.response_y}
            for item in read_items(path) if not is_identical(item)]
    return EvalData(comparisons=pd.DataFrame(rows, columns=columns_of("comparison")))


def acute_design(overrides: list[str]) -> EvalData:
    """The conversation pairs an ACUTE launch with these Hydra overrides (the words after `dialeval launch
    acute`) deals, as comparison rows without a vote: item = ``pair_id``, model_a the left speaker,
    conversation_a/b and the question's wording, as the export writes them; with the conversations once each.
    In the launch's order (unit by unit)."""
    from parlai_dialeval.crowdsourcing.acute.protocol import question_text
    from parlai_dialeval.crowdsourcing.acute.task import fixed_design
    from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY
    from parlai_dialeval.crowdsourcing.platform.config import compose
    from parlai_dialeval.crowdsourcing.platform.registry import get_task

    args = compose(get_task("acute"), overrides).acute
    try:
        question = question_text(args.question)
    except ValueError as error:
        raise DialevalError(f"acute.question: {error}") from None
    units, _, _ = fixed_design(args, judged=True)  # bad conversations: a DataError naming the files
    pairs = [pair for unit in units for pair in unit[SERVER_KEY]["pairs"]]
    rows = [{"item_id": p["pair_id"], "model_a": p["left"]["model"], "model_b": p["right"]["model"],
             "question": question, "conversation_a": p["left"]["conversation"]["id"],
             "conversation_b": p["right"]["conversation"]["id"]} for p in pairs]
    conversations = {}
    for pair in pairs:
        for side in ("left", "right"):
            conversations.setdefault(pair[side]["conversation"]["id"], pair[side]["conversation"])
    return EvalData(conversations=pd.DataFrame(list(conversations.values()), columns=columns_of("conversation")),
                    comparisons=pd.DataFrame(rows, columns=columns_of("comparison")))


DESIGNS = {"ab": "an A/B task's items file (ab.items_file)",
           "acute": "the ACUTE launch's Hydra overrides (the words after `dialeval launch acute`, acute.seed set)"}


def read_design(protocol: str, design: list[str]) -> EvalData:
    """`dialeval judge --design`'s input for ``protocol`` (``pw_dialog`` is ACUTE's protocol name)."""
    kind = {"pw_dialog": "acute"}.get(protocol, protocol)
    if kind not in DESIGNS:
        raise DialevalError(f"--design reads {DESIGNS['ab']} (--protocol ab) or {DESIGNS['acute']} (--protocol "
                            f"acute), not a {protocol} design")
    if kind == "ab":
        if len(design) != 1:
            raise DialevalError(f"--design with --protocol ab: one items file, got {len(design)} values")
        return ab_design(design[0])
    return acute_design(design)
