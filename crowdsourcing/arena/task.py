"""The arena declared to the platform: ``dialeval launch arena`` / ``dialeval export`` (protocol.py says how a
session goes; docs/crowdsourcing_protocols.md, "Arena")."""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from parlai_dialeval.crowdsourcing.arena import export as arena_export
from parlai_dialeval.crowdsourcing.arena.anonymity import LeakRules
from parlai_dialeval.crowdsourcing.arena.prompts import POLICIES, DedupPolicy, PromptIndex
from parlai_dialeval.crowdsourcing.arena.protocol import battle_outcome
from parlai_dialeval.crowdsourcing.arena.worlds import RECORD_FILE
from parlai_dialeval.crowdsourcing.platform import checks, questionnaire
from parlai_dialeval.crowdsourcing.platform.adaptive.config import AdaptiveConfig, LivePairwise
from parlai_dialeval.crowdsourcing.platform.config import language_field, turn_timeout_field
from parlai_dialeval.crowdsourcing.platform.export import ExportReport, guard_units
from parlai_dialeval.crowdsourcing.platform.participant_input import InputLimits
from parlai_dialeval.crowdsourcing.platform.registry import TaskSpec

# a model whose replies failed this many battles in a row is not drawn for a while (an endpoint down)
FAILURES_IN_A_ROW, REST_SECONDS = 3, 120.0


@dataclass
class DedupArgs:
    per_participant: str = field(default="refuse", metadata={
        "help": f"a participant's new battle opening with a prompt (nearly) like one of their earlier ones: "
                f"{' | '.join(POLICIES)} (refuse: the page asks for another; void: run, mark duplicate_prompt, "
                "leave out of analyses)"})
    across_study: str = field(default="void", metadata={
        "help": f"the same for a prompt another participant of the study asked already: {' | '.join(POLICIES)} "
                "(refuse tells a participant that someone asked it)"})
    near_threshold: float = field(default=0.8, metadata={"kind": "fraction",
        "help": "Jaccard similarity of character 3-grams (after normalisation) at which two prompts are near "
                "duplicates (1: exact duplicates only)"})


@dataclass
class ArenaArgs:
    models: dict = field(default_factory=dict, metadata={
        "help": "model name -> {opt: {ParlAI opt}} (two or more); two are drawn for every battle"})
    display_names: dict = field(default_factory=dict, metadata={
        "help": "model name -> the name shown to the participant when a battle ends (default: the model name)"})
    min_battles: int = field(default=3, metadata={
        "kind": "positive_int", "at_most": "max_battles",
        "help": "battles a participant completes before they may finish"})
    max_battles: int = field(default=10, metadata={
        "kind": "positive_int", "help": "battles one participant may do at most"})
    max_turns: int = field(default=3, metadata={
        "kind": "positive_int", "help": "turns (prompt, two replies, vote) one battle may have"})
    sampler: str = field(default="uniform", metadata={
        "help": "which pair the next battle compares: uniform | informative (mostly the pair whose order the target "
                "ranking needs and is least certain; every battle's probability is exported, and its weight makes "
                "the Bradley-Terry fits estimate what uniform sampling would)"})
    target: str = field(default="top", metadata={
        "help": "the ranking the informative sampler and adaptive=true aim at: top (the best model beats every other) "
                "| full (every adjacent pair of the ranking settled)"})
    explore: float = field(default=0.2, metadata={"kind": "fraction",
        "help": "informative sampler: the share of battles drawn uniformly over every pair (0 < explore <= 1)"})
    identity_words: list = field(default_factory=list, metadata={
        "help": "words that name a model or its maker: a reply holding one voids its battle's votes from then on "
                "(empty: the built-in list, crowdsourcing/arena/anonymity.py)"})
    extra_identity_words: list = field(default_factory=list, metadata={
        "help": "more such words, added to identity_words (your models' own names, your lab's)"})
    dedup: DedupArgs = field(default_factory=DedupArgs, metadata={"help": "repeated prompts (prompts.py)"})
    turn_timeout: int = turn_timeout_field()
    language: str = language_field()
    limits: InputLimits = field(default_factory=InputLimits, metadata={
        "help": "what one participant may send: message and free-text sizes, actions per minute"})
    seed: Optional[int] = field(default=None, metadata={"help": "seed of the pairs drawn and the sides"})
    questionnaire: questionnaire.QuestionnaireArgs = questionnaire.questionnaire_field()
    checks: checks.ChecksArgs = checks.checks_field(
        "Arena: positions count the battles, among the first arena.min_battles (never the first battle); an "
        "attention battle's first vote says which of the four answers to give; a gold battle pits the drawn model "
        "against a bot whose replies are clearly broken (every vote of that battle is graded: the model's side is "
        "right), shown as a test reply when the battle ends")


@dataclass
class ArenaConfig(AdaptiveConfig):
    arena: ArenaArgs = field(default_factory=ArenaArgs)


class ArenaShared:
    """What every participant's world of one launch shares: the sampler, the prompts so far, the anonymity
    rule, the names shown, and which models keep failing."""

    def __init__(self, sampler, dedup: DedupPolicy, rules: LeakRules, display_names: dict, clock=time.monotonic,
                 adaptive: bool = False):
        self.sampler, self.dedup, self.rules, self.display_names = sampler, dedup, rules, dict(display_names)
        self.adaptive = adaptive  # adaptive=true: the study stops taking battles once its ranking is certified
        self.prompts = PromptIndex(dedup.near_threshold)
        self.clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._resting: dict[str, float] = {}

    def enough(self) -> bool:
        """Whether the study needs no more battles (adaptive=true, and the ranking it asks about is certified)."""
        return self.adaptive and self.sampler.certified()

    def display_name(self, model: str) -> str:
        return str(self.display_names.get(model, model))

    def model_failed(self, model: str) -> None:
        with self._lock:
            self._failures[model] = self._failures.get(model, 0) + 1
            if self._failures[model] >= FAILURES_IN_A_ROW:
                self._resting[model], self._failures[model] = self.clock() + REST_SECONDS, 0

    def model_worked(self, model: str) -> None:
        with self._lock:
            self._failures[model] = 0

    def failing_models(self) -> set[str]:
        with self._lock:
            now = self.clock()
            return {m for m, until in self._resting.items() if until > now}

    def restore(self, records: list[dict]) -> None:
        """The study so far (the saved records of its units, in the order their battles ended): the prompts
        for deduplication and every counted battle for the sampler, as a launch after a relaunch needs."""
        battles = [(battle, record.get("worker", "")) for record in records for battle in record.get("battles", [])]
        for battle, worker in sorted(battles, key=lambda pair: pair[0].get("ended") or float("inf")):
            if battle["turns"]:
                self.prompts.add(battle["id"], worker, battle["turns"][0]["prompt"])
            outcome = battle_outcome(battle) if battle["status"] == "complete" else None
            if outcome is not None and not (battle.get("duplicate") or {}).get("void"):
                self.sampler.add_battle(battle["models"]["a"], battle["models"]["b"], outcome, battle["id"])

    def policy(self, args) -> dict:
        return {"sampler": self.sampler.describe(), "dedup": self.dedup.describe(), "anonymity": self.rules.policy(),
                "min_battles": args.min_battles, "max_battles": args.max_battles, "max_turns": args.max_turns}


def saved_records(cfg) -> list[dict]:
    """The world records of every unit this task name ran before (none on a first launch)."""
    from mephisto.abstractions.databases.local_database import LocalMephistoDB
    from mephisto.utils.dirs import get_root_data_dir

    from parlai_dialeval.crowdsourcing.platform.env import database_path
    from parlai_dialeval.crowdsourcing.platform.export import read_units

    path = database_path(get_root_data_dir())
    if not path.is_file():
        return []
    db = LocalMephistoDB(database_path=str(path))
    if not db.find_tasks(task_name=cfg.mephisto.task.task_name):
        return []
    return [u.files[RECORD_FILE] for u in read_units(db, cfg.mephisto.task.task_name, (RECORD_FILE,))
            if RECORD_FILE in u.files]


def build_shared(cfg) -> ArenaShared:
    from parlai_dialeval.crowdsourcing.arena.anonymity import DEFAULT_WORDS
    from parlai_dialeval.crowdsourcing.arena.sampler import ArenaSampler

    args = cfg.arena
    sampler = ArenaSampler(list(args.models), args.sampler, args.target, float(args.explore),
                           float(cfg.adaptive_alpha), args.seed)
    return ArenaShared(sampler, DedupPolicy(**dict(args.dedup)),
                       LeakRules(list(args.identity_words) or DEFAULT_WORDS, list(args.extra_identity_words)),
                       dict(args.display_names), adaptive=bool(cfg.get("adaptive")))


def shared_state(cfg) -> Any:
    from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_blueprint import SharedParlAITaskState

    from parlai_dialeval.crowdsourcing.arena import worlds
    from parlai_dialeval.crowdsourcing.platform.bots import BotPool, quota_args
    from parlai_dialeval.crowdsourcing.platform.frontend import chat_page_options
    from parlai_dialeval.errors import DialevalError

    args = cfg.arena
    if len(args.models) < 2:
        raise DialevalError("arena needs at least two models (arena.models)")
    # a language without a catalogue, or a questionnaire outside the catalogue: refused before the bots load
    page = chat_page_options(args.language, **questionnaire.page_options(args.questionnaire))
    try:
        arena = build_shared(cfg)
        limits = InputLimits(**args.limits)
    except ValueError as error:
        raise DialevalError(str(error)) from None
    check_args = checks.validate(checks.of(args), "arena")
    try:  # positions that cannot work: refused now, not in a participant's world
        checks.plan(check_args, int(args.min_battles), random.Random(0))
    except DialevalError as error:
        raise DialevalError(f"arena.{error} (the arena's check items are battles, among the first "
                            f"arena.min_battles={args.min_battles})") from None
    pool = BotPool(args.models, seed=args.seed, **quota_args(cfg))
    arena.restore(saved_records(cfg))
    world_opt = {"pool": pool, "arena": arena, "limits": limits, "turn_timeout": args.turn_timeout,
                 "min_battles": args.min_battles, "max_battles": args.max_battles, "max_turns": args.max_turns,
                 "arena_policy": arena.policy(args), "checks": checks.as_dict(check_args)}
    # world_module given here: Mephisto's own import of world_file would load every task's worlds.py under one name
    return SharedParlAITaskState(world_module=worlds, world_opt=world_opt, frontend_task_opts={
        **page, "attention": bool(checks.rule(check_args)["attention"])})


@guard_units
def export(units, task_name: str) -> ExportReport:
    saved = [(unit, unit.files.get(RECORD_FILE)) for unit in units]
    notes = [f"unit {unit.unit_id} (worker {unit.worker_id}, {unit.agent_status}): no arena record"
             for unit, record in saved if record is None]
    saved = [(unit, record) for unit, record in saved if record is not None]
    records = [r for unit, record in saved for r in arena_export.unit_records(
        record, study=task_name, task_name=task_name, worker_id=unit.worker_id, assignment_id=unit.assignment_id,
        submission=unit.submission)]
    policy = next((record["policy"] for _, record in saved if record.get("policy")), {})
    rule = next((record["checks"] for _, record in saved if record.get("checks")), None)
    head = [arena_export.study_record(task_name, policy, rule)] if records else []
    return ExportReport(records=head + records, notes=notes)


def _start_adaptive(cfg, shared, db, settings, say):
    from parlai_dialeval.crowdsourcing.arena.adaptive import ArenaStudy

    return ArenaStudy(shared.world_opt["arena"].sampler, db, cfg.mephisto.task.task_name, settings,
                      fixed_hits=int(cfg.mephisto.blueprint.get("num_conversations") or 0), say=say)


TASK = TaskSpec(name="arena", config_class=ArenaConfig, shared_state=shared_state, export=export,
                description="Arena battles: two anonymous models answer the participant's prompts side by side",
                extra={"export_files": (RECORD_FILE,), "continues_units": True,
                       "adaptive": LivePairwise(start=_start_adaptive)})
