"""Registration of the live-chat DA task with the platform (``dialeval launch live_chat_da``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from mephisto.operations.hydra_config import TaskConfig

from parlai_dialeval.crowdsourcing.live_chat_da.worlds import MAX_INPUTS
from parlai_dialeval.crowdsourcing.platform import checks, questionnaire
from parlai_dialeval.crowdsourcing.platform.config import language_field, turn_timeout_field
from parlai_dialeval.crowdsourcing.platform.participant_input import InputLimits
from parlai_dialeval.crowdsourcing.platform.registry import TaskSpec
from parlai_dialeval.home import offline_bots_dir


@dataclass
class LiveChatArgs:
    num_slots: int = field(default=6, metadata={"kind": "positive_int", "at_least": 3,
        "why_at_least": "the QC bot is never first or last",
        "help": "conversations per HIT: num_slots - 1 genuine models plus one QC bot (never first or last)"})
    min_inputs: int = field(default=10, metadata={"kind": "non_negative_int", "at_most": "max_inputs",
        "help": "worker inputs required in each conversation before 'Next chatbot' is accepted"})
    ice_breaker: bool = field(default=False, metadata={
        "help": "show a persona statement of the model as the topic instead of letting the worker choose"})
    ice_breakers: List[str] = field(default_factory=list, metadata={
        "help": "fallback ice-breaker statements for models configured without a persona"})
    max_inputs: int = field(default=MAX_INPUTS, metadata={"kind": "positive_int",
        "help": "most worker messages in one conversation; then the worker is asked to move on (bounds the "
                "record rewritten after every message)"})
    turn_timeout: int = turn_timeout_field()
    limits: InputLimits = field(default_factory=InputLimits, metadata={
        "help": "what one participant may send: message, topic and free-text sizes, actions per minute"})
    models: Dict[str, Any] = field(default_factory=dict, metadata={
        "help": "name -> {opt: {ParlAI agent opt: model/model_file/...}, persona: [sentences]}"})
    qc_models: List[str] = field(default_factory=list, metadata={
        "help": "names (among `models`) of quality-control bots; one per HIT"})
    bots_dir: str = field(default_factory=lambda: str(offline_bots_dir()), metadata={
        "help": "folder written by `dialeval build_offline_bots` (default offline_bots/ in $DIALEVAL_HOME); "
                "confs refer to it as ${live_chat.bots_dir}"})
    seed: Optional[int] = field(default=None, metadata={"help": "seed for the order of models (None: random)"})
    allow_zoo: bool = field(default=False, metadata={
        "help": "allow zoo: model files (they download from parl.ai); off by default"})
    language: str = language_field()
    questionnaire: questionnaire.QuestionnaireArgs = questionnaire.questionnaire_field()
    checks: checks.ChecksArgs = checks.checks_field(
        "live chat: an attention check is an eighth slider on a conversation's rating screen whose statement asks "
        "for a stated value (positions count rating screens); the silent known-answer items are the QC-bot "
        "conversations (qc_models), so gold stays 0")


@dataclass
class LiveChatConfig(TaskConfig):
    live_chat: LiveChatArgs = field(default_factory=LiveChatArgs)


def shared_state(cfg):
    import random

    from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_blueprint import SharedParlAITaskState
    from omegaconf import OmegaConf

    from parlai_dialeval.crowdsourcing.live_chat_da import worlds
    from parlai_dialeval.crowdsourcing.platform.bots import BotPool, quota_args
    from parlai_dialeval.crowdsourcing.platform.frontend import chat_page_options

    args = cfg.live_chat
    page = chat_page_options(args.language, num_slots=args.num_slots, min_inputs=args.min_inputs,  # before the bots load
                             **questionnaire.page_options(args.questionnaire))
    pool = BotPool(OmegaConf.to_container(args.models, resolve=True), list(args.qc_models), seed=args.seed,
                   allow_zoo=args.allow_zoo, **quota_args(cfg))
    world_opt = {"pool": pool, "num_slots": args.num_slots, "min_inputs": args.min_inputs,
                 "ice_breaker": args.ice_breaker, "ice_breakers": list(args.ice_breakers),
                 "turn_timeout": args.turn_timeout, "max_inputs": args.max_inputs,
                 "limits": InputLimits(**args.limits),
                 "checks": checks.as_dict(checks.validate(checks.of(args), "live_chat", gold=False))}
    if world_opt["checks"]["attention"] or world_opt["checks"]["attention_at"]:  # a plan that cannot fit fails now
        checks.positions(args.checks.attention, list(args.checks.attention_at), args.num_slots, random.Random(0),
                         "attention")
    return SharedParlAITaskState(world_module=worlds, world_opt=world_opt,
                                 frontend_task_opts={**page, "attention": bool(checks.rule(checks.of(args))["attention"])})


def _export(units, task_name):
    from parlai_dialeval.crowdsourcing.live_chat_da.export import export_units

    return export_units(units, task_name)


def _worker_checks(records, alpha):
    from parlai_dialeval.crowdsourcing.live_chat_da.quality import worker_checks

    return worker_checks(records, alpha)


TASK = TaskSpec(
    name="live_chat_da", config_class=LiveChatConfig, default_conf="example", shared_state=shared_state,
    export=_export, worker_checks=_worker_checks, description="Live-chat direct assessment (Ji et al., 2022)",
    # continues_units: a worker back after a restart carries on their unit (platform/resume.py)
    extra={"export_files": ("dialeval_live_chat.json",), "continues_units": True},
)
