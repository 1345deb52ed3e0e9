"""The section on results by the people who judged in the pairwise and live-chat reports (results/sections/groups.py
computes it): what changes the conclusion on the first screen, then each table."""
from __future__ import annotations

GROUPS_TEXT = ("Each worker's group comes from the participants file (--participants), joined on worker_id; the "
               "attributes stay here, in group-level numbers only. Each group's intervals are at 1 - alpha / K for K "
               "groups (Bonferroni: all K hold together with probability 1 - alpha), clustered by worker (and, for "
               "votes, by item): one person's taste moves their judgements together. Whether the groups disagree is "
               "a test of a group x model interaction whose p-value comes from shuffling the groups' labels across "
               "workers: it holds its level however one worker's judgements depend on each other. "
               "docs/pairwise_analysis.md, \"Results by the people who judged\".")
WEIGHTS_TEXT = ("Weighted: each worker's votes count by the worker's raking weight, which makes the workers' shares of "
                "every attribute in the targets file exactly the target population's; Kish's effective sample size "
                "(sum w)^2 / sum w^2 says how many unweighted workers the weighted ones are worth. Intervals clustered "
                "by item and by worker at 1 - alpha.")


def view(report, part, result=None, section=None) -> None:
    if part is None:
        return
    for sentence in part.verdicts:
        report.verdict(sentence)
    report.heading("Results by the people who judged")
    for sentence in part.verdicts + part.sentences:
        report.text(sentence)
    if part.result is not None:
        report.text(GROUPS_TEXT)
        report.table(part.result.groups, caption="groups.csv: workers and votes per group (too small: not shown)")
        report.table(part.result.tests, caption="group_tests.csv: do the groups disagree? (permutation p-value)",
                     floatfmt="{:.3g}")
        report.table(part.result.rankings, caption=f"group_rankings.csv: {part.measure}", floatfmt="{:.3g}")
    if part.weighting is not None:
        report.text(WEIGHTS_TEXT)
        report.table(part.weighting.rankings, caption="weighted_rankings.csv: unweighted and weighted strengths "
                     "side by side", floatfmt="{:.3g}")
