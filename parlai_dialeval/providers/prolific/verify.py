"""Who may take a place: every arrival's PROLIFIC_PID and SESSION_ID are checked with Prolific first, and again
at every page load.

The page sends whatever its URL holds, and anyone can type a URL. Before Mephisto creates a worker, reserves a
unit or creates an agent, and before it hands a reloading page its agent again (``compat/mephisto_arrivals.py``),
``refusal`` asks Prolific for the submission named by SESSION_ID (``GET submissions/{id}/``) and admits the
arrival only when that submission exists, belongs to the study of this run and to that participant, and is under
way (``ACTIVE``, or ``RESERVED``: the place is taken and not yet opened). A confirmation serves only the
page loads of one arrival (``CONFIRMED_SECONDS``): a participant who has since returned the study, timed out
or submitted is asked about again and refused. A session that already has its unit (``units_per_submission``,
one unless the researcher says otherwise, whatever Mephisto's ``maximum_units_per_worker``) gets no second one.

What strangers may make us ask is bounded (``budget.py``): per source and in total per minute, paused after
Prolific's 429; a session Prolific refused is remembered for a minute (``REFUSED_SECONDS``), so a stranger
reloading a made-up link costs nothing either. Ids that cannot be Prolific's are refused without asking (they
would also travel in the call's path). The source is the address the router saw (``source_of``).

Every session Prolific confirmed is recorded in ``prolific.db`` (table ``verified``) with the last status we
learnt of it (at an arrival, from the unit's poll, a webhook, the review's list). Work whose agent was never
confirmed (from a launch before this check, or any path around it), or whose submission was since returned or
timed out, is not the study's: ``dialeval export`` marks its records ``unverified: true`` (and the work of a
returned submission ``returned``, never complete), analyses leave them out unless ``--include-unverified``,
and ``dialeval review`` lists them; ``review`` also confirms, from Prolific's list of the study's submissions,
the agents it finds there.
"""
from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict

from mephisto.utils.logger_core import get_logger

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common
from parlai_dialeval.providers.prolific.api import ProlificError, ProlificNotFound, ProlificRateLimited
from parlai_dialeval.providers.prolific.budget import CallBudget
from parlai_dialeval.retry import RetryPolicy

logger = get_logger(name=__name__)

# Prolific's ids are 24 hexadecimal characters; nothing but letters, digits, _ and - is asked about (it goes in a path)
PROLIFIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
UNDER_WAY = frozenset({"ACTIVE", "RESERVED"})  # Prolific's submission statuses of a participant taking part
GONE = common.GONE
LOOKUP_RETRIES = 2  # a participant waits for the answer: fewer retries than the review loop's
# ... and never long: a 429 asking for more than 5 s pauses every check instead (budget.py)
LOOKUP_POLICY = RetryPolicy(backoff=0.5, max_backoff=2.0, max_retry_after=5.0)
CONFIRMED_SECONDS = 10.0  # a confirmation serves one arrival's page loads; later ones are asked about again
ADMITTING_SECONDS = 30.0  # an admitted arrival counts as its session's unit until Mephisto has placed it (or not)
REFUSED_REMEMBERED = 10_000  # made-up sessions kept in memory (bounded: a stranger can make up any number)
REFUSED_SECONDS = 60.0  # for so long; then asked again (a submission Prolific had not shown yet shows by then)
SOURCE_FIELD = "dialeval_source"  # what the router adds to a registration: the address it came from
SUBMITTED = frozenset({"completed", "approved", "rejected", "soft_rejected"})  # Mephisto: work handed in
HOLDING = frozenset({"none", "accepted", "onboarding", "waiting", "in task"})  # Mephisto: working on it now

UNKNOWN = ("Prolific does not know this participant and session for this study, so there is no place for you "
           "here. Please open the study from your Prolific account (app.prolific.com) to take part.")
UNCONFIRMED = ("We could not confirm your Prolific session just now. Please reload this page in a minute; "
               "if it keeps happening, message the researcher on Prolific.")
GONE_MESSAGE = ("Prolific shows that this session of the study has ended (returned or timed out), so there is no "
                "place for it here any more. If you think this is a mistake, message the researcher on Prolific.")
DONE_MESSAGE = ("You have already done this study's task in this Prolific session: thank you! There is no further "
                "task for you here. If you think this is a mistake, message the researcher on Prolific.")
BUSY = ("Many people are starting this study right now, so we could not confirm your Prolific session. Please "
        "reload this page in a minute.")

# the table lives here rather than in datastore.SCHEMA: one module owns the verification (created on first use)
TABLE = """CREATE TABLE IF NOT EXISTS verified (
    submission_id TEXT PRIMARY KEY, participant_id TEXT, study_id TEXT, status TEXT, source TEXT, checked REAL)"""
_tables: set[str] = set()
_lock = threading.Lock()
clock = time.monotonic  # the caches' clock (a test moves it rather than waiting)
budget = CallBudget()  # set up for each run from its settings (``configure``)
# (session, participant) refused in this process -> when, oldest first; by pair, so that naming someone's
# session with another participant id never locks its owner out
_refused: OrderedDict[tuple[str, str], float] = OrderedDict()
_confirmed: OrderedDict[str, float] = OrderedDict()  # session -> when Prolific last said it is under way
_admitting: dict[tuple[str, str], list[float]] = {}  # (task run, session) -> when places were given, agent to come
_units: dict[str, int] = {}  # task run -> units a session may have (0: as many as Mephisto gives)


def configure(task_run_id: str, provider) -> None:
    """A run's settings of its arrivals: ``mephisto.provider.units_per_submission``, and the budgets of the
    checks (``arrival_checks_per_source``, ``arrival_checks_per_minute``: one token, one budget)."""
    global budget
    _units[str(task_run_id)] = int(provider.get("units_per_submission", 1))
    budget = CallBudget(per_source=int(provider.get("arrival_checks_per_source", 30)),
                        total=int(provider.get("arrival_checks_per_minute", 300)))


def source_of(crowd_data: dict) -> str | None:
    """The address an arrival came from, as the router saw it (its claims module adds it to every registration
    and removes whatever the page put there); None where no router stands in between (the mock architect)."""
    source = crowd_data.get(SOURCE_FIELD)
    return source[:64] if isinstance(source, str) and source else None


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


def note_status(db, submission_id: str, status: str) -> None:
    """What Prolific says a confirmed session's submission now is (a poll, a webhook, the review's list); a
    session that is no longer under way is asked about again at its next page load."""
    if status not in UNDER_WAY:
        with _lock:
            _confirmed.pop(submission_id, None)
    _store(db).run("UPDATE verified SET status = ? WHERE submission_id = ?", status, submission_id)


def changed(db, task_run_id: str, submission_id: str, status: str) -> int:
    """Prolific says the submission is now ``status`` (a webhook, a reload): noted, and if it ended (returned,
    timed out, screened out) its agents still at work in the run are returned, which gives their units back at
    once. Returns how many were."""
    from mephisto.abstractions.blueprint import AgentState

    from parlai_dialeval.providers.prolific.models import ProlificAgent

    note_status(db, submission_id, status)
    if status not in GONE:
        return 0
    freed = 0
    for row in common.datastore(db).all("SELECT agent_id FROM agents WHERE submission_id = ? AND task_run_id = ?",
                                        submission_id, str(task_run_id)):
        agent = ProlificAgent.live(db, row["agent_id"])
        if agent.get_status() not in AgentState.complete():
            agent.update_status(AgentState.STATUS_RETURNED)
            freed += 1
    return freed


def confirmed(db, submission_id: str | None) -> dict | None:
    return _store(db).one("SELECT * FROM verified WHERE submission_id = ?", submission_id) if submission_id else None


def _remember(cache: OrderedDict, key) -> None:
    with _lock:
        cache[key] = clock()
        cache.move_to_end(key)
        while len(cache) > REFUSED_REMEMBERED:
            cache.popitem(last=False)


def _recent(cache: OrderedDict, key, seconds: float) -> bool:
    with _lock:
        return clock() - cache.get(key, -seconds) < seconds


def _cut(value) -> str:
    """A stranger's value, short enough for one log line (the launch log's wrapping slows with the square of a line)."""
    return repr(value)[:40]


def refusal(db, task_run_id: str, crowd_data: dict, reconnecting: str | None = None) -> str | None:
    """None when Prolific confirms the arrival (``reconnecting``: the agent a reloading page asks for again);
    else the message the participant's page shows."""
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
    if known is not None and (known["participant_id"] != pid or known["study_id"] != study_id):
        logger.warning(f"refused participant {pid}: session {session} is another participant's or study's")
        return UNKNOWN
    if known is not None and known["status"] in GONE:  # Prolific never reopens a submission that ended
        return GONE_MESSAGE
    if reconnecting is None and _units_taken(db, task_run_id, session) >= _units_allowed(task_run_id):
        logger.warning(f"refused participant {pid}: session {session} has had its unit(s) of this study")
        return DONE_MESSAGE
    if known is None or not _recent(_confirmed, session, CONFIRMED_SECONDS):
        problem = _ask(db, task_run_id, session, pid, study_id, source_of(crowd_data))
        if problem is not None:
            return problem
    if reconnecting is None:
        with _lock:
            _admitting.setdefault((str(task_run_id), session), []).append(clock())
    return None


def _ask(db, task_run_id: str, session: str, pid: str, study_id: str, source: str | None) -> str | None:
    """Ask Prolific about the session (within the budgets); None when it is this participant's, of this study
    and under way (then recorded), else the page's message."""
    if _recent(_refused, (session, pid), REFUSED_SECONDS):
        return UNKNOWN
    spent = budget.take(source)
    if spent is not None:
        logger.warning(f"did not check participant {pid}'s session {session} with Prolific: the {spent} budget "
                       f"of arrival checks is spent{f' (source {_cut(source)})' if source else ''}")
        return BUSY
    try:
        client, _ = common.client_for_run(db, task_run_id)
        client.max_retries, client.retry = min(client.max_retries, LOOKUP_RETRIES), LOOKUP_POLICY
        try:
            remote = client.submission(session)
        finally:
            client.close()
        budget.answered()
    except ProlificNotFound:
        remote = None
    except ProlificRateLimited as error:  # the token is throttled: every check pauses
        paused = budget.throttled(error.retry_after)
        logger.warning(f"Prolific is rate-limiting the token: arrival checks pause for {paused:.0f} s")
        return UNCONFIRMED
    except (ProlificError, DialevalError) as error:  # Prolific did not answer: the participant may try again
        logger.warning(f"could not check participant {pid}'s session {session} with Prolific: {error}")
        return UNCONFIRMED
    problem = ("unknown to Prolific" if remote is None
               else "of another study" if remote.get("study_id") != study_id
               else "of another participant" if participant(remote) != pid
               else f"{remote.get('status')} on Prolific" if remote.get("status") not in UNDER_WAY else None)
    if problem is None:
        record(db, session, pid, study_id, remote["status"], "arrival")
        _remember(_confirmed, session)
        return None
    logger.warning(f"refused participant {pid}: session {session} is {problem}")
    _remember(_refused, (session, pid))
    if remote is not None and participant(remote) == pid and remote.get("study_id") == study_id:
        changed(db, task_run_id, session, remote["status"])
        return GONE_MESSAGE if remote["status"] in GONE else DONE_MESSAGE
    return UNKNOWN


def _units_allowed(task_run_id: str) -> float:
    """``mephisto.provider.units_per_submission`` of the run (0: as many as Mephisto gives)."""
    allowed = _units.get(str(task_run_id), 1)
    return float("inf") if not allowed else allowed


def _units_taken(db, task_run_id: str, session: str) -> int:
    """Units the session holds or has handed in: its agents' in this study that submitted, or are working in
    this run now, and places being given to it this very moment."""
    rows = common.datastore(db).all("SELECT agent_id, task_run_id FROM agents WHERE submission_id = ?", session)
    taken = 0
    for row in rows:
        found = db.get_agent(row["agent_id"])
        status = found["status"] if found is not None else None
        taken += status in SUBMITTED or (status in HOLDING and row["task_run_id"] == str(task_run_id))
    with _lock:
        key = (str(task_run_id), session)
        _admitting[key] = [at for at in _admitting.get(key, []) if clock() - at < ADMITTING_SECONDS]
        return taken + len(_admitting[key])


def settled(task_run_id: str, session: str | None) -> None:
    """An admitted arrival has its agent (counted from ``agents`` now), or Mephisto had no place for it."""
    with _lock:
        pending = _admitting.get((str(task_run_id), session or ""))
        if pending:
            pending.pop(0)


def confirm_listed(db, agents: list[dict], submissions: list[dict], study_id: str) -> None:
    """Confirm the agents whose session is among the study's submissions on Prolific, as that participant's
    (``review``: work from before the arrival check, or whose confirmation was lost), and note every listed
    submission's status."""
    listed = {s["id"]: s for s in submissions}
    for agent in agents:
        sub = listed.get(agent["submission_id"])
        if sub is not None and participant(sub) == agent["participant_id"] and confirmed(db, sub["id"]) is None:
            record(db, sub["id"], agent["participant_id"], study_id, sub.get("status"), "review")
    for sub in submissions:
        note_status(db, sub["id"], sub.get("status"))


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


def ended(db, agent_id: str) -> bool:
    """Whether a unit agent's submission was returned, timed out or screened out on Prolific (as last heard):
    its work can never be paid, and is exported apart, never as complete."""
    row = common.datastore(db).agent(str(agent_id))
    known = confirmed(db, row.get("submission_id")) if row else None
    return known is not None and known["status"] in GONE
