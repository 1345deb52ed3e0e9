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
``two_sample_tests`` (the batched Mann-Whitney / t tests that step 3 runs per worker, equal to scipy's
``mannwhitneyu(method="auto")`` called once per worker), ``steps`` (3-7), ``descriptive`` (8) and
``pipeline`` (``analyze``, all of them in order).
"""
from __future__ import annotations

import importlib

# Names load from their module on first use (PEP 562), so importing one module of the package, such as
# ``settings`` for a command's options, does not load the statistics of the others.
_WHERE = {
    "AGREEMENT_BY": "settings", "CORRECTIONS": "settings", "CheckedWorkers": "pipeline", "HUMAN": "settings",
    "LiveChatConfig": "settings", "LiveChatResult": "settings", "NOT_SUBMITTED": "descriptive", "QC_TESTS": "settings", "SIG_TESTS": "settings",
    "Settings": "settings", "add_z": "prepare", "analyze": "pipeline", "check_workers": "pipeline",
    "conversation_scores": "steps", "criteria_correlations": "steps", "durations": "descriptive",
    "group_sd": "prepare", "grouped_test": "two_sample_tests", "input_lengths": "descriptive",
    "pairwise_significance": "steps", "prepare_ratings": "prepare", "quality_control": "steps",
    "rater_agreement": "steps", "resolve_settings": "settings", "reverse": "prepare", "select_study": "settings",
    "significance_matrix": "steps", "standardise": "prepare", "system_scores": "steps",
    "topic_attitudes": "descriptive", "two_sample_p": "two_sample_tests", "unsubmitted_assignments": "descriptive",
    "worker_outcomes": "descriptive",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
