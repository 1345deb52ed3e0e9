"""Ties the worker called "both bad" (the arena's ``tie_kind``), reported apart from the other ties: every
statistic counts either as a tie; this section says, per question, unit and pair, how many of the workers' ties
were "both bad" (pairwise.both_bad_counts). None where no vote carries a tie kind."""
from __future__ import annotations

from parlai_dialeval.results.section import Section

SAID = ("A worker may call a pair a tie (both equally good) or \"both bad\"; every statistic counts either as a tie "
        "(tie_kind tells them apart in the data). Per question, unit and pair:")


def compute(inputs, config, done: dict):
    """The counts (a DataFrame: question, unit, model_a, model_b, ties, both_bad), or None."""
    from parlai_dialeval.analysis.pairwise import both_bad_counts

    comparisons = inputs.comparisons
    if "tie_kind" not in comparisons or not comparisons["tie_kind"].notna().any():
        return None
    return both_bad_counts(comparisons)


SECTION = Section("both_bad", compute, summary=lambda part: {"both_bad": part.to_dict(orient="records")},
                  sentences=lambda part: [SAID], title="Ties and \"both bad\"")
