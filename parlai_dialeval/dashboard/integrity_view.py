"""The dashboard's integrity page (``/integrity``): the evidence about each participant and the agreement so far,
from the task's records as ``dialeval export`` reads them, recomputed at each visit (analysis/evidence.py and
analysis/live_agreement.py: the same table and rule as the analysis commands' evidence.csv)."""
from __future__ import annotations

import numpy as np
import pandas as pd

SHOWN = ["worker_id", "flagged", "signals", "reasons", "rejection", "verified", "quality_test", "attention_items",
         "attention_right", "gold_items", "gold_right", "pasted_share", "typing_ms", "away_answers", "shared_texts",
         "median_seconds", "fast_share", "rating_alpha", "with_majority"]


def integrity(records: list[dict], quality: pd.DataFrame | None = None) -> dict:
    """The page's figures: ``rule``, ``rows`` (one per worker, flagged first), ``flagged``, ``notes`` (signals not
    run), ``rating_agreement`` (per criterion), ``votes`` (per question: with the majority, Krippendorff's alpha),
    ``gold`` (items and right over everyone); ``error`` when the records cannot be read yet."""
    from parlai_dialeval.analysis.evidence import RULE, evidence_table
    from parlai_dialeval.analysis.live_agreement import gold_accuracy, majority_agreement, rating_agreement
    from parlai_dialeval.data import from_records
    from parlai_dialeval.errors import DataError

    try:
        data = from_records(records)
    except DataError as error:  # a unit half-written: the page says so and shows the rest of the dashboard
        return {"error": str(error), "rule": RULE}
    kept, answers, _ = data.without_checks()
    votes = kept.comparisons
    if len(votes) and "onboarding" in votes:
        votes = votes[~votes["onboarding"].eq(True)]
    if len(votes) and "automatic" in votes:
        votes = votes[~votes["automatic"].eq(True)]
    voters = None
    if len(votes):
        from parlai_dialeval.adaptive.voter_flags import flag_voters

        voters = flag_voters(votes)
    checks = pd.concat([f for f in (answers.ratings, answers.comparisons) if len(f)], ignore_index=True) \
        if len(answers.ratings) or len(answers.comparisons) else None
    found = evidence_table(kept.conversations, kept.ratings, votes, checks, kept.studies, voters, quality)
    ratings, _ = rating_agreement(kept.ratings)
    by_question, _ = majority_agreement(votes)
    gold = gold_accuracy(checks) if checks is not None else pd.DataFrame(columns=["gold_items", "gold_right"])
    return {"rule": RULE, "flagged": len(found.flagged), "notes": found.notes, "error": "",
            "rows": _plain(found.table.reindex(columns=SHOWN)), "rating_agreement": _plain(ratings),
            "votes": _plain(by_question),
            "gold": {"items": int(gold["gold_items"].sum()), "right": int(gold["gold_right"].sum())}}


def _plain(frame: pd.DataFrame) -> list[dict]:
    """Rows for the template: NaN as None (shown empty), numpy scalars as Python ones."""
    return [{k: (None if isinstance(v, float) and np.isnan(v) else v.item() if isinstance(v, np.generic) else v)
             for k, v in row.items()} for row in frame.to_dict("records")]
