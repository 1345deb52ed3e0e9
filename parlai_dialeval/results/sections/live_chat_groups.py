"""Results by the people who judged in the live-chat analysis (analysis/groups.py ``live_chat_groups``): with
``--participants F.csv --by ATTRIBUTE``, each group's model means of the passing workers' z-scored overall ratings with
worker-clustered intervals at the Bonferroni level over the groups, and a permutation test of whether the groups
disagree. Weighting to a target population (--weights) is the pairwise analysis's only."""
from __future__ import annotations

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.results.section import Section
from parlai_dialeval.results.sections import groups
from parlai_dialeval.results.sections.live_chat_style import ALPHA, passing
from parlai_dialeval.results.sections.style import given

MEASURE = ("mean overall z per group (score; Ji et al.'s per-worker z-scores of the passing workers), intervals "
           "clustered by worker at the Bonferroni level in column confidence")


def compute(inputs, config, done: dict) -> groups.Groups | None:
    from parlai_dialeval.analysis import groups as statistics

    if not given(config.participants):
        if given(config.by):
            raise DialevalError("--by needs --participants F.csv (Prolific's demographic export: dialeval prolific "
                                "demographics TASK; or the questionnaire's FILE.participants.csv beside dialeval "
                                "export's FILE.jsonl)")
        return None
    if not given(config.by):
        raise DialevalError("--participants: say what to do with it: --by ATTRIBUTE (model scores per group)")
    participants = groups.participants_of(config.participants)
    conversations = passing(inputs.core)
    workers = conversations["worker_id"].astype(str).unique()
    not_described = groups.described(workers, participants)
    levels = statistics.worker_levels(workers, participants, groups.spec(config.by, participants))
    result = statistics.live_chat_groups(conversations, levels, ALPHA, config.min_group_workers,
                                         config.group_permutations, config.seed)
    part = groups.Groups(str(config.by), result, None, config.min_group_workers, not_described, measure=MEASURE)
    groups.words(part, ALPHA)
    return part


SECTION = Section("groups", compute, tables=groups.tables, summary=groups.summary,
                  sentences=lambda part: part.verdicts + part.sentences, title="Results by the people who judged",
                  config=tuple(entry for entry in groups.SECTION.config if entry[0] != "weights"))
