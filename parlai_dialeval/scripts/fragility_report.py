"""The fragility section of the pairwise reports (analyze_pairwise, certify): the fewest votes and workers whose
removal reverses each result (results/sections/fragility.py computes it)."""
from __future__ import annotations


def view(report, part, result=None, section=None) -> None:
    report.heading("How fragile the results are")
    report.text("The fewest votes (and workers) whose removal reverses a result: for a pair's win rate exact "
                "(dropping the leader's wins, or its most one-sided workers, first); for the Bradley-Terry order the "
                "influence-based estimate of Huang et al. (arXiv 2508.11847), confirmed by refitting without them "
                "(fragility_rankings.csv: first_order_estimate and votes_to_reverse). A result that a handful of "
                "votes reverses rests on those votes, whatever its p-value.")
    for sentence in part.rankings["sentence"]:
        report.text(sentence)
    for sentence in part.pairs["sentence"]:
        report.text(sentence)
