"""PW-Turn declared to the platform: ``dialeval launch pw_turn`` / ``dialeval export``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from parlai_dialeval.analysis.worker_checks import worker_report
from parlai_dialeval.crowdsourcing.platform import checks, questionnaire
from parlai_dialeval.crowdsourcing.platform.adaptive.config import AdaptiveConfig, ChatPairwise
from parlai_dialeval.crowdsourcing.platform.config import language_field, turn_timeout_field
from parlai_dialeval.crowdsourcing.platform.export import ExportReport, guard_units, record_status
from parlai_dialeval.crowdsourcing.platform.onboarding_tries import TRIES_HELP
from parlai_dialeval.crowdsourcing.platform.participant_input import InputLimits
from parlai_dialeval.crowdsourcing.platform.registry import TaskSpec
from parlai_dialeval.crowdsourcing.pw_turn import export as pw_export
from parlai_dialeval.crowdsourcing.pw_turn.protocol import QUESTIONS
from parlai_dialeval.crowdsourcing.pw_turn.worlds import RECORD_FILE, onboarding_result


@dataclass
class PwTurnArgs:
    question: str = field(default="preference", metadata={
        "help": f"what the worker is asked at every turn: {' | '.join(QUESTIONS)} (Smith et al. 2022, 3.1.2)"})
    num_turns: int = field(default=6, metadata={
        "kind": "positive_int", "help": "bot turns per conversation (the worker's first "
                                                        "message is fixed to 'Hi!')"})
    models: dict = field(default_factory=dict, metadata={
        "help": "model name -> {opt: {ParlAI opt}}; each HIT pairs two of them, balanced over HITs"})
    turn_timeout: int = turn_timeout_field()
    language: str = language_field()
    limits: InputLimits = field(default_factory=InputLimits, metadata={
        "help": "what one participant may send: message, topic and free-text sizes, actions per minute"})
    seed: Optional[int] = field(default=None, metadata={"help": "seed of model pairing and left/right order"})
    onboarding_tries: int = field(default=2, metadata={"kind": "positive_int", "help": TRIES_HELP})
    block_on_worker_checks: bool = field(default=False, metadata={
        "help": "soft-block (mephisto.blueprint.block_qualification) workers whose conversation fails the "
                "worker checks (docs/crowdsourcing_protocols.md)"})
    study: str = field(default="pw_turn", metadata={"help": "study name written into the export"})
    questionnaire: questionnaire.QuestionnaireArgs = questionnaire.questionnaire_field()
    checks: checks.ChecksArgs = checks.checks_field(
        "PW-Turn: positions count the turns; an attention check's question tells which response to choose (the "
        "dialogue goes on with it); a gold turn shows a clearly broken reply on one side (the other is right, and "
        "the dialogue goes on with the one chosen)")


@dataclass
class PwTurnConfig(AdaptiveConfig):
    pw_turn: PwTurnArgs = field(default_factory=PwTurnArgs)


def shared_state(cfg) -> Any:
    from mephisto.abstractions.blueprints.parlai_chat.parlai_chat_blueprint import SharedParlAITaskState

    from parlai_dialeval.crowdsourcing.platform.bots import BotPool, quota_args
    from parlai_dialeval.crowdsourcing.platform.frontend import chat_page_options
    from parlai_dialeval.crowdsourcing.pw_turn import worlds

    args = cfg.pw_turn
    # a language without a catalogue, or a questionnaire outside the catalogue: refused before the bots load
    page = chat_page_options(args.language, **questionnaire.page_options(args.questionnaire))
    pool = BotPool(args.models, seed=args.seed, **quota_args(cfg))
    if len(pool.genuine_models) < 2:
        raise ValueError("pw_turn needs at least two models (pw_turn.models or mephisto.blueprint.model_opt_path)")
    limits = InputLimits(**args.limits)
    world_opt = {"pool": pool, "limits": limits, "question": args.question, "num_turns": args.num_turns,
                 "block_on_worker_checks": args.block_on_worker_checks, "turn_timeout": args.turn_timeout,
                 "block_qualification": cfg.mephisto.blueprint.get("block_qualification"),
                 "checks": checks.as_dict(checks.validate(checks.of(args), "pw_turn"))}
    # world_module given here: Mephisto's own import of world_file would load every task's worlds.py
    # under the one module name `worlds`, so two tasks in one process would share the first one
    return SharedParlAITaskState(world_module=worlds, world_opt=world_opt,
                                 onboarding_world_opt={"seed": args.seed, "onboarding_tries": args.onboarding_tries,
                                                       "turn_timeout": args.turn_timeout, "limits": limits,
                                                       "question": args.question},
                                 frontend_task_opts={**page, "attention": bool(checks.rule(checks.of(args))["attention"])})


@guard_units
def export(units, task_name: str, study: str | None = None) -> ExportReport:
    study = study or task_name
    records, notes, question, rule = [], [], None, None
    for unit in units:
        record = unit.files.get(RECORD_FILE)
        if record is None:
            notes.append(f"unit {unit.unit_id} (worker {unit.worker_id}, {unit.agent_status}): no PW-Turn record")
            continue
        question, rule = record["question"], record.get("checks") or rule
        status = unit.status if record["status"] == "complete" else record_status(record)
        records += pw_export.unit_records(record, study=study, worker_id=unit.worker_id,
                                          assignment_id=unit.assignment_id,
                                          conversation_id=unit.conversation_id(task_name), status=status)
    head = [pw_export.study_record(study, question, rule)] if question else []
    return ExportReport(records=head + records, notes=notes)


@guard_units
def export_onboarding(attempts, task_name: str, study: str | None = None) -> ExportReport:
    """Every finished onboarding attempt: one ``onboarding: true`` comparison per reply pair per try."""
    records, notes = [], []
    for attempt in attempts:
        saved = onboarding_result(attempt.state)
        if saved is None:
            notes.append(f"onboarding attempt {attempt.agent_id} (worker {attempt.worker_id}, "
                         f"{attempt.agent_status}): left before finishing, no answers saved")
            continue
        records += pw_export.onboarding_records(saved, study=study or task_name, worker_id=attempt.worker_id,
                                                item_prefix=f"{task_name}_onboarding_{attempt.agent_id}")
    return ExportReport(records=records, notes=notes)


TASK = TaskSpec(name="pw_turn", config_class=PwTurnConfig, shared_state=shared_state, export=export,
                description="PW-Turn: per-turn pairwise comparison of two models (Smith et al. 2022)",
                export_onboarding=export_onboarding,
                worker_checks=worker_report,
                extra={"export_files": (RECORD_FILE,), "continues_units": True,
                       "adaptive": ChatPairwise(models=lambda shared: shared.world_opt["pool"].genuine_models)})
