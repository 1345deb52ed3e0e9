"""The fragility section of the pairwise reports (analyze_pairwise, certify): the fewest votes and workers whose
removal reverses each result, or takes a settled pair's significance away (results/sections/fragility.py
computes it)."""
from __future__ import annotations


def view(report, part, result=None, section=None) -> None:
    from parlai_dialeval.analysis.fragility import MAX_FITS, TOLERANCE

    report.heading("How fragile the results are")
    report.text("The fewest votes (and workers) whose removal reverses a result: for a pair's win rate exact "
                "(dropping the leader's wins, or its most one-sided workers, first); for the Bradley-Terry order the "
                "influence-based estimate of Huang et al. (arXiv 2508.11847), confirmed by refitting without them "
                "(fragility_rankings.csv: first_order_estimate and votes_to_reverse), then made exact by trying "
                f"every smaller removal where that takes at most {MAX_FITS:,} refits (votes_exact, workers_exact; "
                "each sentence says which). A pair reverses when the other model's log-strength exceeds it by more "
                f"than {TOLERANCE:g} (a level pair is not reversed). A result that a handful of votes reverses "
                "rests on those votes, whatever its p-value.")
    losses = part.significance
    if losses is not None and len(losses):
        report.text("Fewer removals take a settled pair's significance away than reverse it: the fewest decided "
                    "votes (exact) and workers whose removal leaves its corrected p at or above alpha, the other "
                    "pairs' p as they are (fragility_significance.csv).")
        for sentence in losses["sentence"]:
            report.text(sentence)
    for sentence in part.rankings["sentence"]:
        report.text(sentence)
    for sentence in part.pairs["sentence"]:
        report.text(sentence)
