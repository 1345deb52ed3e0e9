"""``mephisto/provider=prolific``: one Prolific study per task run, run through Mephisto 1.1.1.

The provider class only wires Mephisto's hooks to the modules that do the work: ``settings`` (the
options and the preflight with Prolific, before anything exists), ``page`` (the participant's page),
``verify`` (who may take a place) and ``study`` (the study's life on Prolific).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Optional

from mephisto.abstractions.crowd_provider import CrowdProvider
from mephisto.operations.registry import register_mephisto_abstraction
from mephisto.utils.logger_core import get_logger

from parlai_dialeval.providers.prolific import common, study, verify, webhooks
from parlai_dialeval.providers.prolific.api import DEFAULT_COMPLETION_URL, ProlificClient
from parlai_dialeval.providers.prolific.datastore import ProlificDatastore
from parlai_dialeval.providers.prolific.models import (ProlificAgent, ProlificRequester, ProlificUnit,
                                                       ProlificWorker)
from parlai_dialeval.providers.prolific.page import render_wrapper
from parlai_dialeval.providers.prolific.settings import ProlificProviderArgs, preflight

logger = get_logger(name=__name__)


@register_mephisto_abstraction()
class ProlificProvider(CrowdProvider):
    PROVIDER_TYPE = common.PROVIDER_TYPE
    UnitClass = ProlificUnit
    RequesterClass = ProlificRequester
    WorkerClass = ProlificWorker
    AgentClass = ProlificAgent
    ArgsClass = ProlificProviderArgs

    # assert_task_args (a classmethod, before the run exists) hands its checked plan to setup here
    _plan: ClassVar[dict] = {}
    _wrapper: ClassVar[Optional[Path]] = None
    # task run id -> the line saying where its study is (the launch shows it: crowdsourcing/platform/runner.py)
    _announced: ClassVar[dict] = {}

    def initialize_provider_datastore(self, storage_path: str) -> Any:
        return ProlificDatastore(storage_path)

    @classmethod
    def assert_task_args(cls, args, shared_state) -> None:
        cls._plan = preflight(args, shared_state)
        cls._wrapper = render_wrapper(cls._plan["completion_url"])

    @classmethod
    def get_wrapper_js_path(cls):
        if cls._wrapper is None:
            cls._wrapper = render_wrapper(DEFAULT_COMPLETION_URL)
        return str(cls._wrapper)

    def setup_resources_for_task_run(self, task_run, args, shared_state, server_url: str) -> None:
        plan = type(self)._plan
        if not plan or plan["requester_name"] != task_run.get_requester().requester_name:
            plan = preflight(args, shared_state)
        verify.configure(task_run.db_id, args.provider)
        line = study.set_up(self.datastore, task_run, plan, args, server_url)
        if args.provider.get("webhook_url"):
            client = ProlificClient(plan["api_base_url"], plan["token"], max_retries=plan["max_retries"])
            try:
                line += "\n" + webhooks.start(self.db, task_run.db_id, client, plan["workspace_id"],
                                              args.provider.webhook_url, int(args.provider.get("webhook_port") or 0))
            finally:
                client.close()
        for part in line.splitlines():
            logger.info(part)
        type(self)._announced[str(task_run.db_id)] = line

    @classmethod
    def announcement(cls, task_run_id: str) -> Optional[str]:
        """What the launch tells the researcher about run ``task_run_id``'s study (None before it is set up)."""
        return cls._announced.get(str(task_run_id))

    def refuse_arrival(self, task_run, crowd_data) -> Optional[str]:
        """Asked before an arrival gets a place (compat/mephisto_arrivals.py): None when Prolific confirms the
        participant's session and it has no unit yet (verify.py), else the message their page shows. Never
        raises: an exception here would leave the page waiting for an answer."""
        return self._refusal(task_run, crowd_data, None)

    def arrival_settled(self, task_run, crowd_data) -> None:
        """An arrival it admitted has its agent, or Mephisto had no place for it: no longer on its way."""
        verify.settled(task_run.db_id, (crowd_data or {}).get("assignment_id"))

    def refuse_reconnect(self, task_run, crowd_data, agent_id: str) -> Optional[str]:
        """Asked before a reloading page gets its agent back: None while the session is still under way."""
        return self._refusal(task_run, crowd_data, str(agent_id))

    def _refusal(self, task_run, crowd_data, reconnecting: Optional[str]) -> Optional[str]:
        try:
            return verify.refusal(self.db, task_run.db_id, dict(crowd_data) if isinstance(crowd_data, dict) else {},
                                  reconnecting)
        except Exception as error:  # noqa: BLE001  (a bug or a broken prolific.db: refuse, say why in the log)
            logger.exception(f"checking an arrival failed: {type(error).__name__}")
            return verify.UNCONFIRMED

    def cleanup_resources_from_task_run(self, task_run, server_url: str) -> None:
        study.stop_if_done(self.db, task_run.db_id)
        webhooks.stop(self.db, task_run.db_id)
