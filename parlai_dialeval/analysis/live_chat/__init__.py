"""Live-chat direct assessment (Ji et al. 2022): continuous ratings of live conversations to system scores.

Pure statistics, DataFrames in and out, no I/O; ``scripts/analyze_live_chat.py`` writes the files and
the report. Every step follows the paper unless ``LiveChatConfig`` says otherwise:

1. reverse negatively worded statements: ``min + max - x`` (``100 - x`` on 0-100), from the study's
   criteria (``positive: false``) or ``negative=[...]``;
2. z-standardise per worker over all of that worker's ratings in the study (all statements, all
   conversations, quality-control ones included): ``(x - mean) / (SD(ddof=1) + 1e-6)``;
3. worker quality control: a one-sided Mann-Whitney U test that the worker rated the quality-control
   bot lower than the genuine models on the positive statements, pooled over all the worker's HITs;
   pass when ``p < 0.05``; a worker whose ratings are all equal gets ``p = 1``; failing workers are
   removed whole;
4. system scores over passing workers: mean z (and mean reversed raw score) per statement, overall =
   mean of the statements, ``n`` = number of ratings; models ordered by overall;
5. pairwise significance: one-sided Mann-Whitney U on per-conversation overall z (mean of its
   statements), model a over model b, for every ordered pair;
6. correlation between statements across systems (Pearson above the diagonal, Spearman below);
7. rater agreement (Figure 2): Pearson r between the per-conversation overall z of two workers' HITs
   that held the same set of models, for passing and for failing workers;
8. descriptive tables: counts and pass rates, durations (Table 1), opening-topic attitudes (Table 2),
   characters and words of worker inputs (Table 12).

Modules: ``settings`` (options, resolved settings, result, study choice), ``prepare`` (steps 1-2),
``engine`` (the batched Mann-Whitney / t tests that step 3 runs per worker, equal to scipy's
``mannwhitneyu(method="auto")`` called once per worker), ``steps`` (3-7), ``descriptive`` (8) and
``pipeline`` (``analyze``, all of them in order).
"""
from __future__ import annotations

from parlai_dialeval.analysis.live_chat.descriptive import durations, input_lengths, topic_attitudes
from parlai_dialeval.analysis.live_chat.engine import grouped_test, two_sample_p
from parlai_dialeval.analysis.live_chat.pipeline import CheckedWorkers, analyze, check_workers
from parlai_dialeval.analysis.live_chat.prepare import add_z, group_sd, prepare_ratings, reverse, standardise
from parlai_dialeval.analysis.live_chat.settings import (AGREEMENT_BY, CORRECTIONS, HUMAN, QC_TESTS, SIG_TESTS,
                                                         LiveChatConfig, LiveChatResult, Settings, resolve_settings,
                                                         select_study)
from parlai_dialeval.analysis.live_chat.steps import (conversation_scores, criteria_correlations, pairwise_significance,
                                                      quality_control, rater_agreement, significance_matrix,
                                                      system_scores)

__all__ = ["AGREEMENT_BY", "CORRECTIONS", "HUMAN", "QC_TESTS", "SIG_TESTS", "CheckedWorkers", "LiveChatConfig",
           "LiveChatResult", "Settings", "add_z", "analyze", "check_workers", "conversation_scores",
           "criteria_correlations", "durations", "group_sd", "grouped_test", "input_lengths",
           "pairwise_significance", "prepare_ratings", "quality_control", "rater_agreement", "resolve_settings",
           "reverse", "select_study", "significance_matrix", "standardise", "system_scores", "topic_attitudes",
           "two_sample_p"]
