"""Our two Mephisto blueprints, both naming their frontend entry (so ``dialeval export`` can tell the task).

``dialeval_chat``: Mephisto's ParlAI-chat blueprint serving our prebuilt frontend bundle. The stock
builder runs ``npm install`` inside site-packages when it finds no build and serves an index.html that
loads CSS from a CDN; ours copies ``crowdsourcing/frontend/build/<entry>/bundle.js`` and our CDN-free
index.html instead, and never builds anything at launch time.

``dialeval_static``: Mephisto's static React blueprint whose task data keeps a server-side part: the
``server`` entry of each unit's data (and of the onboarding data) is never sent to the worker's browser.
Units keep it in their assignment's ``unit_data`` (Mephisto's ``assign_data.json``), the onboarding's
goes to ``ONBOARDING_SERVER_FILE`` in the run's folder; ``platform.export`` hands it to the task's export.
Its onboarding gives the shared state's ``onboarding_tries`` tries (platform/onboarding_tries.py).
"""
from __future__ import annotations

import random
import shutil
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_blueprint import (
    ParlAIChatBlueprint,
    ParlAIChatBlueprintArgs,
)
from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_task_builder import ParlAIChatTaskBuilder
from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_task_runner import ParlAIChatTaskRunner
from mephisto.abstractions.blueprints.static_react_task.static_react_blueprint import (
    StaticReactBlueprint,
    StaticReactBlueprintArgs,
)
from mephisto.data_model.assignment import InitializationData
from mephisto.operations.registry import register_mephisto_abstraction
from omegaconf import MISSING

from parlai_dialeval.compat.mephisto_door import PROXY_HEADER, PROXY_HEADER_HELP, ROUTER_HOST_HELP, TRUSTED_PROXIES_HELP
from parlai_dialeval.compat.mephisto import prompt_onboarding_end
from parlai_dialeval.compat.mephisto_claims import (CLAIMS_MINIMUM, CLAIMS_SHARE, CLAIMS_WINDOW_SECONDS,
                                                     FIRST_SOCKET_SECONDS, RECLAIM_SECONDS)
from parlai_dialeval.compat.mephisto_router import PING_SECONDS, RECONNECT_SECONDS
from parlai_dialeval.crowdsourcing.platform import frontend
from parlai_dialeval.crowdsourcing.platform.onboarding_tries import OnboardingTries

BLUEPRINT_TYPE_DIALEVAL_CHAT = "dialeval_chat"
BLUEPRINT_TYPE_DIALEVAL_STATIC = "dialeval_static"
SERVER_KEY = "server"  # the part of a static task's unit / onboarding data that stays on the server
# shared-state attribute: a generator of unit data replacing a chat task's num_conversations (adaptive.py)
GENERATED_HITS = "generated_hits"
ONBOARDING_SERVER_FILE = "dialeval_onboarding_server.json"
FRONTEND_ENTRY_HELP = "name of the frontend entry: crowdsourcing/frontend/src/tasks/<entry>/index.jsx"


class DialevalChatTaskBuilder(ParlAIChatTaskBuilder):
    def build_in_dir(self, build_dir: str):
        target = Path(build_dir) / "static"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(frontend.bundle_path(self.args.blueprint.frontend_entry), target / "bundle.js")
        for path in frontend.static_files():
            shutil.copy2(path, target / path.name)
        (Path(build_dir) / self.BUILT_FILE).write_text(self.BUILT_MESSAGE)


class DialevalChatTaskRunner(ParlAIChatTaskRunner):
    def filter_units_for_worker(self, units, worker):
        """The worker's units in random order. Mephisto's worker pool reserves the first of the list it can
        (a file per unit), and a reserved unit stays in everyone's list until its agent is created: in
        Mephisto's order every arrival of a crowd tried the same units first (at 500 participants within a
        minute, about 25,000 failed reservations, each a file creation and a printed line)."""
        units = super().filter_units_for_worker(units, worker)
        return random.sample(units, len(units))

    def run_onboarding(self, agent) -> None:
        """Mephisto's, its end waiting for the participant's submit instead of looking every 0.3 s (PW-Turn's
        step from onboarding to the unit's first state: p50 337 ms in bench_load, from the look's sleep)."""
        with prompt_onboarding_end(agent):
            super().run_onboarding(agent)


@dataclass
class RouterArgs:
    """Who the node router believes and how much one source may take (compat/mephisto_door.py, router/dialeval_door.js
    and dialeval_claims.js; docs/security.md): both blueprints take these."""
    router_host: Optional[str] = field(default=None, metadata={"help": ROUTER_HOST_HELP})
    router_trusted_proxies: List[str] = field(default_factory=list, metadata={"help": TRUSTED_PROXIES_HELP})
    router_proxy_header: str = field(default=PROXY_HEADER, metadata={"help": PROXY_HEADER_HELP})
    router_claims_share: float = field(default=CLAIMS_SHARE, metadata={"kind": "fraction",
        "help": f"share of the study's places one address (an IPv6 /64) may take per router_claims_window_seconds, "
                f"at least {CLAIMS_MINIMUM} (a lab behind one address: name it in router_lab_addresses)"})
    router_claims_per_source: Optional[int] = field(default=None, metadata={"kind": "non_negative_int",
        "help": "a fixed number of places per address and window instead of router_claims_share (0: no limit)"})
    router_claims_window_seconds: float = field(default=CLAIMS_WINDOW_SECONDS, metadata={"kind": "positive",
        "help": "the window of the places per address, in seconds"})
    router_lab_addresses: List[str] = field(default_factory=list, metadata={
        "help": "the lab's own addresses or networks (its participants share one address): no per-address limit on "
                "requests, sockets or places for them (places: router_lab_places); default: none, and this "
                "machine (127.0.0.1, ::1) with the mock provider (a rehearsal)"})
    router_lab_places: int = field(default=0, metadata={"kind": "non_negative_int",
        "help": "places the lab's addresses may take per window (0: as many as the study has)"})


@dataclass
class DialevalChatBlueprintArgs(RouterArgs, ParlAIChatBlueprintArgs):
    _blueprint_type: str = BLUEPRINT_TYPE_DIALEVAL_CHAT
    _group: str = field(default="DialevalChatBlueprint", metadata={
        "help": "A ParlAI-chat task whose worker page is a prebuilt entry of crowdsourcing/frontend"})
    frontend_entry: str = field(default=MISSING, metadata={
        "help": FRONTEND_ENTRY_HELP, "required": True})
    # ParlAI model_chat / pairwise_per_turn_eval keys, read by platform/bots.py quota_args (same names and meaning)
    model_opt_path: str = field(default="", metadata={
        "help": "ParlAI's model_opts.yaml (model name -> ParlAI flag string): adds these models to the task's"})
    conversations_needed_string: str = field(default="", metadata={
        "help": "ParlAI's quotas: 'modelA:50,modelB:20', or pairs 'modelA:modelB:100'; only these models are used"})
    cached_database: bool = field(default=False, metadata={
        "help": "keep Mephisto's objects in memory (its MephistoSingletonDB) instead of rereading SQLite at every "
                "lookup: for hundreds of participants at once (docs/scaling.md)"})
    # the node router's patience with a page that reloads or whose heartbeats stop (compat/mephisto_router.py)
    router_reconnect_seconds: float = field(default=RECONNECT_SECONDS, metadata={"kind": "positive",
        "help": "seconds a participant's page has to reconnect before the router marks them disconnected "
                "(Mephisto's own: 10; a crowd arriving at once makes reloads slower, docs/scaling.md)"})
    router_ping_seconds: float = field(default=PING_SECONDS, metadata={"kind": "positive",
        "help": "seconds without a heartbeat from a page before the router marks its participant disconnected "
                "(Mephisto's own: 15): how long a participant whose browser died or whose phone slept keeps their "
                "place"})
    router_reclaim_seconds: float = field(default=RECLAIM_SECONDS, metadata={"kind": "non_negative",
        "help": "seconds a participant's page must have been silent before another browser may carry on their "
                "session with the resume code the page showed (on Prolific: with the same Prolific identity); "
                "shorter than router_ping_seconds; 0: never (docs/security.md)"})
    # who may take a place (crowdsourcing/router/dialeval_claims.js)
    router_first_socket_seconds: float = field(default=FIRST_SOCKET_SECONDS, metadata={"kind": "non_negative",
        "help": "seconds a participant's page has to connect after it was given a place; a place whose page never "
                "connects is given back (0: never)"})


def check_router_times(blueprint) -> None:
    """Refuse a reclaim time the ping time makes meaningless (``mephisto.blueprint`` as composed)."""
    reclaim, ping = blueprint.get("router_reclaim_seconds") or 0, blueprint.router_ping_seconds
    if reclaim > 0 and reclaim >= ping:
        from parlai_dialeval.errors import DialevalError

        raise DialevalError(f"mephisto.blueprint.router_reclaim_seconds ({reclaim:g}) must be shorter than "
                            f"router_ping_seconds ({ping:g}): a page silent that long has lost its place, and "
                            "another browser could only take back an ended session")


@register_mephisto_abstraction()
class DialevalChatBlueprint(ParlAIChatBlueprint):
    TaskBuilderClass = DialevalChatTaskBuilder
    TaskRunnerClass = DialevalChatTaskRunner
    ArgsClass = DialevalChatBlueprintArgs
    BLUEPRINT_TYPE = BLUEPRINT_TYPE_DIALEVAL_CHAT

    @classmethod
    def assert_task_args(cls, args, shared_state):
        super().assert_task_args(args, shared_state)
        check_router_times(args.blueprint)

    def __init__(self, task_run, args, shared_state):
        super().__init__(task_run, args, shared_state)
        hits = getattr(shared_state, GENERATED_HITS, None)
        if hits is not None:
            self._initialization_data_dicts = hits

    def get_initialization_data(self):
        if not isinstance(self._initialization_data_dicts, types.GeneratorType):
            return super().get_initialization_data()
        return with_server_data(self._initialization_data_dicts, self.agent_count)


def with_server_data(dicts, count: int):
    """InitializationData of each unit data dict, its ``server`` part kept in every unit's ``unit_data``.
    A generator (adaptive collection, platform/adaptive/config.py) stays one: Mephisto creates its units as it
    yields."""
    data = (InitializationData(shared=public, unit_data=[{SERVER_KEY: server} for _ in range(count)])
            for public, server in map(split_server, dicts))
    return data if isinstance(dicts, types.GeneratorType) else list(data)


def onboarding_server_path(task_run) -> str:
    return f"{task_run.get_run_dir()}/{ONBOARDING_SERVER_FILE}"


def split_server(data: dict) -> tuple[dict, dict]:
    """(what the browser receives, what stays on the server) of one unit's or the onboarding's data."""
    public = {key: value for key, value in data.items() if key != SERVER_KEY}
    return public, dict(data.get(SERVER_KEY) or {})


@dataclass
class DialevalStaticBlueprintArgs(RouterArgs, StaticReactBlueprintArgs):
    _blueprint_type: str = BLUEPRINT_TYPE_DIALEVAL_STATIC
    _group: str = field(default="DialevalStaticBlueprint", metadata={
        "help": "A static React task of crowdsourcing/frontend whose unit data keeps a server-only part"})
    frontend_entry: str = field(default=MISSING, metadata={"help": FRONTEND_ENTRY_HELP, "required": True})


@register_mephisto_abstraction()
class DialevalStaticBlueprint(OnboardingTries, StaticReactBlueprint):
    ArgsClass = DialevalStaticBlueprintArgs
    BLUEPRINT_TYPE = BLUEPRINT_TYPE_DIALEVAL_STATIC

    def __init__(self, task_run, args, shared_state):
        super().__init__(task_run, args, shared_state)
        if self.onboarding_data:
            self.onboarding_data, server = split_server(self.onboarding_data)
            task_run.db.write_dict(onboarding_server_path(task_run), server)

    def get_initialization_data(self):
        return with_server_data(self._initialization_data_dicts, self.args.blueprint.units_per_assignment)
