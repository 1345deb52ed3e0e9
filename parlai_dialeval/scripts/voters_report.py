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
                "workers' majority on the same pair more often than their tastes explain; answers faster than "
                "reading allows; votes for one model more often than the other workers' share of votes for it on "
                "the same pairs and the worker's own taste explain (rigging one model, or clicking at random). "
                "Honest tastes differ: how much, the crowd says"
                + (f" (SD {flags.taste_sd:.2g} logits allowed)" if flags.taste_sd is not None else "") + ". The "
                "evidence is an e-process, valid however often this is run; a worker is flagged when one test's "
                f"e-value reaches (tests x workers) / alpha (x models for the two crowd tests), so the chance that any honest "
                f"worker is flagged is at most alpha = {flags.alpha:g}. A flag is evidence that the worker's votes "
                "are not what an honest worker's would be with a taste within the crowd's spread: a side, a speed, "
                "or one model far beyond any such taste. It is not proof of bad faith (a person whose liking for a "
                "model is far stronger than anyone else's votes as a rigger does), and no flag is no proof of good "
                "faith (riggers with few votes, riggers who are most of a model's workers, and riggers in a crowd "
                "of very wide tastes are not told apart).")
    for test, how in flags.tests.items():
        report.text(f"{test}: {how}", note=how.startswith("not run"))
    said = sentences(part)
    report.text(said[0], note=bool(flags.flagged or part.left_out))
    for line in said[1:]:
        report.text(line)
    report.table(flags.table.head(20), caption="the 20 strongest pieces of evidence (voter_flags.csv: all)",
                 floatfmt="{:.4g}")
