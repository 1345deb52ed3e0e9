"""The voter tests (adaptive/voter_flags.py) and fragility (analysis/fragility.py) in every pairwise command:
the options ``--exclude-flagged``, ``--side-share``, ``--words-per-second`` (fields each config declares
with the functions below) and the report sections, whether or not flagged workers are left out."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.options import option


def exclude_flagged_field():
    return option(False, "leave out every vote of the workers the evidence table flags (analysis/evidence.py, one "
                         "rule: a decisive signal, such as a voter test (one side, against the crowd, too fast, "
                         "rigging; family-wise error alpha over workers, models and tests) or failed attention "
                         "checks, or two others together); they are reported either way", metavar="BOOL")


def side_share_field():
    return option(0.8, "voter test 'position': an honest worker picks side A (or B) at most this share of decided "
                       "votes (0 < x < 1)", kind="probability")


def words_per_second_field():
    return option(10.0, "voter test 'too_fast': a vote is too fast under max(1 s, words of the two responses / this "
                        "reading rate); runs only where records hold durations (> 0)", kind="positive")


def flag_and_exclude(comparisons: pd.DataFrame, config, log=print, evidence=None):
    """(the comparisons to analyse, VoterFlags, votes left out): flagged workers' votes left out only when
    ``config.exclude_flagged``; with ``evidence`` (scripts/evidence_option.py) its voter flags, and the workers its
    rule flags (analysis/evidence.py), else the voter tests' alone."""
    from parlai_dialeval.adaptive.voter_flags import VoterSettings, flag_voters

    flags = getattr(evidence, "voters", None)
    if flags is None:
        flags = flag_voters(comparisons, VoterSettings(alpha=config.alpha, side_share=config.side_share,
                                                       words_per_second=config.words_per_second))
    out = set(evidence.flagged) if evidence is not None else set(flags.flagged)
    left_out = 0
    if config.exclude_flagged and out:
        leaving = comparisons["worker_id"].astype(str).isin(out)
        comparisons, left_out = comparisons[~leaving], int(leaving.sum())
    log(f"voter tests: {len(flags.flagged)} of {flags.workers} workers flagged"
        + (f"; the {left_out} votes of the {len(out)} worker(s) the evidence table flags left out" if left_out else ""))
    return comparisons, flags, left_out


def add_voter_flags(report, flags, left_out: int, exclude: bool, tables: dict, summary: dict) -> None:
    tables["voter_flags"] = flags.table
    summary["voter_flags"] = {**flags.summary(), "excluded": bool(exclude), "votes_left_out": left_out}
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
    lines = flags.sentences()
    action = (f"{left_out} votes are left out of everything below (those of every worker the evidence table flags, "
              "by its one rule: docs/data_model.md, \"Evidence about participants\")" if exclude
              else "their votes are kept (--exclude-flagged true leaves them out)")
    report.text(f"{len(flags.flagged)} worker(s) flagged; {action}." if lines else "No worker flagged.",
                note=bool(lines))
    for line in lines:
        report.text(line)
    report.table(flags.table.head(20), caption="the 20 strongest pieces of evidence (voter_flags.csv: all)",
                 floatfmt="{:.4g}")


def add_fragility(report, comparisons: pd.DataFrame, tables: dict, summary: dict, bt_pairs: int = 10) -> None:
    """Each pair's and the Bradley-Terry order's fragility, in words and as tables."""
    from parlai_dialeval.analysis.fragility import bt_fragility, pair_fragility

    pairs, orders = pair_fragility(comparisons), bt_fragility(comparisons, pairs=bt_pairs)
    tables["fragility_pairs"], tables["fragility_rankings"] = pairs, orders
    summary["fragility"] = {"pairs": pairs["sentence"].tolist(), "rankings": orders["sentence"].tolist()}
    report.heading("How fragile the results are")
    report.text("The fewest votes (and workers) whose removal reverses a result: for a pair's win rate exact "
                "(dropping the leader's wins, or its most one-sided workers, first); for the Bradley-Terry order the "
                "influence-based estimate of Huang et al. (arXiv 2508.11847), confirmed by refitting without them "
                "(fragility_rankings.csv: first_order_estimate and votes_to_reverse). A result that a handful of "
                "votes reverses rests on those votes, whatever its p-value.")
    for sentence in orders["sentence"]:
        report.text(sentence)
    for sentence in pairs["sentence"]:
        report.text(sentence)
