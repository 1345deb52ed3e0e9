"""Bonuses on Prolific, paid exactly once.

Prolific pays a bonus in two calls: ``POST submissions/bonus-payments/`` sets it up (nothing is paid; a
set-up never paid costs nothing) and ``POST bulk-bonus-payments/{id}/pay/`` pays it. ``pay`` is not
idempotent (every call pays) and answers 202: the money moves "in the following minutes" (Prolific's
"Pay bonuses" docs), so a submission's ``bonus_payments`` that has not grown right after a failure proves
nothing. Hence the ledger (``decisions``, one row per submission and reason) moves, each step written
before the call it guards:

    recorded -> set up (set-up id kept) -> paying -> paid          (202)
                                              \\-> failed         (a 4xx: refused, nothing paid; may be retried)
                                              \\-> unsure         (5xx, timeout, crash: may or may not be paid)

An ``unsure`` (or ``paying``, left by a crash) bonus is never paid again automatically: ``dialeval
review`` shows it as "pending: check on Prolific" and settles it as paid once Prolific's records show it
(``settle``). Only the researcher, having checked on Prolific that it was not paid, sends it again
(``repay``).
"""
from __future__ import annotations

import time

from mephisto.abstractions.blueprint import AgentState

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common
from parlai_dialeval.providers.prolific.api import ProlificError, ProlificServerError, to_major, to_minor

SUBMITTED = {AgentState.STATUS_COMPLETED, AgentState.STATUS_APPROVED, AgentState.STATUS_REJECTED,
             AgentState.STATUS_SOFT_REJECTED}
# Prolific submissions that were submitted (a bonus goes with one); PROCESSING: a decision under way.
REVIEWABLE = {"AWAITING REVIEW", "APPROVED", "REJECTED", "PARTIALLY APPROVED", "PROCESSING"}
# may have been paid: only Prolific's records or the researcher settle it ("pending": ledgers written before
# these states existed)
AMBIGUOUS = ("paying", "unsure", "pending")
PENDING = "pending: check on Prolific"
REPAY_AFTER = 3600.0  # seconds after the failure before a resend is accepted: Prolific may still be paying


def pay(db, agent, amount, reason: str) -> str:
    """Pay ``amount`` (major units) to the agent's participant, once per (submission, reason)."""
    if agent is None:
        raise DialevalError("no participant worked on this unit: nothing to bonus")
    if not reason or not reason.strip():
        raise DialevalError("--reason: say why the bonus is paid (it also keeps the same bonus from being paid twice)")
    minor = to_minor(amount, "bonus amount")
    if minor <= 0:
        raise DialevalError(f"bonus amount must be positive (got {amount})")
    store = common.datastore(db)
    client, study = common.client_for_run(db, agent.task_run_id)
    submission, pid = agent.submission_id(), agent.get_worker().worker_name
    try:
        earlier = store.decisions(kind="bonus", submission_id=submission, reason=reason)
        if earlier:
            decision = earlier[0]
            if decision["state"] in AMBIGUOUS and settle(store, decision, client.submission(submission)):
                decision["state"] = "paid"
            if decision["state"] == "paid":
                raise DialevalError(f"bonus to {pid} for {reason!r} is already paid "
                                    f"({to_major(decision['amount_minor'])} {decision['currency']}, decision "
                                    f"{decision['id']}); not paying it again")
            if decision["state"] in AMBIGUOUS:
                raise DialevalError(_pending_message(decision))
            if decision["amount_minor"] != minor:
                raise DialevalError(f"a bonus to {pid} for {reason!r} of {to_major(decision['amount_minor'])} is "
                                    f"{decision['state']}; settle it (same amount) before paying another")
        else:
            remote = client.submission(submission)
            if remote["status"] not in REVIEWABLE or agent.get_status() not in SUBMITTED:
                raise DialevalError(f"participant {pid} never submitted work on this task (Prolific: "
                                    f"{remote['status']}, Mephisto: {agent.get_status()}); "
                                    "a bonus goes with a submission")
            decision = store.decisions(id=store.record_decision(
                task_name=study["task_name"], study_id=study["study_id"], submission_id=submission,
                participant_id=pid, kind="bonus", amount_minor=minor, currency=study["currency"], reason=reason,
                state="recorded", bonuses_before=len(remote.get("bonus_payments") or [])))[0]
        return _pay_once(store, client, study, decision)
    finally:
        client.close()


def _pay_once(store, client, study, decision) -> str:
    did, pid = decision["id"], decision["participant_id"]
    setup_id = decision["setup_id"]
    if not setup_id:
        setup_id = client.set_up_bonuses(study["study_id"], f"{pid},{to_major(decision['amount_minor'])}\n")["id"]
        store.set_decision(did, setup_id=setup_id, state="set up")
    store.set_decision(did, state="paying")  # from here on a crash leaves it ambiguous, never re-paid
    try:
        client.pay_bonuses(setup_id)
    except ProlificServerError as error:  # 5xx or no answer: Prolific may have taken the payment
        store.set_decision(did, state="unsure", detail=str(error))
        raise DialevalError(f"{_pending_message(decision)} (pay answered: {error})") from None
    except ProlificError as error:  # a 4xx (e.g. balance too low): refused, nothing paid
        store.set_decision(did, state="failed", detail=str(error))
        raise
    store.set_decision(did, state="paid")
    return f"paid {to_major(decision['amount_minor'])} {decision['currency']} to {pid} ({decision['reason']})"


def _pending_message(decision) -> str:
    return (f"bonus to {decision['participant_id']} for {decision['reason']!r} ({to_major(decision['amount_minor'])} "
            f"{decision['currency']}, decision {decision['id']}) is {PENDING}: Prolific may have paid it. It is not "
            "paid again automatically; `dialeval review` settles it once Prolific shows it paid. If after an hour "
            f"Prolific shows no such bonus, send it again with `dialeval review TASK --bonus-unpaid {decision['id']}`")


def settle(store, decision, submission: dict) -> bool:
    """Mark an ambiguous bonus paid if Prolific's records show it: the submission has more bonuses than
    before it was recorded, more than the other bonuses we paid it since account for."""
    payments = submission.get("bonus_payments")
    if payments is None or decision["bonuses_before"] is None:  # nothing to compare with
        return False
    ours_since = [d for d in store.decisions(kind="bonus", submission_id=decision["submission_id"])
                  if d["id"] != decision["id"] and d["state"] == "paid" and d["id"] > decision["id"]]
    if len(payments) > decision["bonuses_before"] + len(ours_since):
        store.set_decision(decision["id"], state="paid", detail="settled from Prolific's bonus_payments")
        return True
    return False


def settle_all(store, client, submissions: list[dict]) -> dict[str, int]:
    """Settle every ambiguous bonus of these submissions (list items) against each one's own record:
    ``bonus_payments`` is on ``GET submissions/{id}/`` only, not on the list's items (Prolific's docs,
    "Retrieve a submission" vs "List submissions"). Returns {submission id: bonuses still pending}."""
    pending: dict[str, int] = {}
    for sub in submissions:
        ambiguous = [d for d in store.decisions(kind="bonus", submission_id=sub["id"]) if d["state"] in AMBIGUOUS]
        record = client.submission(sub["id"]) if ambiguous else None
        for decision in ambiguous:
            if not settle(store, decision, record):
                pending[sub["id"]] = pending.get(sub["id"], 0) + 1
    return pending


def repay(db, decision_id: int) -> str:
    """The researcher checked on Prolific that an ambiguous bonus was not paid: pay it (once more), unless
    Prolific's records now show it paid."""
    store = common.datastore(db)
    found = store.decisions(id=decision_id, kind="bonus")
    if not found:
        raise DialevalError(f"--bonus-unpaid: no bonus decision {decision_id} in {store.path}")
    decision = found[0]
    if decision["state"] not in AMBIGUOUS:
        raise DialevalError(f"--bonus-unpaid: bonus decision {decision_id} is {decision['state']}, not {PENDING}")
    ready = decision["updated"] + REPAY_AFTER
    if time.time() < ready:
        raise DialevalError(f"--bonus-unpaid: wait until {time.strftime('%H:%M', time.localtime(ready))}: "
                            "Prolific pays bonuses in the minutes after it accepts them, so it may still show up")
    row = store.one("SELECT * FROM studies WHERE study_id = ? ORDER BY rowid DESC", decision["study_id"])
    client = common.client_for(row["requester_name"], row["api_base_url"])
    try:
        if settle(store, decision, client.submission(decision["submission_id"])):
            raise DialevalError(f"bonus decision {decision_id} is paid after all (Prolific shows it): not paying again")
        store.set_decision(decision_id, state="set up", detail="the researcher found it unpaid on Prolific")
        return _pay_once(store, client, row, decision)
    finally:
        client.close()
