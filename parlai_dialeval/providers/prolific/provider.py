"""``mephisto/provider=prolific``: one Prolific study per task run, run through Mephisto 1.1.1.

Before anything is created (``assert_task_args``, which Mephisto runs before it writes the run to its
database): the token is checked, the settings too (reward at least Prolific's minimum hourly rate), the
run's cost comes from Prolific's cost calculator and is printed with the workspace balance, and the
launch stops when the balance is short. ``setup_resources_for_task_run`` then creates and publishes the
study; if that fails half way, the study it created is deleted again (no orphan study on Prolific).
"""
from __future__ import annotations

import atexit
import json
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, List, Optional

from mephisto.abstractions.crowd_provider import CrowdProvider, ProviderArgs
from mephisto.data_model.constants.assignment_state import AssignmentState
from mephisto.operations.registry import register_mephisto_abstraction
from mephisto.utils.logger_core import get_logger
from omegaconf import OmegaConf

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common
from parlai_dialeval.providers.prolific.api import (DEFAULT_API_BASE_URL, DEFAULT_COMPLETION_URL, RETRY_ON_429,
                                                    ProlificError, ProlificServerError, to_major, to_minor)
from parlai_dialeval.providers.prolific.datastore import ProlificDatastore, load_credentials
from parlai_dialeval.providers.prolific.models import (ProlificAgent, ProlificRequester, ProlificUnit,
                                                       ProlificWorker)

logger = get_logger(name=__name__)
WRAPPER_TEMPLATE = Path(__file__).with_name("wrap_crowd_source.js")


@dataclass
class ProlificProviderArgs(ProviderArgs):
    """Settings of ``mephisto.provider`` for Prolific (money in major units: 2.50 means 2.50 GBP)."""

    _provider_type: str = common.PROVIDER_TYPE
    reward: Optional[float] = field(default=None, metadata={
        "help": "payment per participant in major units of `currency` (2.50 = 2.50 GBP); default "
                "mephisto.task.task_reward"})
    currency: str = field(default="GBP", metadata={
        "help": "the workspace's currency (GBP or USD); the launch stops if Prolific reports another"})
    estimated_completion_time: int = field(default=10, metadata={
        "help": "minutes a participant needs (Prolific shows it and checks the hourly rate against it)"})
    minimum_hourly_rate: float = field(default=6.0, metadata={
        "help": "refuse a reward below this many major units per hour (Prolific's minimum: check its "
                "current figure for your currency)"})
    places: Optional[int] = field(default=None, metadata={
        "help": "places to budget for; default the run's units (mephisto.blueprint.num_conversations for chat "
                "tasks, the number of task data items for static ones)"})
    api_base_url: str = field(default=DEFAULT_API_BASE_URL, metadata={
        "help": "Prolific's API address (point it at `python -m parlai_dialeval.providers.prolific.fake` to rehearse)"})
    completion_url: str = field(default=DEFAULT_COMPLETION_URL, metadata={
        "help": "where the page sends participants after they submit (?cc=CODE is added)"})
    public_url: Optional[str] = field(default=None, metadata={
        "help": "the HTTPS address participants reach the task at (your reverse proxy in front of the local "
                "architect); default: the address the architect reports"})
    workspace: Optional[str] = field(default=None, metadata={
        "help": "Prolific workspace title (its balance pays the study); default: your first workspace"})
    project: str = field(default="dialeval", metadata={
        "help": "project (inside the workspace) that holds the study; created when missing"})
    eligibility_filters: List[Any] = field(default_factory=list, metadata={
        "help": "Prolific study filters as the API takes them, e.g. "
                "[{filter_id: current-country-of-residence, selected_values: ['1']}]"})
    allow_list: List[str] = field(default_factory=list, metadata={
        "help": "only these Prolific participant ids may take part (custom_allowlist filter)"})
    block_list: List[str] = field(default_factory=list, metadata={
        "help": "these participant ids may not take part (custom_blocklist filter), besides everyone "
                "blocked with `dialeval review --block`"})
    block_group: str = field(default="dialeval_blocked", metadata={
        "help": "participant group in the workspace holding everyone blocked with `dialeval review --block`; "
                "every study excludes it"})
    max_retries: int = field(default=5, metadata={
        "help": "retries of a call answered 429 or 5xx (waiting as Retry-After says, else backing off)"})


def settings(args) -> dict:
    """The provider settings checked, money in minor units; raises one clear line per mistake."""
    p, task = args.provider, args.task
    reward = p.get("reward") if p.get("reward") is not None else task.get("task_reward")
    if reward is None:
        raise DialevalError("mephisto.provider.reward: set the payment per participant (major units, e.g. 2.50)")
    reward_minor = to_minor(reward, "mephisto.provider.reward")
    minutes = int(p.get("estimated_completion_time") or 0)
    if minutes <= 0:
        raise DialevalError("mephisto.provider.estimated_completion_time: give the minutes a participant needs (> 0)")
    hourly_minor = reward_minor * 60 / minutes
    minimum_minor = to_minor(p.get("minimum_hourly_rate", 0), "mephisto.provider.minimum_hourly_rate")
    currency = str(p.get("currency") or "GBP").upper()
    if hourly_minor < minimum_minor:
        raise DialevalError(
            f"mephisto.provider.reward: {to_major(reward_minor)} {currency} for {minutes} minutes is "
            f"{to_major(round(hourly_minor))} {currency}/hour, below Prolific's minimum of "
            f"{to_major(minimum_minor)} {currency}/hour; raise the reward or lower estimated_completion_time")
    return {"reward_minor": reward_minor, "minutes": minutes, "currency": currency,
            "api_base_url": p.get("api_base_url") or DEFAULT_API_BASE_URL,
            "completion_url": p.get("completion_url") or DEFAULT_COMPLETION_URL,
            "max_retries": int(p.get("max_retries", 5))}


def expected_places(args, shared_state) -> int:
    if args.provider.get("places"):
        return int(args.provider.places)
    blueprint = args.blueprint
    if blueprint.get("num_conversations") is not None:
        return int(blueprint.num_conversations)
    data = getattr(shared_state, "static_task_data", None)
    if isinstance(data, (list, tuple)) and data:
        return len(data) * int(blueprint.get("units_per_assignment", 1) or 1)
    raise DialevalError("mephisto.provider.places: cannot tell how many units this run has; set it")


def require_requester(args, db) -> None:
    """One clear line when the run names no registered Prolific requester."""
    name = args.provider.get("requester_name", None)
    known = [r.requester_name for r in db.find_requesters(provider_type=common.PROVIDER_TYPE)]
    if (name and name not in known) or not known:
        raise DialevalError(f"no Prolific requester {name or ''} registered in {db.db_path}"
                            f"{' (registered: ' + ', '.join(known) + ')' if known else ''}; run "
                            f"`dialeval prolific register {name or 'NAME'} --token-env VAR` first")


def find_workspace(client, title: str | None) -> dict:
    workspaces = client.results("workspaces/")
    if not workspaces:
        raise DialevalError("your Prolific account has no workspace; create one on app.prolific.com")
    if title is None:
        return workspaces[0]
    for ws in workspaces:
        if ws["title"] == title:
            return ws
    raise DialevalError(f"mephisto.provider.workspace: no Prolific workspace titled {title!r}; yours: "
                        + ", ".join(repr(w["title"]) for w in workspaces))


def preflight(args, shared_state, out=print) -> dict:
    """Check token, settings, cost and balance before anything exists; print cost and balance."""
    s = settings(args)
    name = args.provider.get("requester_name", None)
    if not name:
        raise DialevalError("mephisto.provider.requester_name: register one with `dialeval prolific register NAME`")
    token = load_credentials(common.provider_root(), name)["token"]
    from parlai_dialeval.providers.prolific.api import ProlificClient

    client = ProlificClient(s["api_base_url"], token, max_retries=s["max_retries"])
    try:
        client.me()  # a wrong token stops here, before anything is created
        workspace = find_workspace(client, args.provider.get("workspace"))
        balance = client.balance(workspace["id"])
        places = expected_places(args, shared_state)
        cost = client.cost(s["reward_minor"], places)
    finally:
        client.close()
    have = balance.get("currency_code") or s["currency"]
    if have.upper() != s["currency"]:
        raise DialevalError(f"mephisto.provider.currency: the workspace {workspace['title']!r} pays in {have}, "
                            f"not {s['currency']}; set mephisto.provider.currency={have} and the reward in {have}")
    cur = s["currency"]
    out(f"Prolific: {places} place(s) x {to_major(s['reward_minor'])} {cur} = {to_major(cost['rewards'])} {cur} "
        f"+ fees {to_major(cost.get('fees', 0) + cost.get('vat', 0))} {cur} = {to_major(cost['total_cost'])} {cur}; "
        f"workspace {workspace['title']!r} balance: {to_major(balance['available_balance'])} {cur}", flush=True)
    if balance["available_balance"] < cost["total_cost"]:
        raise DialevalError(f"Prolific balance too low: the run costs {to_major(cost['total_cost'])} {cur}, the "
                            f"workspace {workspace['title']!r} has {to_major(balance['available_balance'])} {cur}; "
                            "top it up on app.prolific.com or lower the places or reward")
    return dict(s, requester_name=name, token=token, workspace_id=workspace["id"], places=places, cost=cost,
                code="DE" + secrets.token_hex(5).upper())


def study_address(url: str, api_base_url: str) -> str:
    """The task's address for Prolific: with a scheme (LocalArchitect reports ``localhost:PORT``), and
    https when real participants are to reach it."""
    url = url.rstrip("/")
    if "://" not in url:
        url = "http://" + url
    if api_base_url.rstrip("/") == DEFAULT_API_BASE_URL.rstrip("/") and not url.startswith("https://"):
        raise DialevalError(f"Prolific participants cannot reach {url}: set mephisto.provider.public_url to the "
                            "https address of your reverse proxy in front of the task, or use a public architect "
                            "(docs/crowdsourcing.md, 'Run your study on Prolific')")
    return url


def render_wrapper(completion_url: str, code: str) -> Path:
    text = WRAPPER_TEMPLATE.read_text()
    text = text.replace('"__COMPLETION_URL__"', json.dumps(completion_url)).replace(
        '"__COMPLETION_CODE__"', json.dumps(code))
    folder = Path(tempfile.mkdtemp(prefix="dialeval_prolific_js_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # Mephisto copies it into each build
    path = folder / "wrap_crowd_source.js"
    path.write_text(text)
    return path


def find_or_create(client, list_path: str, create_body: dict, key: str, value: str, params=None) -> str:
    for item in client.results(list_path, params=params):
        if item.get(key) == value:
            return item["id"]
    return client.call("POST", list_path, json=create_body)["id"]


def stop_study_if_done(db, task_run_id: str) -> None:
    """STOP the run's study once none of its units can still be worked on (Prolific then keeps the
    submissions for review)."""
    store = common.datastore(db)
    study = store.study_of_run(task_run_id)
    if not study or study["status"] != "published":
        return
    open_units = [u for u in db.find_units(task_run_id=task_run_id)
                  if u.db_status not in (AssignmentState.EXPIRED, *AssignmentState.completed())]
    if open_units:
        return
    client, _ = common.client_for_run(db, task_run_id)
    try:
        client.call("POST", f"studies/{study['study_id']}/transition/", json={"action": "STOP"})
        store.update("studies", "task_run_id", str(task_run_id), status="stopped")
    except ProlificError as error:
        logger.warning(f"could not stop Prolific study {study['study_id']}: {error}")
    finally:
        client.close()


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

    def initialize_provider_datastore(self, storage_path: str) -> Any:
        return ProlificDatastore(storage_path)

    @classmethod
    def assert_task_args(cls, args, shared_state) -> None:
        plan = preflight(args, shared_state)
        cls._plan = plan
        cls._wrapper = render_wrapper(plan["completion_url"], plan["code"])

    @classmethod
    def get_wrapper_js_path(cls):
        if cls._wrapper is None:
            cls._wrapper = render_wrapper(DEFAULT_COMPLETION_URL, "")
        return str(cls._wrapper)

    def setup_resources_for_task_run(self, task_run, args, shared_state, server_url: str) -> None:
        plan = type(self)._plan
        if not plan or plan["requester_name"] != task_run.get_requester().requester_name:
            plan = preflight(args, shared_state)
        from parlai_dialeval.providers.prolific.api import ProlificClient

        client = ProlificClient(plan["api_base_url"], plan["token"], max_retries=plan["max_retries"])
        store = self.datastore
        url = study_address(args.provider.get("public_url") or server_url, plan["api_base_url"])
        internal = f"dialeval:{task_run.get_task().task_name}:run{task_run.db_id}:{plan['code']}"
        store.run("INSERT OR REPLACE INTO studies (task_run_id, task_name, requester_name, api_base_url, "
                  "internal_name, completion_code, currency, reward_minor, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  str(task_run.db_id), task_run.get_task().task_name, plan["requester_name"], plan["api_base_url"],
                  internal, plan["code"], plan["currency"], plan["reward_minor"], "creating")
        project_id = None
        try:
            ws = plan["workspace_id"]
            project_id = find_or_create(client, f"workspaces/{ws}/projects/", {"title": args.provider.project},
                                        "title", args.provider.project)
            group = args.provider.block_group
            group_id = find_or_create(client, "participant-groups/", {"workspace_id": ws, "name": group},
                                      "name", group, params={"workspace_id": ws})
            filters = OmegaConf.to_container(args.provider.eligibility_filters, resolve=True) \
                if args.provider.get("eligibility_filters") else []
            filters.append({"filter_id": "participant_group_blocklist", "selected_values": [group_id]})
            if args.provider.get("block_list"):
                filters.append({"filter_id": "custom_blocklist", "selected_values": list(args.provider.block_list)})
            if args.provider.get("allow_list"):
                filters.append({"filter_id": "custom_allowlist", "selected_values": list(args.provider.allow_list)})
            body = {
                "project": project_id, "name": args.task.task_title, "internal_name": internal,
                "description": args.task.get("task_description") or args.task.task_title,
                "external_study_url": f"{url}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
                                      f"&SESSION_ID={{{{%SESSION_ID%}}}}",
                "prolific_id_option": "url_parameters", "completion_option": "code",
                "completion_codes": [{"code": plan["code"], "code_type": "COMPLETED",
                                      "actions": [{"action": "MANUALLY_REVIEW"}]}],
                "total_available_places": 1, "estimated_completion_time": plan["minutes"],
                "reward": plan["reward_minor"], "filters": filters,
            }
            study = client.call("POST", "studies/", json=body, retry=RETRY_ON_429)
            store.update("studies", "task_run_id", str(task_run.db_id), study_id=study["id"], workspace_id=ws,
                         project_id=project_id, block_group_id=group_id, places=1)
            self._publish(client, study["id"])
            store.update("studies", "task_run_id", str(task_run.db_id), status="published")
        except Exception as error:  # whatever failed, the half-created study goes
            removed = self._remove_orphans(client, project_id, internal)
            store.update("studies", "task_run_id", str(task_run.db_id), status="failed")
            if not isinstance(error, (ProlificError, DialevalError)):
                raise
            left = ("; check the project on app.prolific.com for a study named " + internal if removed is None
                    else (f"; deleted the unpublished study {', '.join(removed)}" if removed else "")
                    + "; nothing is left on Prolific")
            raise DialevalError(f"could not set up the Prolific study: {error}{left}") from None
        finally:
            client.close()
        print(f"Prolific study {study['id']} published (completion code in the page); participants start at "
              f"{url}/?PROLIFIC_PID=...", flush=True)

    @staticmethod
    def _publish(client, study_id: str) -> None:
        try:
            client.call("POST", f"studies/{study_id}/transition/", json={"action": "PUBLISH"}, retry=RETRY_ON_429)
        except ProlificServerError:
            if client.study(study_id).get("status") != "ACTIVE":  # a 5xx may still have published it
                raise

    @staticmethod
    def _remove_orphans(client, project_id: str | None, internal_name: str) -> list[str] | None:
        """Delete the studies this setup created (found by their unique internal name), if any; None when
        Prolific could not be asked."""
        if project_id is None:
            return []
        removed = []
        try:
            for study in client.results(f"projects/{project_id}/studies/"):
                if study.get("internal_name") == internal_name and study.get("status") == "UNPUBLISHED":
                    client.call("DELETE", f"studies/{study['id']}/")
                    removed.append(study["id"])
        except ProlificError as error:
            logger.error(f"could not look for the half-created study {internal_name}: {error}")
            return None
        return removed

    def cleanup_resources_from_task_run(self, task_run, server_url: str) -> None:
        stop_study_if_done(self.db, task_run.db_id)
