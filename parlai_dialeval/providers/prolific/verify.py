"""Who may take a place: every arrival's PROLIFIC_PID and SESSION_ID are checked with Prolific first.

The page sends whatever its URL holds, and anyone can type a URL. Before Mephisto creates a worker,
reserves a unit or creates an agent (``compat/mephisto.py``, ``arrivals_checked``), ``refusal`` asks
Prolific for the submission named by SESSION_ID (``GET submissions/{id}/``, one call per arrival; 429 and
5xx retried by the client as everywhere) and admits the arrival only when that submission exists, belongs
to the study of this run and to that participant, and is under way (``ACTIVE``, or ``RESERVED``: the
place is taken and not yet opened). A session once confirmed is kept in ``prolific.db`` (table
``verified``), so a participant who reloads, or returns after a restart of the launch, costs no second
call; a session Prolific refused is remembered in memory for a minute, so a stranger reloading a
made-up link costs none either. Ids that cannot be Prolific's are refused without asking (they would also travel in the
call's path).

Work in Mephisto's database whose agent was never confirmed (from a launch before this check, or any
path around it) is *unverified*: ``dialeval export`` marks its records ``unverified: true``, analyses
leave them out unless ``--include-unverified``, and ``dialeval review`` lists them; ``review`` also
confirms, from Prolific's list of the study's submissions, the agents it finds there.
"""
from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict

from mephisto.utils.logger_core import get_logger

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common
from parlai_dialeval.providers.prolific.api import ProlificError, ProlificNotFound

logger = get_logger(name=__name__)

# Prolific's ids are 24 hexadecimal characters; nothing but letters, digits, _ and - is asked about (it goes in a path)
PROLIFIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
UNDER_WAY = frozenset({"ACTIVE", "RESERVED"})  # Prolific's submission statuses of a participant taking part
LOOKUP_RETRIES = 2  # a participant waits for the answer: fewer retries than the review loop's
REFUSED_REMEMBERED = 10_000  # made-up sessions kept in memory (bounded: a stranger can make up any number)
REFUSED_SECONDS = 60.0  # for so long; then asked again (a submission Prolific had not shown yet shows by then)

UNKNOWN = ("Prolific does not know this participant and session for this study, so there is no place for you "
           "here. Please open the study from your Prolific account (app.prolific.com) to take part.")
UNCONFIRMED = ("We could not confirm your Prolific session just now. Please reload this page in a minute; "
               "if it keeps happening, message the researcher on Prolific.")

# the table lives here rather than in datastore.SCHEMA: one module owns the verification (created on first use)
TABLE = """CREATE TABLE IF NOT EXISTS verified (
    submission_id TEXT PRIMARY KEY, participant_id TEXT, study_id TEXT, status TEXT, source TEXT, checked REAL)"""
_tables: set[str] = set()
# (session, participant) refused in this process -> when, oldest first; by pair, so that naming someone's
# session with another participant id never locks its owner out
_refused: OrderedDict[tuple[str, str], float] = OrderedDict()
_lock = threading.Lock()


def _store(db):
    store = common.datastore(db)
    if str(store.path) not in _tables:
        store.run(TABLE)
        _tables.add(str(store.path))
    return store


def participant(submission: dict) -> str | None:
    """The participant of a submission: ``participant`` in Prolific's single-submission answer,
    ``participant_id`` in its lists (Prolific's API reference, "Retrieve a submission", "List submissions")."""
    return submission.get("participant") or submission.get("participant_id")


def record(db, submission_id: str, participant_id: str, study_id: str, status: str, source: str) -> None:
    """Remember a session Prolific confirmed (``source``: ``arrival`` or ``review``)."""
    _store(db).run("INSERT OR REPLACE INTO verified VALUES (?, ?, ?, ?, ?, ?)", submission_id, participant_id,
                   study_id, status, source, time.time())


def confirmed(db, submission_id: str | None) -> dict | None:
    return _store(db).one("SELECT * FROM verified WHERE submission_id = ?", submission_id) if submission_id else None


def _remember_refused(key: tuple[str, str]) -> None:
    with _lock:
        _refused[key] = time.monotonic()
        _refused.move_to_end(key)
        while len(_refused) > REFUSED_REMEMBERED:
            _refused.popitem(last=False)


def _cut(value) -> str:
    """A stranger's value, short enough for one log line (the launch log's wrapping slows with the square of a line)."""
    return repr(value)[:40]


def refusal(db, task_run_id: str, crowd_data: dict) -> str | None:
    """None when Prolific confirms the arrival; else the message the participant's page shows."""
    pid, session = crowd_data.get("worker_name"), crowd_data.get("assignment_id")
    came_from = crowd_data.get("study_id")
    if not all(isinstance(v, str) and PROLIFIC_ID.fullmatch(v) for v in (pid, session)):
        logger.warning(f"refused an arrival with ids Prolific never gives: PROLIFIC_PID {_cut(pid)}, "
                       f"SESSION_ID {_cut(session)}")
        return UNKNOWN
    study = common.datastore(db).study_of_run(task_run_id) or {}
    study_id = study.get("study_id")
    if not study_id or (came_from is not None and came_from != study_id):
        logger.warning(f"refused participant {pid}: came from study {_cut(came_from)}, this run is {study_id}")
        return UNKNOWN
    known = confirmed(db, session)
    if known is not None:
        if known["participant_id"] == pid and known["study_id"] == study_id:
            return None
        logger.warning(f"refused participant {pid}: session {session} is another participant's or study's")
        return UNKNOWN
    with _lock:
        if time.monotonic() - _refused.get((session, pid), -REFUSED_SECONDS) < REFUSED_SECONDS:
            return UNKNOWN
    try:
        client, _ = common.client_for_run(db, task_run_id)
        client.max_retries = min(client.max_retries, LOOKUP_RETRIES)
        try:
            remote = client.submission(session)
        finally:
            client.close()
    except ProlificNotFound:
        remote = None
    except (ProlificError, DialevalError) as error:  # Prolific did not answer: the participant may try again
        logger.warning(f"could not check participant {pid}'s session {session} with Prolific: {error}")
        return UNCONFIRMED
    problem = ("unknown to Prolific" if remote is None
               else "of another study" if remote.get("study_id") != study_id
               else "of another participant" if participant(remote) != pid
               else f"{remote.get('status')} on Prolific" if remote.get("status") not in UNDER_WAY else None)
    if problem:
        logger.warning(f"refused participant {pid}: session {session} is {problem}")
        _remember_refused((session, pid))
        return UNKNOWN
    record(db, session, pid, study_id, remote["status"], "arrival")
    return None


def confirm_listed(db, agents: list[dict], submissions: list[dict], study_id: str) -> None:
    """Confirm the agents whose session is among the study's submissions on Prolific, as that participant's
    (``review``: work from before the arrival check, or whose confirmation was lost)."""
    listed = {s["id"]: s for s in submissions}
    for agent in agents:
        sub = listed.get(agent["submission_id"])
        if sub is not None and participant(sub) == agent["participant_id"] and confirmed(db, sub["id"]) is None:
            record(db, sub["id"], agent["participant_id"], study_id, sub.get("status"), "review")


def unconfirmed(db, agent_id: str, participant_id: str, onboarding_run: str | None = None) -> bool:
    """Whether Prolific never confirmed a Prolific agent's identity: a unit agent's own session (its
    ``agents`` row), or for an onboarding attempt in task run ``onboarding_run`` (it has no session of its
    own) any session of the participant in that run's study."""
    if onboarding_run is not None:
        study = (common.datastore(db).study_of_run(onboarding_run) or {}).get("study_id")
        return _store(db).one("SELECT 1 AS c FROM verified WHERE participant_id = ? AND study_id = ?",
                              participant_id, study) is None
    row = common.datastore(db).agent(str(agent_id))
    known = confirmed(db, row.get("submission_id")) if row else None
    return known is None or known["participant_id"] != row.get("participant_id")
