"""The router's claims (``crowdsourcing/router/dialeval_claims.js``) on Mephisto 1.1.1's side: its settings, the
server.js patches that hook it in, and the registrations' claims kept for a relaunch. Split from
``compat/mephisto_router.py``, which builds the router with them and installs ``registering``.

- ``CLAIM_PATCHES`` (applied with the router's): a registration (in the participant's URL) is bound to a secret of
  the page that first asked for it, and a request naming it without that secret is refused (no one takes over
  another's agent through Mephisto's reconnect path); new registrations are limited per source and time
  (``claims_config``: a share of the study's places, ``carry_places``); an agent whose page opens no socket in time
  gives its place back; a page silent for ``reclaim_seconds`` may be replaced by a new browser with its resume code
  (the way back after a crash).
- ``registering``: Mephisto's ``ClientIOHandler.associate_agent_with_registration`` keeps each agent's
  registration and claim (the secret's SHA-256) in the run folder (``CLAIMS_LOG``): a relaunch after a crash starts
  its router with the interrupted run's claims (``carry_claims``, platform/resume.py). Retire with the router
  patches, when Mephisto's router authenticates agents.
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from parlai_dialeval.compat.patching import is_ours, ours

CLAIMS_CONFIG = "dialeval_claims.json"  # dialeval_claims.js's settings, beside server.js
CLAIMS_LOG = "dialeval_claims.jsonl"  # in the run folder: {"agent_id", "registration", "worker", "claim", "at"}
CLAIM_KEY = "dialeval_claim"  # provider_data from the router: SHA-256 (hex) of the page's secret

# seconds a page must have been silent before its registration may be taken back from another browser (with the
# page's resume code, or Prolific's verified identity): dialeval_claims.js's way back; shorter than PING_SECONDS
RECLAIM_SECONDS = 60
# places: new registrations a source may make per window: a share of the study's places, at least a minimum
# (two people behind one address, a household or a mobile carrier's shared address, both get in); a fixed
# number when the study's places are not known (a router built without a task run); seconds a live page has to
# open its socket before its agent is reported disconnected (0: never; static pages open none)
CLAIMS_SHARE = 0.1
CLAIMS_MINIMUM = 2
CLAIMS_PER_SOURCE = 10
CLAIMS_WINDOW_SECONDS = 600
REFUSALS_PER_SOURCE = 30  # a minute; the provider's checks per source unless its settings say otherwise
FIRST_SOCKET_SECONDS = 45
# task name -> {"registrations": {registration: claim}, "workers": {worker: claim}} the next router built for
# that task starts with (an interrupted run's)
_carried: dict[str, dict[str, dict[str, str]]] = {}
_places: dict[str, int] = {}  # task name -> the places of the study the next router built for it serves


# (what, exact text in Mephisto 1.1.1's server.js, replacement): dialeval_claims.js hooked in
CLAIM_PATCHES: list[tuple[str, str, str]] = [
    ("load the claims", 'const path = require("path");\n',
     'const path = require("path");\nconst claims = require("./dialeval_claims");\n'),
    ("registrations bound to their page's secret", "// ===================== <Routing> ========================\n",
     "// ===================== <Routing> ========================\n"
     'app.post("/request_agent", claims.request_check);\napp.post("/submit_onboarding", claims.onboarding_check);\n'),
    ("a page's socket announced its agent",
     '    var agent = find_or_create_agent(agent_id);\n    debug_log("Am linking socket for " + agent_id);\n',
     '    var agent = find_or_create_agent(agent_id);\n    claims.connected(agent_id);\n'
     '    debug_log("Am linking socket for " + agent_id);\n'),
    ("a page's heartbeat: its page is there", "          agent.last_ping = Date.now();\n",
     "          agent.last_ping = Date.now();\n          claims.heard(agent_id);\n"),
    ("an agent whose page never connected gives its place back",
     "  if (last_ping == 0) {\n    return; // Not a live task, nothing to check\n",
     "  if (last_ping == 0 && !claims.abandoned(agent)) {\n    return; // Not a live task, nothing to check\n"),
]


def carry_claims(task_name: str, entries) -> None:
    """The next router built for ``task_name`` in this process starts with these claims (CLAIMS_LOG entries:
    registration and worker -> SHA-256 of its page's secret): an interrupted run's, so that its participants,
    and only they, get back in."""
    kept = [entry for entry in entries if entry.get("claim")]
    _carried[task_name] = {"registrations": {entry["registration"]: entry["claim"] for entry in kept},
                           "workers": {entry["worker"]: entry["claim"] for entry in kept if entry.get("worker")}}


def carry_places(task_name: str, places: int) -> None:
    """The next router built for ``task_name`` in this process serves a study of ``places`` places (units;
    ``dialeval launch`` says how many before Mephisto builds the router): its places per source are a share of
    them."""
    _places[task_name] = int(places)


def claims_per_source(places: int | None, share: float = CLAIMS_SHARE) -> int:
    """New places one source may take per window: ``share`` of the study's ``places``, rounded up, at least
    CLAIMS_MINIMUM; CLAIMS_PER_SOURCE when the places are not known."""
    if places is None:
        return CLAIMS_PER_SOURCE
    return max(CLAIMS_MINIMUM, math.ceil(share * places - 1e-9))


def claims_config(task_run) -> dict:
    """dialeval_claims.js's settings for a task run's router (None: a router built without one, in tests)."""
    blueprint = (task_run.args.get("blueprint") if task_run is not None else None) or {}
    static = blueprint.get("router_first_socket_seconds") is None  # static blueprints have no such option
    first_socket = 0 if static else blueprint["router_first_socket_seconds"]
    task_name = task_run.get_task().task_name if task_run is not None else None
    places = _places.pop(task_name, None)
    # a static task's page opens no socket: its silence cannot be heard, so it has no way back
    reclaim = 0 if static else blueprint.get("router_reclaim_seconds") or 0
    per_source = blueprint.get("router_claims_per_source")
    if per_source is None:
        per_source = claims_per_source(places, blueprint.get("router_claims_share", CLAIMS_SHARE))
    window = blueprint.get("router_claims_window_seconds")
    provider_args = (task_run.args.get("provider") if task_run is not None else None) or {}
    provider = provider_args.get("_provider_type")
    return {"claims_per_source": per_source,
            "window_seconds": window or CLAIMS_WINDOW_SECONDS,
            "lab_places": blueprint.get("router_lab_places") or 0,
            "first_socket_seconds": FIRST_SOCKET_SECONDS if task_run is None else first_socket,
            "reclaim_seconds": RECLAIM_SECONDS if task_run is None else reclaim,
            # Prolific checked the identity in the URL at the first arrival (providers/prolific/verify.py)
            "reclaim_by_identity": provider == "prolific",
            # a source's new registrations the provider refused in a minute, then refused at the door: as many
            # as the provider checks a minute (providers/prolific/budget.py)
            "refusals_per_source": int(provider_args.get("arrival_checks_per_source") or REFUSALS_PER_SOURCE),
            "preload": _carried.pop(task_name, {}) if task_run is not None else {}}


def registering(associate):
    """Mephisto's ``ClientIOHandler.associate_agent_with_registration``, keeping the agent's registration and
    claim (``CLAIM_KEY``, from its request; a unit's agent after onboarding keeps its onboarding agent's) in
    ``dialeval_claims`` and appended to the run folder's ``CLAIMS_LOG``."""
    if is_ours(associate):
        return associate

    def associate_keeping_claims(self, agent_id, request_id, registration_id):
        claims = self.__dict__.setdefault("dialeval_claims", {})
        packet = self.request_id_to_packet.get(request_id)
        provider = packet.data.get("provider_data") if packet is not None and isinstance(packet.data, dict) else None
        claim = provider.get(CLAIM_KEY) if isinstance(provider, dict) else None
        worker = provider.get("worker_name") if isinstance(provider, dict) else None
        earlier = claims.get(self.agents_by_registration_id.get(registration_id))
        if claim is None and earlier is not None and earlier["registration"] == registration_id:
            claim, worker = earlier["claim"], earlier["worker"]
        entry = {"agent_id": agent_id, "registration": registration_id, "worker": worker, "claim": claim,
                 "at": time.time()}
        claims[agent_id] = entry
        associate(self, agent_id, request_id, registration_id)
        log = Path(self.get_live_run().task_run.get_run_dir()) / CLAIMS_LOG
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as out:
            out.write(json.dumps(entry) + "\n")

    return ours(associate_keeping_claims)


def claim_of(agent) -> dict | None:
    """{"agent_id", "registration", "worker", "claim", "at"} of a Mephisto agent of the live run (None: not given out by this process)."""
    client_io = agent.get_live_run().client_io if agent.agent_in_active_run() else None
    return (client_io.__dict__.get("dialeval_claims") or {}).get(agent.get_agent_id()) if client_io else None
