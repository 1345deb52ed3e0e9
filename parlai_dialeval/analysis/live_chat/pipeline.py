"""The whole live-chat analysis, step by step (see the package docstring)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.analysis.live_chat.descriptive import (conversation_meta, durations, input_lengths, make_table1,
                                                            summarise, topic_attitudes, unsubmitted_assignments,
                                                            worker_outcomes)
from parlai_dialeval.analysis.live_chat.prepare import add_z, is_in, prepare_ratings
from parlai_dialeval.analysis.live_chat.settings import (HUMAN, LiveChatConfig, LiveChatResult, Settings,
                                                         resolve_settings, select_study)
from parlai_dialeval.analysis.live_chat.steps import (conversation_scores, criteria_correlations, overall_intervals,
                                                      pairwise_significance, quality_control, rater_agreement,
                                                      system_scores)
from parlai_dialeval.errors import DialevalError


@dataclass
class CheckedWorkers:
    """Steps 1-3: the analysed ratings (reversed ``x``, ``z``, ``passed``) and the quality control per worker."""

    settings: Settings
    record: dict | None
    conversations: pd.DataFrame
    frame: pd.DataFrame
    workers: pd.DataFrame
    empty: list[dict]
    notes: list[str]
    unsubmitted: pd.DataFrame  # HITs started and not submitted (descriptive.unsubmitted_assignments)


def check_workers(data, config: LiveChatConfig | None = None) -> CheckedWorkers:
    """Reverse, standardise and run the worker quality control: the first half of ``analyze``, and all that
    the live-chat task's ``qc_workers`` needs."""
    config = config or LiveChatConfig()
    study, record, conversations, ratings = select_study(data, config.study)
    if ratings.empty:
        raise DialevalError("no ratings to analyse" + (f" in study '{study}'" if study else ""))
    settings = resolve_settings(config, study, record, ratings)
    notes: list[str] = []
    frame, left_out = prepare_ratings(conversations, ratings, settings)
    for why, count in left_out.items():
        notes.append(f"left out {count} {why}")
    if frame.empty:
        raise DialevalError("no ratings left to analyse after filtering: " + "; ".join(notes))
    if config.qc_test != "none":
        if not settings.qc_models:
            raise DialevalError("no quality-control model: the study declares no qc_models; name it with "
                                "--qc_models NAME, or turn quality control off with --qc_test none")
        if not frame["model"].isin(settings.qc_models).any():
            raise DialevalError(f"no ratings of the quality-control model(s) {', '.join(settings.qc_models)}; "
                                "name it with --qc_models NAME, or use --qc_test none")
    frame = add_z(frame, settings)
    empty = list(((record or {}).get("meta") or {}).get("empty_submissions") or [])
    empty_hits: dict[str, int] = {}
    for item in empty:
        if item.get("worker_id"):
            empty_hits[item["worker_id"]] = empty_hits.get(item["worker_id"], 0) + 1
    workers = quality_control(frame, settings, empty_hits)
    frame["passed"] = is_in(frame["worker_id"], workers.loc[workers["passed"], "worker_id"])
    return CheckedWorkers(settings, record, conversations, frame, workers, empty, notes,
                          unsubmitted_assignments(conversations))


def analyze(data, config: LiveChatConfig | None = None) -> LiveChatResult:
    config = config or LiveChatConfig()
    checked = check_workers(data, config)
    settings, frame, workers, notes = checked.settings, checked.frame, checked.workers, checked.notes
    passed_workers = set(workers.loc[workers["passed"], "worker_id"])
    conv = conversation_scores(frame, settings.qc_models)
    conv["passed"] = is_in(conv["worker_id"], passed_workers)

    genuine = frame[frame["passed"] & ~frame["model"].isin(settings.qc_models)]
    scores = system_scores(genuine, "z", settings.criteria, config.order)
    models = scores["model"].tolist()
    raw = system_scores(genuine, "x", settings.criteria)
    raw = raw.set_index("model").loc[models].reset_index() if models else raw
    conv_genuine_passed = conv[conv["passed"] & ~conv["qc"]]
    significance = pairwise_significance(conv_genuine_passed, models, config.sig_test, config.correction)
    columns = ["overall", *settings.criteria]
    correlations = criteria_correlations(scores, columns)
    correlations_raw = criteria_correlations(raw, columns)

    conv_meta = conversation_meta(checked.conversations, conv)
    hits = conv_meta.groupby("assignment_id")["hit_id"].first() if "hit_id" in conv_meta else None
    agreement = rater_agreement(conv, passed_workers, config.agreement_by, config.agreement_max_pairs,
                                config.seed, hits)
    if agreement["sampled"]:
        notes.append(f"rater agreement: more than {config.agreement_max_pairs:,} candidate pairs, so a seeded "
                     "random sample of pairs was used")
    table_durations = durations(conv_meta, passed_workers)
    topics = topic_attitudes(conv_meta, passed_workers)
    # only the workers' turns (half the rows to build); input_lengths matches them to conv_meta by id,
    # which leaves out other studies' conversations
    inputs = input_lengths(conv_meta, data.turns(speaker=HUMAN), passed_workers)

    summary = summarise(settings, frame, conv, workers, checked.empty, notes, checked.unsubmitted)
    table1 = make_table1(summary, table_durations)
    return LiveChatResult(settings, frame, conv, workers, scores, raw, significance, correlations, correlations_raw,
                          agreement, table1, table_durations, topics, inputs, summary, notes,
                          overall_intervals(conv_genuine_passed, models),
                          worker_outcomes(workers, checked.unsubmitted))
