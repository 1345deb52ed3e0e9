"""SM-Turn + SM-Dialog declared to the platform: ``dialeval launch sm_eval`` / ``dialeval export``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from mephisto.operations.hydra_config import TaskConfig

from parlai_dialeval.analysis.worker_checks import worker_report
from parlai_dialeval.crowdsourcing.platform import checks, questionnaire
from parlai_dialeval.crowdsourcing.platform.config import language_field, turn_timeout_field
from parlai_dialeval.crowdsourcing.platform.export import ExportReport, guard_units, record_status
from parlai_dialeval.crowdsourcing.platform.participant_input import InputLimits
from parlai_dialeval.crowdsourcing.platform.registry import TaskSpec
from parlai_dialeval.crowdsourcing.sm_eval import export as sm_export
from parlai_dialeval.crowdsourcing.sm_eval.worlds import RECORD_FILE


@dataclass
class SmEvalArgs:
    num_turns: int = field(default=6, metadata={
        "kind": "positive_int", "help": "bot turns per conversation (the worker's first "
                                                        "message is fixed to 'Hi!')"})
    models: dict = field(default_factory=dict, metadata={
        "help": "model name -> {opt: {ParlAI opt}}; each HIT chats with one, balanced over HITs"})
    worker_personas: list = field(default_factory=list, metadata={
        "help": "optional persona sentence lists; each worker gets one at random to play"})
    limits: InputLimits = field(default_factory=InputLimits, metadata={
        "help": "what one participant may send: message, topic and free-text sizes, actions per minute"})
    turn_timeout: int = turn_timeout_field()
    language: str = language_field()
    seed: Optional[int] = field(default=None, metadata={"help": "seed of model and persona assignment"})
    block_on_worker_checks: bool = field(default=False, metadata={
        "help": "soft-block (mephisto.blueprint.block_qualification) workers whose conversation fails the "
                "worker checks (docs/crowdsourcing_protocols.md)"})
    questionnaire: questionnaire.QuestionnaireArgs = questionnaire.questionnaire_field()
    checks: checks.ChecksArgs = checks.checks_field(
        "SM-Eval: positions count the bot turns; an attention check asks, on that turn's screen, to tick one quality "
        "alone; a gold item replaces that bot reply with a clearly broken one ('none of the above' is right; the "
        "bot's own reply is kept in the turn's meta.gold)")


@dataclass
class SmEvalConfig(TaskConfig):
    sm_eval: SmEvalArgs = field(default_factory=SmEvalArgs)


def shared_state(cfg) -> Any:
    from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_blueprint import SharedParlAITaskState

    from parlai_dialeval.crowdsourcing.platform.bots import BotPool, quota_args
    from parlai_dialeval.crowdsourcing.platform.frontend import chat_page_options
    from parlai_dialeval.crowdsourcing.sm_eval import worlds

    args = cfg.sm_eval
    # a language without a catalogue, or a questionnaire outside the catalogue: refused before the bots load
    page = chat_page_options(args.language, **questionnaire.page_options(args.questionnaire))
    pool = BotPool(args.models, seed=args.seed, **quota_args(cfg))
    # world_module given here: see pw_turn/task.py (Mephisto imports every world_file as `worlds`)
    return SharedParlAITaskState(world_module=worlds, world_opt={
        "pool": pool, "num_turns": args.num_turns,
        "worker_personas": [list(p) for p in args.worker_personas],
        "block_on_worker_checks": args.block_on_worker_checks, "turn_timeout": args.turn_timeout,
        "limits": InputLimits(**args.limits), "block_qualification": cfg.mephisto.blueprint.get("block_qualification"),
        "checks": checks.as_dict(checks.validate(checks.of(args), "sm_eval"))},
        frontend_task_opts={**page, "attention": bool(checks.rule(checks.of(args))["attention"])})


@guard_units
def export(units, task_name: str) -> ExportReport:
    records, notes, rule = [], [], None
    for unit in units:
        record = unit.files.get(RECORD_FILE)
        if record is None:
            notes.append(f"unit {unit.unit_id} (worker {unit.worker_id}, {unit.agent_status}): no SM-Eval record")
            continue
        rule = record.get("checks") or rule
        ended = record.get("ended")
        records += sm_export.unit_records(
            record, study=task_name, worker_id=unit.worker_id, assignment_id=unit.assignment_id,
            conversation_id=unit.conversation_id(task_name),
            duration=(ended - record["started"]) if ended else None,
            status=unit.status if record["status"] == "complete" else record_status(record))
    return ExportReport(records=[sm_export.study_record(task_name, rule), *records], notes=notes)


TASK = TaskSpec(name="sm_eval", config_class=SmEvalConfig, shared_state=shared_state, export=export,
                description="SM-Turn + SM-Dialog: per-turn checks and end-of-dialogue Likert (Smith et al. 2022)",
                worker_checks=worker_report,
                extra={"export_files": (RECORD_FILE,), "continues_units": True})
