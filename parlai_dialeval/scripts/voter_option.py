"""The voter tests (adaptive/voter_flags.py) and fragility (analysis/fragility.py) in every pairwise command:
the options ``--exclude-flagged``, ``--side-share``, ``--words-per-second`` (fields each config declares
with the functions below) and the report sections, whether or not flagged workers are left out."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.options import option


def exclude_flagged_field():
    return option(False, "leave out every vote of the workers the voter tests flag (one side, against the crowd, "
                         "too fast, for one model far more often than the other workers' share for it allows: "
                         "rigging; family-wise error alpha over workers, models and tests); they are reported "
                         "either way", metavar="BOOL")


def side_share_field():
    return option(0.8, "voter test 'position': an honest worker picks side A (or B) at most this share of decided "
                       "votes (0 < x < 1)", kind="probability")


def words_per_second_field():
    return option(10.0, "voter test 'too_fast': a vote is too fast under max(1 s, words of the two responses / this "
                        "reading rate); runs only where records hold durations (> 0)", kind="positive")


def flag_and_exclude(comparisons: pd.DataFrame, config, log=print):
    """(the comparisons to analyse, VoterFlags, votes left out): flagged workers' votes left out only when
    ``config.exclude_flagged``."""
    from parlai_dialeval.adaptive.voter_flags import VoterSettings, exclude_flagged, flag_voters

    flags = flag_voters(comparisons, VoterSettings(alpha=config.alpha, side_share=config.side_share,
                                                   words_per_second=config.words_per_second))
    left_out = 0
    if config.exclude_flagged and flags.flagged:
        comparisons, left_out = exclude_flagged(comparisons, flags)
    log(f"voter tests: {len(flags.flagged)} of {flags.workers} workers flagged"
        + (f"; their {left_out} votes left out" if left_out else ""))
    return comparisons, flags, left_out


def add_voter_flags(report, flags, left_out: int, exclude: bool, tables: dict, summary: dict) -> None:
    tables["voter_flags"] = flags.table
    summary["voter_flags"] = {**flags.summary(), "excluded": bool(exclude), "votes_left_out": left_out}
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
    lines = flags.sentences()
    action = (f"their {left_out} votes are left out of everything below" if exclude
              else "their votes are kept (--exclude-flagged true leaves them out)")
    report.text(f"{len(flags.flagged)} worker(s) flagged; {action}." if lines else "No worker flagged.",
                note=bool(lines))
    for line in lines:
        report.text(line)
    report.table(flags.table.head(20), caption="the 20 strongest pieces of evidence (voter_flags.csv: all)",
                 floatfmt="{:.4g}")


def add_fragility(report, comparisons: pd.DataFrame, tables: dict, summary: dict, bt_pairs: int = 10) -> None:
    """Each pair's and the Bradley-Terry order's fragility, in words and as tables."""
    from parlai_dialeval.analysis.fragility import MAX_FITS, TOLERANCE, bt_fragility, pair_fragility

    pairs, orders = pair_fragility(comparisons), bt_fragility(comparisons, pairs=bt_pairs)
    tables["fragility_pairs"], tables["fragility_rankings"] = pairs, orders
    summary["fragility"] = {"pairs": pairs["sentence"].tolist(), "rankings": orders["sentence"].tolist()}
    losses = tables.get("fragility_significance")
    if losses is not None:
        summary["fragility"]["significance"] = losses["sentence"].tolist()
    report.heading("How fragile the results are")
    report.text("The fewest votes (and workers) whose removal reverses a result: for a pair's win rate exact "
                "(dropping the leader's wins, or its most one-sided workers, first); for the Bradley-Terry order the "
                "influence-based estimate of Huang et al. (arXiv 2508.11847), confirmed by refitting without them "
                "(fragility_rankings.csv: first_order_estimate and votes_to_reverse), then made exact by trying "
                f"every smaller removal where that takes at most {MAX_FITS:,} refits (votes_exact, workers_exact; "
                "each sentence says which). A pair reverses when the other model's log-strength exceeds it by more "
                f"than {TOLERANCE:g} (a level pair is not reversed). A result that a handful of votes reverses "
                "rests on those votes, whatever its p-value.")
    if losses is not None and len(losses):
        report.text("Fewer removals take a settled pair's significance away than reverse it: the fewest decided "
                    "votes (exact) and workers whose removal leaves its corrected p at or above alpha, the other "
                    "pairs' p as they are (fragility_significance.csv).")
        for sentence in losses["sentence"]:
            report.text(sentence)
    for sentence in orders["sentence"]:
        report.text(sentence)
    for sentence in pairs["sentence"]:
        report.text(sentence)
