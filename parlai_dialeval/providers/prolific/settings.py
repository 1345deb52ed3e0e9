"""``mephisto.provider`` for Prolific: its settings, and the preflight that checks them with Prolific before
anything exists (``assert_task_args`` runs it before Mephisto writes the run to its database): the token,
the reward against Prolific's minimum hourly rate for the workspace's currency, the run's cost from
Prolific's cost calculator against the workspace balance."""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, List, Optional

from mephisto.abstractions.crowd_provider import ProviderArgs

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common, panels
from parlai_dialeval.providers.prolific.api import DEFAULT_COMPLETION_URL, ProlificClient, to_major, to_minor
from parlai_dialeval.providers.prolific.datastore import ProlificDatastore

# Prolific's minimum pay per hour by workspace currency, in major units (Prolific's "Pay" policy, notes in
# shared/notes/prolific_provider.md: £6 or $8 an hour); another currency needs minimum_hourly_rate set.
MINIMUM_HOURLY = {"GBP": 6.0, "USD": 8.0}


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
    minimum_hourly_rate: Optional[float] = field(default=None, metadata={
        "help": "refuse a reward below this many major units per hour; default Prolific's minimum for the "
                "currency (6.00 GBP, 8.00 USD); required for another currency"})
    places: Optional[int] = field(default=None, metadata={
        "help": "places to budget for; default the run's units (mephisto.blueprint.num_conversations for chat "
                "tasks, the number of task data items for static ones)"})
    max_submissions_per_participant: int = field(default=1, metadata={
        "help": "Prolific's submissions_config: how many units one participant may do in the study; 1 (Prolific's "
                "default) keeps every unit to a different participant, -1 lets one participant do several (as "
                "Mephisto's own Prolific provider does); Mephisto's maximum_units_per_worker still applies"})
    api_base_url: Optional[str] = field(default=None, metadata={
        "help": "Prolific's API address; default the one the requester was registered with (the token is only "
                "ever sent there: to use another, register again with --api-base-url)"})
    completion_url: str = field(default=DEFAULT_COMPLETION_URL, metadata={
        "help": "where the page sends participants back to after they submit (the server completes their "
                "submission on Prolific; the completion code never reaches the page)"})
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
    failed_check: str = field(default="return", metadata={
        "help": "what `dialeval review` suggests for a submission whose worker failed the task's quality check "
                "(the QC bot, the acceptability checks): `return` (ask them to return it; never a rejection) or "
                "`reject` (FAILED_CHECK: only where the check meets Prolific's attention-check policy, e.g. two "
                "failed checks in a study of 5 minutes or more; docs/crowdsourcing.md)"})
    units_per_submission: int = field(default=1, metadata={
        "help": "units one Prolific submission (one participant's SESSION_ID) may take in the run, whatever "
                "Mephisto's maximum_units_per_worker says: 1, one reward for one unit of work (the page sends the "
                "participant back to Prolific after a unit; this stops a page that makes up registrations, or a "
                "submission whose completion failed, from taking more); 0: no limit of ours, Mephisto's alone. "
                "For several units per participant, let them take part again: max_submissions_per_participant"})
    panel: Optional[str] = field(default=None, metadata={
        "help": "admit only the members of this panel (a participant group of the workspace: `dialeval prolific "
                "panel create|add`), by the study's participant_group_allowlist filter"})
    add_to_panel: Optional[str] = field(default=None, metadata={
        "help": "add everyone whose submission is completed to this panel (created when missing): the "
                "completion code's ADD_TO_PARTICIPANT_GROUP action"})
    auto_approve: bool = field(default=False, metadata={
        "help": "Prolific approves (and pays) each completed submission at once (AUTOMATICALLY_APPROVE) instead of "
                "keeping it for `dialeval review`: only for studies whose quality check runs before submission"})
    webhook_url: Optional[str] = field(default=None, metadata={
        "help": "the public https address Prolific sends this study's events to (your reverse proxy, forwarding to "
                "webhook_port on this machine): returns and time-outs then free their places at once. Unset: "
                "polling only (every unit in work asked about every 10 s)"})
    webhook_port: int = field(default=0, metadata={
        "help": "the local port the webhook receiver listens on (127.0.0.1); 0: any free port (rehearsals)"})
    arrival_checks_per_source: int = field(default=30, metadata={
        "help": "calls to Prolific that arrivals from one address may cause per minute (the check of their "
                "session); beyond it they are told to reload in a minute, and after as many refusals of its new arrivals in a "
                "minute the router refuses that address's new arrivals itself until the minute is over (docs/security.md)"})
    arrival_checks_per_minute: int = field(default=300, metadata={
        "help": "calls to Prolific that all arrivals together may cause per minute"})
    max_retries: int = field(default=5, metadata={
        "help": "retries of a call answered 429 or 5xx (waiting as Retry-After says, else backing off)"})
    resume_from_run: Optional[str] = field(default=None, metadata={
        "help": "set by `dialeval launch` when it resumes an interrupted run: the task run whose Prolific study "
                "this run takes over (not for hand use)"})


def minimum_hourly_minor(p, currency: str) -> int:
    given = p.get("minimum_hourly_rate")
    if given is None:
        if currency not in MINIMUM_HOURLY:
            raise DialevalError(f"mephisto.provider.minimum_hourly_rate: set Prolific's minimum hourly pay for "
                                f"{currency} (known: {', '.join(f'{v:.2f} {k}' for k, v in MINIMUM_HOURLY.items())})")
        given = MINIMUM_HOURLY[currency]
    return to_minor(given, "mephisto.provider.minimum_hourly_rate")


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
    currency = str(p.get("currency") or "GBP").upper()
    hourly_minor = reward_minor * 60 / minutes
    minimum = minimum_hourly_minor(p, currency)
    if hourly_minor < minimum:
        raise DialevalError(
            f"mephisto.provider.reward: {to_major(reward_minor)} {currency} for {minutes} minutes is "
            f"{to_major(round(hourly_minor))} {currency}/hour, below Prolific's minimum of "
            f"{to_major(minimum)} {currency}/hour; raise the reward or lower estimated_completion_time")
    if p.get("failed_check", "return") not in ("return", "reject"):
        raise DialevalError(f"mephisto.provider.failed_check: `return` or `reject` (got {p.get('failed_check')!r})")
    for key in ("units_per_submission", "webhook_port", "arrival_checks_per_source", "arrival_checks_per_minute"):
        if int(p.get(key) or 0) < 0:
            raise DialevalError(f"mephisto.provider.{key}: 0 or more (got {p.get(key)})")
    if p.get("webhook_url"):
        common.check_public_url(p.webhook_url, "mephisto.provider.webhook_url")
    per_participant = int(p.get("max_submissions_per_participant", 1))
    if per_participant == 0 or per_participant < -1:
        raise DialevalError("mephisto.provider.max_submissions_per_participant: 1 or more, or -1 for no limit "
                            f"(got {per_participant})")
    return {"reward_minor": reward_minor, "minutes": minutes, "currency": currency,
            "completion_url": p.get("completion_url") or DEFAULT_COMPLETION_URL,
            "max_submissions_per_participant": per_participant, "max_retries": int(p.get("max_retries", 5))}


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
    workspaces = client.workspaces()
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
    token, api_base_url = common.registered_url(name, args.provider.get("api_base_url"))
    from parlai_dialeval.providers.prolific import study  # here: study imports Mephisto, which loads this module

    client = ProlificClient(api_base_url, token, max_retries=s["max_retries"])
    try:
        client.me()  # a wrong token stops here, before anything is created
        workspace = find_workspace(client, args.provider.get("workspace"))
        if args.provider.get("panel"):  # a study for a panel that does not exist would admit nobody
            panels.group_id(client, workspace["id"], args.provider.panel, what="mephisto.provider.panel")
        balance = client.balance(workspace["id"])
        places = expected_places(args, shared_state)
        earlier = args.provider.get("resume_from_run")
        held = study.places_held(client, ProlificDatastore(common.provider_root()), str(earlier)) if earlier else None
        new = max(0, places - held[1]) if held else places
        total = client.cost(s["reward_minor"], new) if new else 0
    finally:
        client.close()
    have = balance.get("currency_code") or s["currency"]
    if have.upper() != s["currency"]:
        raise DialevalError(f"mephisto.provider.currency: the workspace {workspace['title']!r} pays in {have}, "
                            f"not {s['currency']}; set mephisto.provider.currency={have} and the reward in {have}")
    cur = s["currency"]
    rewards = s["reward_minor"] * new
    if held:  # the balance shown is after Prolific took what the study holds (docs "Get the balance")
        out(f"Prolific: study {held[0]} of the interrupted run holds {held[1]} open place(s), paid when "
            f"published; {places} unit(s) left need {new} more.", flush=True)
    out(f"Prolific: {new} place(s) x {to_major(s['reward_minor'])} {cur} = {to_major(rewards)} {cur} "
        f"+ fees {to_major(total - rewards)} {cur} = {to_major(total)} {cur}; "
        f"workspace {workspace['title']!r} balance: {to_major(balance['available_balance'])} {cur}", flush=True)
    if balance["available_balance"] < total:
        raise DialevalError(f"Prolific balance too low: the run costs {to_major(total)} {cur}, the "
                            f"workspace {workspace['title']!r} has {to_major(balance['available_balance'])} {cur}; "
                            "top it up on app.prolific.com or lower the places or reward")
    return dict(s, requester_name=name, token=token, api_base_url=api_base_url, workspace_id=workspace["id"],
                places=places, total_cost=total, code="DE" + secrets.token_hex(5).upper())
