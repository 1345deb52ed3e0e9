"""Worker quality control shared by tasks: run a task's worker check, soft-block those who fail, and give
``dialeval review``'s table its qc column (``review_qc``).

Soft-blocking grants the Mephisto qualification every task's conf names in
``mephisto.blueprint.block_qualification`` (default ``dialeval_qc_failed``): Mephisto then keeps those
workers out of later HITs (on MTurk too) without rejecting any work they did.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from parlai_dialeval.errors import DialevalError

DEFAULT_BLOCK_QUALIFICATION = "dialeval_qc_failed"


def check_workers(task_name: str, data_dir: str | Path | None = None, task_type: str | None = None,
                  alpha: float | None = None) -> tuple[pd.DataFrame, object]:
    """(one row per finished worker: worker_id, passed, ..., the Mephisto database). ``alpha``: the
    significance level of a task whose check is a test (live_chat_da; None: its default); a task whose
    checks are rules (pw_turn, sm_eval) refuses one."""
    from parlai_dialeval.crowdsourcing.platform.export import collect

    report, db, spec = collect(task_name, data_dir, task_type)
    if spec.worker_checks is None:
        raise DialevalError(f"task {spec.name!r} has no worker quality check")
    # work of unverified identities is left out, as analyses leave it out (docs/data_model.md)
    return spec.worker_checks([r for r in report.records if not r.get("unverified")], alpha), db


def soft_block(db, worker_names: list[str], qualification: str = DEFAULT_BLOCK_QUALIFICATION) -> list[str]:
    """Grant ``qualification`` to each worker (by provider worker name); returns those granted."""
    from mephisto.utils.qualifications import find_or_create_qualification

    find_or_create_qualification(db, qualification)
    granted = []
    for name in worker_names:
        for worker in db.find_workers(worker_name=name):
            worker.grant_qualification(qualification, 1)
            granted.append(name)
    return granted


def qc_results(task_name: str, data_dir=None) -> tuple[dict[str, bool], str]:
    """({worker name: passed}, note) from the task's own worker check (the QC-bot test for live chat, the
    acceptability checks for SM-Eval and PW-Turn); tasks without one give ({}, why)."""
    try:
        table, _ = check_workers(task_name, data_dir)
    except DialevalError as error:
        return {}, str(error)
    return {str(w): bool(p) for w, p in zip(table["worker_id"], table["passed"])}, ""


def qc_of(participant: str, passed: dict[str, bool], note: str, mephisto_status: str) -> str:
    """The review table's qc: pass / fail from the task's check; ``did not submit`` for a participant who
    returned, disconnected or timed out without submitting (never a failure: nothing was checked); else ``-``."""
    from parlai_dialeval.crowdsourcing.platform.export import submission_of

    if note:
        return "n/a"
    if participant in passed:
        return "pass" if passed[participant] else "fail"
    return "-" if submission_of(mephisto_status) in ("submitted", "working") else "did not submit"


def review_qc(task_name: str, data_dir=None):
    """(qc(participant, Mephisto status) -> the review table's qc, note, {participant: failed attention checks that
    qualify for a rejection}): what providers/prolific/review.py's ``review_table`` takes."""
    passed, note = qc_results(task_name, data_dir)
    return (lambda participant, status: qc_of(participant, passed, note, status)), note, attention_failures(
        task_name, data_dir)


def attention_failures(task_name: str, data_dir: str | Path | None = None) -> dict[str, dict]:
    """{worker name: {failed, items, category, message}} for each worker whose failed attention checks qualify for a
    rejection under Prolific's attention-check policy (two or more, and the study's rule; analysis/evidence.py);
    ``dialeval review`` suggests it and the category and message are ones its --reject accepts."""
    from parlai_dialeval.analysis.evidence import REJECTION_CATEGORY, rejection_message, study_rule
    from parlai_dialeval.analysis.live_agreement import attention_results
    from parlai_dialeval.crowdsourcing.platform.export import collect

    report, _, _ = collect(task_name, data_dir)
    answers = pd.DataFrame([r for r in report.records if r.get("check") and r.get("type") in ("rating", "comparison")])
    if answers.empty:
        return {}
    rule = study_rule([r for r in report.records if r.get("type") == "study"])
    out = {}
    for row in attention_results(answers).itertuples(index=False):
        failed = int(row.attention_items - row.attention_right)
        if failed >= max(2, rule["attention_fail"]):
            out[str(row.worker_id)] = {"failed": failed, "items": int(row.attention_items),
                                       "category": REJECTION_CATEGORY,
                                       "message": rejection_message(failed, int(row.attention_items))}
    return out
