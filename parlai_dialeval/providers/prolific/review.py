"""The review loop on Prolific: approve, reject, block, and the review table; every decision goes into our
ledger (``prolific.db`` table ``decisions``) BEFORE the API call, and is marked done after it. Bonuses,
the one call Prolific does not make idempotent, are paid by ``bonus.py``."""
from __future__ import annotations

from mephisto.abstractions.blueprint import AgentState

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import bonus, common, verify
from parlai_dialeval.providers.prolific.api import ProlificError, ProlificNotFound, ProlificServerError, to_major
from parlai_dialeval.providers.prolific.bonus import SUBMITTED
from parlai_dialeval.providers.prolific.completion import complete

REJECTION_CATEGORIES = ("TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
                        "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER")
MIN_REJECT_MESSAGE = 100  # characters Prolific requires in a rejection message
UNVERIFIED = "UNVERIFIED"  # the review table's Prolific status of work whose session Prolific never confirmed
UNVERIFIED_SUGGESTION = "none (unverified: not this study's participant on Prolific; exported marked, not analysed)"


def _context(db, agent) -> tuple[object, dict, str]:
    """(client, study row, submission id) of a Prolific agent."""
    client, study = common.client_for_run(db, agent.task_run_id)
    return client, study, agent.submission_id()


def _decide(db, agent, kind: str, action, **fields):
    """Ledger first, then ``action(client, study, submission_id)``, then the ledger marked done."""
    store = common.datastore(db)
    client, study, submission = _context(db, agent)
    decision = store.record_decision(task_name=study["task_name"], study_id=study["study_id"], submission_id=submission,
                                     participant_id=agent.get_worker().worker_name, kind=kind, **fields)
    try:
        result = action(client, study, submission)
    except ProlificError as error:
        store.set_decision(decision, state="failed", detail=str(error))
        raise
    finally:
        client.close()
    store.set_decision(decision, state="done")
    return result


def approve(db, agent) -> None:
    def complete_then_approve(client, study, submission):
        if client.submission(submission).get("status") == "ACTIVE":  # our completion did not reach Prolific
            complete(client, submission, study["completion_code"])
        return client.transition_submission(submission, "APPROVE")

    _decide(db, agent, "approve", complete_then_approve)
    agent.update_status(AgentState.STATUS_APPROVED)


def check_rejection(message: str, category: str) -> None:
    if len(message or "") < MIN_REJECT_MESSAGE:
        raise DialevalError(f"--message: Prolific needs at least {MIN_REJECT_MESSAGE} characters to reject "
                            f"(got {len(message or '')}); explain what was wrong so the participant can learn from it")
    if category not in REJECTION_CATEGORIES:
        raise DialevalError(f"--category: {category!r} is not one of Prolific's: {', '.join(REJECTION_CATEGORIES)}")


def reject(db, agent, message: str, category: str) -> None:
    check_rejection(message, category)  # before the ledger: nothing recorded for a refused request
    _decide(db, agent, "reject", lambda c, s, sub: c.transition_submission(sub, "REJECT", message, category),
            reason=message, category=category)
    agent.update_status(AgentState.STATUS_REJECTED)


def _block_context(db, requester_name: str | None):
    """(client, studies row) of the requester's latest study: where the block group lives."""
    store = common.datastore(db)
    rows = store.all("SELECT * FROM studies WHERE block_group_id IS NOT NULL"
                     + (" AND requester_name = ?" if requester_name else "") + " ORDER BY rowid DESC",
                     *([requester_name] if requester_name else []))
    if not rows:
        raise DialevalError("no Prolific study was launched from this data directory yet: nothing to block against")
    return common.client_for(rows[0]["requester_name"], rows[0]["api_base_url"]), rows[0]


def block(db, worker_name: str, reason: str, requester_name: str | None = None) -> None:
    """Add the participant to the block group every later study excludes (and to our local list)."""
    store = common.datastore(db)
    if not db.find_workers(worker_name=worker_name):
        raise DialevalError(f"--block: no participant {worker_name!r} ever worked on a task in {db.db_path}")
    client, study = _block_context(db, requester_name)
    decision = store.record_decision(task_name=study["task_name"], study_id=study["study_id"],
                                     participant_id=worker_name, kind="block", reason=reason)
    try:
        client.add_members(study["block_group_id"], [worker_name])
    except ProlificError as error:
        store.set_decision(decision, state="failed", detail=str(error))
        raise
    finally:
        client.close()
    store.set_blocked(worker_name, reason)
    store.set_decision(decision, state="done")


def unblock(db, worker_name: str, requester_name: str | None = None) -> None:
    store = common.datastore(db)
    client, study = _block_context(db, requester_name)
    try:
        client.remove_members(study["block_group_id"], [worker_name])
    finally:
        client.close()
    store.set_blocked(worker_name, None)


# ---------------------------------------------------------------- messages
MAX_MESSAGE = 5000  # characters of a message (ours: Prolific documents none; a page of text)
AMBIGUOUS_MESSAGE = ("sending", "unsure")  # may have reached the participant: never sent again by itself


def masked(participant_id: str) -> str:
    """A participant id as pages show it: enough to tell people apart, never the whole id."""
    pid = str(participant_id)
    return f"{pid[:4]}…{pid[-3:]}" if len(pid) > 10 else f"{pid[:2]}…"


def send_message(db, agent, text: str) -> str:
    """Message the agent's participant on Prolific about the agent's study, once: the ledger (``decisions``,
    kind ``message``) records it before the call, and the same text to the same participant is not sent again
    (a retried command or form; an answer lost after Prolific took it leaves it "unsure", never resent)."""
    text = (text or "").strip()
    if not text or len(text) > MAX_MESSAGE:
        raise DialevalError(f"--message: the text must have 1 to {MAX_MESSAGE} characters (got {len(text)})")
    store = common.datastore(db)
    client, study = common.client_for_run(db, agent.task_run_id)
    pid = agent.get_worker().worker_name
    try:
        earlier = store.decisions(kind="message", participant_id=pid, study_id=study["study_id"], reason=text)
        if earlier and earlier[0]["state"] == "sent":
            raise DialevalError(f"this message was sent to {masked(pid)} already (decision {earlier[0]['id']}); "
                                "not sending it again")
        if earlier and earlier[0]["state"] in AMBIGUOUS_MESSAGE:
            raise DialevalError(f"this message to {masked(pid)} may have been sent (decision {earlier[0]['id']}: "
                                "Prolific did not answer); check your messages on app.prolific.com; it is not sent "
                                "again, reword it to send another")
        decision = earlier[0]["id"] if earlier else store.record_decision(
            task_name=study["task_name"], study_id=study["study_id"], submission_id=agent.submission_id(),
            participant_id=pid, kind="message", reason=text, state="recorded")
        store.set_decision(decision, state="sending")  # from here on a crash leaves it ambiguous, never resent
        try:
            client.send_message(pid, study["study_id"], text)
        except ProlificServerError as error:  # 5xx or no answer: Prolific may have sent it
            store.set_decision(decision, state="unsure", detail=str(error))
            raise DialevalError(f"Prolific did not confirm the message to {masked(pid)} ({error}); it may have been "
                                "sent: check on app.prolific.com; it is not sent again by itself") from None
        except ProlificError as error:  # refused unprocessed (4xx): may be sent again
            store.set_decision(decision, state="failed", detail=str(error))
            raise
        store.set_decision(decision, state="sent")
    finally:
        client.close()
    return f"sent a message to {masked(pid)}"


# ---------------------------------------------------------------- the review table
def suggest(prolific_status: str, mephisto_status: str, qc: str, failed_check: str = "return",
            attention: dict | None = None) -> str:
    """What to do with one submission, from Prolific's status, Mephisto's, the worker's QC result and the
    run's ``mephisto.provider.failed_check`` policy (Prolific allows a rejection for failed checks only as
    its attention-check policy says: docs/crowdsourcing.md, "Checks and Prolific's policy"); ``attention``: the
    worker's failed attention checks where they qualify for a rejection (platform/quality.attention_failures)."""
    if prolific_status == "AWAITING REVIEW" or (prolific_status == "ACTIVE" and mephisto_status in SUBMITTED):
        if mephisto_status not in SUBMITTED:
            return "reject NO_DATA (no finished work in Mephisto)"
        if attention:
            return (f"reject {attention['category']} (failed {attention['failed']} of {attention['items']} attention "
                    "checks: Prolific's policy allows a rejection; read the work first)")
        if qc == "fail" and failed_check == "reject":
            return "reject FAILED_CHECK (failed quality control: read the work first)"
        if qc == "fail":
            return "ask to return (failed quality control: message them on Prolific; not a reason to reject)"
        return "approve"
    if prolific_status in ("APPROVED", "REJECTED", "PARTIALLY APPROVED"):
        return "done"
    if prolific_status == "PROCESSING":
        return "wait (Prolific is processing a decision)"
    if prolific_status in ("RETURNED", "TIMED-OUT"):
        return "none (returned)"
    if prolific_status == "SCREENED OUT":
        return "none (screened out)"
    if prolific_status in ("ACTIVE", "RESERVED"):
        return "wait (still working)"
    return f"check on Prolific (status {prolific_status!r} is new to dialeval)"


def failed_check_policy(db, task_run_id: str) -> str:
    """The run's ``mephisto.provider.failed_check`` (runs launched before the option: ``return``)."""
    from mephisto.data_model.task_run import TaskRun
    from omegaconf import OmegaConf

    return OmegaConf.select(TaskRun.get(db, task_run_id).args, "provider.failed_check", default=None) or "return"


def no_qc(participant: str, mephisto_status: str) -> str:
    return "n/a"


def review_table(db, task_name: str, qc=no_qc, note: str = "", attention: dict | None = None):
    """(one row per Prolific submission of the task's studies, with what we know and suggest, and one per
    agent whose session Prolific never confirmed as theirs (``UNVERIFIED``: verify.py); ``note``).
    ``qc(participant, mephisto status)``: the worker's quality-control result, pass / fail / ... (the task's
    own check, which the layer above runs: crowdsourcing/platform/quality.py ``review_qc``), and ``note`` why
    there is none; ``attention``: {participant: their failed attention checks} where they qualify for a rejection
    (quality.py ``attention_failures``). Agents found among the study's submissions on Prolific are confirmed here
    (work from before the arrival check)."""
    import pandas as pd
    from mephisto.data_model.agent import Agent

    store = common.datastore(db)
    runs = store.all("SELECT * FROM studies WHERE task_name = ? AND study_id IS NOT NULL ORDER BY rowid", task_name)
    runs = list({run["study_id"]: run for run in runs}.values())  # a resumed run shares its study
    if not runs:
        raise DialevalError(f"no Prolific study of task {task_name!r} in {store.path} (launched with "
                            "mephisto/provider=prolific and this --mephisto-data?)")
    attention = attention or {}
    rows = []
    for run in runs:
        client = common.client_for(run["requester_name"], run["api_base_url"])
        try:
            submissions = client.submissions(run["study_id"])
            pending = bonus.settle_all(store, client, submissions)
        except ProlificNotFound:
            raise DialevalError(f"Prolific no longer knows study {run['study_id']} (task run {run['task_run_id']} of "
                                f"{task_name}); it was deleted on Prolific: review it there") from None
        finally:
            client.close()
        policy = failed_check_policy(db, run["task_run_id"])
        run_ids = [r["task_run_id"] for r in store.all("SELECT task_run_id FROM studies WHERE study_id = ?",
                                                        run["study_id"])]
        agents = [a for r in run_ids for a in store.all("SELECT * FROM agents WHERE task_run_id = ?", r)]
        verify.confirm_listed(db, agents, submissions, run["study_id"])
        for sub in submissions:
            # the latest agent: a participant who continued after a resumed launch has two
            row = store.one("SELECT * FROM agents WHERE submission_id = ? AND participant_id = ? ORDER BY rowid DESC",
                            sub["id"], verify.participant(sub))
            status = Agent.get(db, row["agent_id"]).get_status() if row else "none"
            pid = sub["participant_id"]
            qc_result = qc(pid, status)
            paid = sum(d["amount_minor"] for d in store.decisions(kind="bonus", submission_id=sub["id"], state="paid"))
            rows.append({"participant": pid, "submission": sub["id"], "study": run["study_id"],
                         "prolific_status": sub["status"], "mephisto_status": status, "qc": qc_result,
                         "bonus_paid": to_major(paid),
                         "bonus_pending": f"{pending[sub['id']]} {bonus.PENDING}" if sub["id"] in pending else "",
                         "suggestion": suggest(sub["status"], status, qc_result, policy, attention.get(pid)),
                         "agent_id": row["agent_id"] if row else None})
        for agent in agents:  # work Prolific never confirmed: no submission of theirs to review
            if verify.unconfirmed(db, agent["agent_id"], agent["participant_id"]):
                rows.append({"participant": agent["participant_id"], "submission": agent["submission_id"],
                             "study": run["study_id"], "prolific_status": UNVERIFIED,
                             "mephisto_status": Agent.get(db, agent["agent_id"]).get_status(), "qc": "-",
                             "bonus_paid": to_major(0), "bonus_pending": "", "suggestion": UNVERIFIED_SUGGESTION,
                             "agent_id": agent["agent_id"]})
    return pd.DataFrame(rows, columns=["participant", "submission", "study", "prolific_status", "mephisto_status",
                                       "qc", "bonus_paid", "bonus_pending", "suggestion",
                                       "agent_id"]), note


def agent_of(db, table, participant: str, option: str):
    """The Mephisto agent of the participant's (latest) submission in the table."""
    from mephisto.data_model.agent import Agent

    mine = table[table["participant"] == participant]
    if mine.empty:
        raise DialevalError(f"{option}: participant {participant!r} has no submission in this task's studies "
                            f"(participants: {', '.join(sorted(set(table['participant']))) or 'none'})")
    agent_id = mine["agent_id"].iloc[-1]
    if agent_id is None:
        raise DialevalError(f"{option}: participant {participant!r} never reached the task (no Mephisto agent)")
    return Agent.get(db, agent_id)
