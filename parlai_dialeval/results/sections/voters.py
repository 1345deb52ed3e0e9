"""The voter tests (adaptive/voter_flags.py) as a section of the pairwise analyses: who may not vote in good faith,
and with ``exclude_flagged`` the votes of the workers flagged left out of every later section (``filters``): those
the evidence table flags by its one rule where the analysis has the evidence about participants
(analysis/evidence.py, results/sections/evidence.py), else those the voter tests flag."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section


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


@dataclass
class Voters:
    flags: Any  # adaptive.voter_flags.VoterFlags
    left_out: int  # votes of flagged workers left out (0 unless ``excluded``)
    excluded: bool
    inputs: Any  # the inputs every later section sees
    by_evidence: bool = False  # whether the evidence table's rule chose whose votes to leave out
    workers_left_out: int = 0


def flag_and_exclude(comparisons, config, evidence=None):
    """(the comparisons to analyse, VoterFlags, votes left out, workers left out): flagged workers' votes left out
    only when ``config.exclude_flagged``; with ``evidence`` (analysis/evidence.py's Evidence) its voter flags and
    the workers its rule flags, else the voter tests' alone."""
    from parlai_dialeval.adaptive.voter_flags import VoterSettings, flag_voters

    flags = getattr(evidence, "voters", None)
    if flags is None:
        flags = flag_voters(comparisons, VoterSettings(alpha=config.alpha, side_share=config.side_share,
                                                       words_per_second=config.words_per_second))
    out = set(evidence.flagged) if evidence is not None else set(flags.flagged)
    if not (config.exclude_flagged and out):
        return comparisons, flags, 0, 0
    leaving = comparisons["worker_id"].astype(str).isin(out)
    return comparisons[~leaving], flags, int(leaving.sum()), len(out)


def compute(inputs, config, done: dict) -> Voters:
    comparisons, flags, left_out, workers = flag_and_exclude(inputs.comparisons, config, inputs.evidence)
    return Voters(flags, left_out, bool(config.exclude_flagged),
                  dataclasses.replace(inputs, comparisons=comparisons) if left_out else inputs,
                  inputs.evidence is not None, workers)


def sentences(part: Voters) -> list[str]:
    flags = part.flags
    if not part.excluded:
        action = "their votes are kept (--exclude-flagged true leaves them out)"
    elif part.by_evidence:
        action = (f"{part.left_out} votes are left out of everything below (those of every worker the evidence table "
                  "flags, by its one rule: docs/data_model.md, \"Evidence about participants\")")
    else:
        action = f"their {part.left_out} votes are left out of everything below"
    lines = flags.sentences()
    if not lines:  # the evidence table may flag workers the voter tests do not
        return [f"No worker flagged by the voter tests; {action}."] if part.left_out else ["No worker flagged."]
    return [f"{len(flags.flagged)} worker(s) flagged; {action}."] + lines


SECTION = Section(
    "voters", compute, tables=lambda part: {"voter_flags": part.flags.table},
    summary=lambda part: {"voter_flags": {**part.flags.summary(), "excluded": part.excluded,
                                          "votes_left_out": part.left_out}},
    sentences=sentences, title="Voters who may not vote in good faith", filters=True,
    config=(("exclude_flagged", bool, exclude_flagged_field()), ("side_share", float, side_share_field()),
            ("words_per_second", float, words_per_second_field())))
