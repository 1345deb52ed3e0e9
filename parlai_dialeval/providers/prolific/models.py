"""Mephisto 1.1.1's requester, worker, unit and agent for Prolific.

A worker is a Prolific participant (``worker_name`` = PROLIFIC_PID); an agent is one submission
(SESSION_ID); a unit is one place of the run's study. Money moves only through ``review.py``'s ledger.
"""
from __future__ import annotations

import os
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Optional

from mephisto.data_model.agent import Agent
from mephisto.data_model.constants.assignment_state import AssignmentState
from mephisto.data_model.requester import Requester, RequesterArgs
from mephisto.data_model.unit import Unit
from mephisto.data_model.worker import Worker
from mephisto.utils.logger_core import get_logger

from parlai_dialeval.compat import mephisto as compat_mephisto
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common, verify
from parlai_dialeval.providers.prolific.api import DEFAULT_API_BASE_URL, ProlificError
from parlai_dialeval.providers.prolific.endpoints import RETRY_NONE
from parlai_dialeval.providers.prolific.datastore import load_credentials, save_token

logger = get_logger(name=__name__)
PROVIDER_TYPE = common.PROVIDER_TYPE


@dataclass
class ProlificRequesterArgs(RequesterArgs):
    """Where to read the API token from: an environment variable or a file. The token itself is never a
    config value (Mephisto stores configs in its database)."""

    token_env: Optional[str] = field(default=None, metadata={"help": "environment variable holding the API token"})
    token_file: Optional[str] = field(default=None, metadata={"help": "file holding the API token (first line)"})
    api_base_url: str = field(default=DEFAULT_API_BASE_URL, metadata={"help": "Prolific API address"})


def read_token(token_env: str | None, token_file: str | None) -> str:
    """The token from ``$token_env`` or the first line of ``token_file`` (exactly one of them)."""
    if bool(token_env) == bool(token_file):
        raise DialevalError("give exactly one of --token-env VAR or --token-file PATH")
    if token_env:
        token = os.environ.get(token_env, "").strip()
        if not token:
            raise DialevalError(f"environment variable {token_env} is not set or empty "
                                "(it should hold the Prolific API token)")
        return token
    path = Path(token_file).expanduser()
    if not path.is_file():
        raise DialevalError(f"{path}: no such file (it should hold the Prolific API token)")
    token = (path.read_text().strip().splitlines() or [""])[0].strip()
    if not token:
        raise DialevalError(f"{path}: the file is empty (it should hold the Prolific API token)")
    return token


def register_token(requester_name: str, token_env: str | None, token_file: str | None,
                   api_base_url: str | None = None) -> str:
    """Read the token, check it with Prolific (GET users/me/), store it in credentials.json (0600);
    returns the API address it was checked with."""
    from parlai_dialeval.providers.prolific.api import ProlificClient

    token = read_token(token_env, token_file)
    base = api_base_url or DEFAULT_API_BASE_URL
    common.check_api_url(base)  # before the token travels anywhere
    client = ProlificClient(base, token)
    try:
        client.me()
    finally:
        client.close()
    save_token(common.provider_root(), requester_name, token, base)
    return base


class ProlificRequester(Requester):
    ArgsClass = ProlificRequesterArgs

    def register(self, args=None) -> None:
        """Check the token with Prolific and store it (``register_token``)."""
        if args is None:
            if not self.is_registered():
                raise DialevalError(f"Prolific requester {self.requester_name!r} has no token; register it again")
            return
        register_token(self.requester_name, args.get("token_env"), args.get("token_file"), args.get("api_base_url"))

    def is_registered(self) -> bool:
        try:
            load_credentials(common.provider_root(), self.requester_name)
            return True
        except DialevalError:
            return False

    def get_available_budget(self) -> float:
        """The first workspace's available balance, in major units."""
        client = common.client_for(self.requester_name)
        try:
            workspaces = client.workspaces()
            return client.balance(workspaces[0]["id"])["available_balance"] / 100 if workspaces else 0.0
        finally:
            client.close()

    @classmethod
    def is_sandbox(cls) -> bool:
        return False

    @staticmethod
    def new(db, requester_name: str) -> "Requester":
        return ProlificRequester._register_requester(db, requester_name, PROVIDER_TYPE)


class ProlificWorker(Worker):
    def bonus_worker(self, amount: float, reason: str, unit: Optional["Unit"] = None) -> tuple[bool, str]:
        """Pay ``amount`` (major units) through the ledger (bonus.py): recorded first, paid exactly once."""
        from parlai_dialeval.providers.prolific import bonus

        if unit is None:
            return False, "a Prolific bonus is paid on a submission: give the unit"
        agent = unit.get_assigned_agent()
        try:
            bonus.pay(self.db, agent, amount, reason)
        except DialevalError as error:
            return False, str(error)
        return True, ""

    def block_worker(self, reason: str, unit: Optional["Unit"] = None, requester: Optional["Requester"] = None):
        from parlai_dialeval.providers.prolific import review

        requester = requester or (unit.get_requester() if unit is not None else None)
        try:
            review.block(self.db, self.worker_name, reason, requester.requester_name if requester else None)
        except DialevalError as error:
            return False, str(error)
        return True, ""

    def unblock_worker(self, reason: str, requester: "Requester") -> bool:
        from parlai_dialeval.providers.prolific import review

        review.unblock(self.db, self.worker_name, requester.requester_name)
        return True

    def is_blocked(self, requester: "Requester") -> bool:
        return common.datastore(self.db).is_blocked(self.worker_name)

    def is_eligible(self, task_run) -> bool:
        return not common.datastore(self.db).is_blocked(self.worker_name)

    @staticmethod
    def new(db, worker_name: str) -> "Worker":
        return ProlificWorker._register_worker(db, worker_name, PROVIDER_TYPE)


GONE = common.GONE
POLL_SECONDS = 10.0  # Prolific asked about a unit at most this often; Mephisto's launcher polls it every second


class ProlificUnit(Unit):
    def launch(self, task_url: str) -> None:
        """One more place on the run's study (places only grow once a study is published)."""
        from parlai_dialeval.providers.prolific.study import sync_places

        common.datastore(self.db).launch_place(self.task_run_id)
        sync_places(self.db, self.task_run_id)  # never raises: Mephisto launches units in one thread
        self.set_db_status(AssignmentState.LAUNCHED)

    _last_poll: ClassVar[dict] = {}  # unit id -> when Prolific was last asked about its submission
    _last_sync: ClassVar[dict] = {}  # task run id -> when its places were last compared with its units

    def get_status(self) -> str:
        """Mephisto's status; while a participant works on the unit, also Prolific's view of the
        submission, at most once per POLL_SECONDS per unit whoever asks (Mephisto's launcher and its
        run tracker both poll): returned or timed out on Prolific frees the unit."""
        status = super().get_status()
        now = time.monotonic()
        if status == AssignmentState.LAUNCHED:  # a place refused at launch is asked for again, once per run
            if now - self._last_sync.get(self.task_run_id, -POLL_SECONDS) >= POLL_SECONDS:
                from parlai_dialeval.providers.prolific.study import sync_places

                self._last_sync[self.task_run_id] = now
                sync_places(self.db, self.task_run_id)
            return status
        if status != AssignmentState.ASSIGNED:
            return status
        if now - self._last_poll.get(self.db_id, -POLL_SECONDS) < POLL_SECONDS:
            return status
        self._last_poll[self.db_id] = now
        agent = self.get_assigned_agent()
        row = common.datastore(self.db).agent(agent.db_id) if agent is not None else None
        if row is None or not row.get("submission_id"):
            return status
        try:
            client, _ = common.client_for_run(self.db, self.task_run_id)
            try:
                remote = client.submission(row["submission_id"], retry=RETRY_NONE)
            finally:
                client.close()
        except (ProlificError, DialevalError) as error:
            logger.warning(f"could not poll Prolific submission {row['submission_id']}: {error}")
            return status
        verify.changed(self.db, self.task_run_id, row["submission_id"], remote.get("status"))
        return status

    def expire(self) -> float:
        """Prolific cannot take a place back from a published study: the unit is expired here, and the
        study is stopped once none of the run's units can be worked on."""
        if self.get_status() not in (AssignmentState.EXPIRED, *AssignmentState.completed()):
            self.set_db_status(AssignmentState.EXPIRED)
        from parlai_dialeval.providers.prolific.study import stop_if_done

        stop_if_done(self.db, self.task_run_id)
        return 0.0

    def is_expired(self) -> bool:
        return self.db_status == AssignmentState.EXPIRED

    @staticmethod
    def new(db, assignment, index: int, pay_amount: float) -> "Unit":
        return ProlificUnit._register_unit(db, assignment, index, pay_amount, PROVIDER_TYPE)


class ProlificAgent(Agent):
    # agent id -> the object Mephisto's worker pool holds (the one made here): a status set on another copy
    # reaches the database but not the run, whose unit would wait on for the agent's work
    _live: ClassVar[weakref.WeakValueDictionary] = weakref.WeakValueDictionary()

    @classmethod
    def live(cls, db, agent_id: str) -> Agent:
        """The run's own object of an agent where the run holds one, else one read from the database."""
        return cls._live.get(str(agent_id)) or Agent.get(db, agent_id)

    @classmethod
    def new_from_provider_data(cls, db, worker, unit, provider_data: Mapping[str, Any]) -> "Agent":
        """A participant arriving from Prolific: remember which submission (SESSION_ID) this agent is."""
        agent = cls.new(db, worker, unit)
        cls._live[str(agent.db_id)] = agent
        unit.worker_id = worker.db_id
        compat_mephisto.share_unit(agent, unit)
        study = common.datastore(db).study_of_run(unit.task_run_id) or {}
        came_from = provider_data.get("study_id")
        if came_from and study.get("study_id") and came_from != study["study_id"]:
            # both come from the page: cut, since the launch log's wrapping slows with the square of a line
            logger.warning(f"participant {worker.worker_name[:40]} came from study {str(came_from)[:40]}, but task "
                           f"run {unit.task_run_id} is study {study['study_id']}")
        common.datastore(db).add_agent(agent.db_id, unit.task_run_id, unit.db_id, worker.worker_name,
                                       came_from or study.get("study_id"), provider_data.get("assignment_id"))
        return agent

    def submission_id(self) -> str:
        row = common.datastore(self.db).agent(self.db_id)
        if not row or not row.get("submission_id"):
            raise DialevalError(f"agent {self.db_id} has no Prolific submission "
                                "(the participant arrived without SESSION_ID)")
        return row["submission_id"]

    def approve_work(self) -> None:
        from parlai_dialeval.providers.prolific import review

        review.approve(self.db, self)

    def reject_work(self, reason, category: str = "OTHER") -> None:
        from parlai_dialeval.providers.prolific import review

        review.reject(self.db, self, reason, category)

    def mark_done(self) -> None:
        """Mephisto accepted the unit: complete the participant's submission on Prolific with the study's
        completion code, which never reaches the page (``completion.py``)."""
        from parlai_dialeval.providers.prolific.completion import complete_submission

        if (self.state.get_data() or {}).get("outputs"):  # Mephisto also ends units nobody submitted
            complete_submission(self.db, self)

    @staticmethod
    def new(db, worker, unit) -> "Agent":
        return ProlificAgent._register_agent(db, worker, unit, PROVIDER_TYPE)
