"""The voter tests (adaptive/voter_flags.py) as a section of the pairwise analyses: who may not vote in good faith,
and with ``exclude_flagged`` their votes left out of every later section (``filters``)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section


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


@dataclass
class Voters:
    flags: Any  # adaptive.voter_flags.VoterFlags
    left_out: int  # votes of flagged workers left out (0 unless ``excluded``)
    excluded: bool
    inputs: Any  # the inputs every later section sees


def flag_and_exclude(comparisons, config):
    """(the comparisons to analyse, VoterFlags, votes left out): flagged workers' votes left out only when
    ``config.exclude_flagged``."""
    from parlai_dialeval.adaptive.voter_flags import VoterSettings, exclude_flagged, flag_voters

    flags = flag_voters(comparisons, VoterSettings(alpha=config.alpha, side_share=config.side_share,
                                                   words_per_second=config.words_per_second))
    left_out = 0
    if config.exclude_flagged and flags.flagged:
        comparisons, left_out = exclude_flagged(comparisons, flags)
    return comparisons, flags, left_out


def compute(inputs, config, done: dict) -> Voters:
    comparisons, flags, left_out = flag_and_exclude(inputs.comparisons, config)
    return Voters(flags, left_out, bool(config.exclude_flagged),
                  dataclasses.replace(inputs, comparisons=comparisons) if left_out else inputs)


def sentences(part: Voters) -> list[str]:
    flags = part.flags
    action = (f"their {part.left_out} votes are left out of everything below" if part.excluded
              else "their votes are kept (--exclude-flagged true leaves them out)")
    lines = flags.sentences()
    return ([f"{len(flags.flagged)} worker(s) flagged; {action}."] if lines else ["No worker flagged."]) + lines


SECTION = Section(
    "voters", compute, tables=lambda part: {"voter_flags": part.flags.table},
    summary=lambda part: {"voter_flags": {**part.flags.summary(), "excluded": part.excluded,
                                          "votes_left_out": part.left_out}},
    sentences=sentences, title="Voters who may not vote in good faith", filters=True,
    config=(("exclude_flagged", bool, exclude_flagged_field()), ("side_share", float, side_share_field()),
            ("words_per_second", float, words_per_second_field())))
