"""The voter tests' section of the pairwise reports (analyze_pairwise, certify): who may not vote in good faith
(results/sections/voters.py computes it)."""
from __future__ import annotations


def view(report, part, result=None, section=None) -> None:
    from parlai_dialeval.results.sections.voters import sentences

    flags = part.flags
    report.heading("Voters who may not vote in good faith")
    report.text(f"Each of {flags.workers} workers' votes, in collection order ({flags.order}), is bet against four null hypotheses "
                "an honest worker satisfies (docs/pairwise_analysis.md, \"Voter tests\"): picks side A (or B) on more "
                "than the --side-share of decided votes (pairs shown in both orders only); votes against the other "
                "workers' majority on the same pair more often than not; answers faster than reading allows; votes "
                "for one model more often than the other workers' share of votes for it on the same pairs allows, "
                "with a margin for taste (rigging one model, or clicking at random). The "
                "evidence is an e-process, valid however often this is run; a worker is flagged when one test's "
                f"e-value reaches (tests x workers) / alpha (x models for rigging), so the chance that any honest "
                f"worker is flagged is at most alpha = {flags.alpha:g}.")
    for test, how in flags.tests.items():
        report.text(f"{test}: {how}", note=how.startswith("not run"))
    said = sentences(part)
    report.text(said[0], note=bool(flags.flagged or part.left_out))
    for line in said[1:]:
        report.text(line)
    report.table(flags.table.head(20), caption="the 20 strongest pieces of evidence (voter_flags.csv: all)",
                 floatfmt="{:.4g}")
