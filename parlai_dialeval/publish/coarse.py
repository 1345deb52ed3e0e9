"""What a published dataset keeps of how the answers were made and of the check items (docs/publishing.md, "How
answers were made"): a coarse form only, applied before anything else (``coarse_integrity``).

The pages' records (``provenance``: keys typed and pasted, key timing, pauses, time on each screen, tab switches;
docs/data_model.md) describe a person's behaviour in detail, and timings can single a person out across datasets;
the answers to attention checks and gold items say how attentive a named (if pseudonymised) participant was. So a
published dataset keeps, per free text (a message, a justification, the feedback), only the share of it that was
pasted, rounded to a quarter; screen records and everything else of the records are left out, and so are the
answers to check items (they judge no model, and every analysis sets them aside anyway).
"""
from __future__ import annotations

import pandas as pd

PASTED_STEP = 0.25  # the published pasted share is rounded to this


def pasted_share(record) -> dict | None:
    """A text record's coarse form: {"pasted_share": pasted and dropped characters over all it saw, to the nearest
    quarter}; None where the record saw no characters (or is not one)."""
    if not isinstance(record, dict):
        return None
    pasted = int(record.get("pasted", 0) or 0) + int(record.get("dropped", 0) or 0)
    seen = pasted + int(record.get("typed", 0) or 0)
    if seen <= 0:
        return None
    return {"pasted_share": round(round(pasted / seen / PASTED_STEP) * PASTED_STEP, 2)}


def _turns(turns):
    if not isinstance(turns, list):
        return turns
    out = []
    for turn in turns:
        if isinstance(turn, dict) and "provenance" in turn:
            coarse = pasted_share(turn["provenance"])
            turn = {k: v for k, v in turn.items() if k != "provenance"}
            if coarse:
                turn["provenance"] = coarse
        out.append(turn)
    return out


def _nested(record, key: str):
    coarse = pasted_share(record.get(key)) if isinstance(record, dict) else None
    return {key: coarse} if coarse else None


def coarse_integrity(data):
    """(the data in its published form, {record type: answers to check items left out}): see the module docstring."""
    from parlai_dialeval.data import EvalData

    kept, _, left = data.without_checks()
    conversations = kept.conversations.copy()
    if "turns" in conversations.columns:
        conversations["turns"] = conversations["turns"].map(_turns)
    if "provenance" in conversations.columns:
        conversations["provenance"] = conversations["provenance"].map(lambda r: _nested(r, "feedback"))
    ratings = kept.ratings.drop(columns=["provenance", "check"], errors="ignore")
    comparisons = kept.comparisons.drop(columns=["check"], errors="ignore")
    if "provenance" in comparisons.columns:
        comparisons = comparisons.assign(provenance=comparisons["provenance"].map(
            lambda r: _nested(r, "justification")).astype(object))
    for frame in (conversations, comparisons):
        if "provenance" in frame.columns:
            frame["provenance"] = frame["provenance"].where(frame["provenance"].notna(), None)
    return EvalData(data.studies, conversations, ratings, pd.DataFrame(comparisons)), left
