"""PW-Dialog / ACUTE-Eval declared to the platform: ``dialeval launch acute`` / ``dialeval export``.

A static task (Mephisto's StaticReactBlueprint): each unit is ``subtasks_per_unit`` conversation pairs
built at launch from canonical conversation files (our own human-model exports, or self-chats from
``dialeval self_chat`` read through the importers); onboarding pairs with known answers come first.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Optional

from parlai_dialeval.crowdsourcing.acute import export as acute_export
from parlai_dialeval.crowdsourcing.acute import protocol
from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.adaptive.config import AdaptiveConfig, StaticPairwise
from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY
from parlai_dialeval.crowdsourcing.platform.config import language_field
from parlai_dialeval.crowdsourcing.platform.onboarding_tries import ONBOARDING_TRIES, TRIES_HELP
from parlai_dialeval.crowdsourcing.platform.export import ExportReport, guard_units, submission, unit_seconds
from parlai_dialeval.crowdsourcing.platform.registry import TaskSpec
from parlai_dialeval.errors import DataError, DialevalError

SELF_CHAT_OPENINGS = ("Hi! How are you today?", "What do you like to do for fun?", "Do you have any pets?",
                      "What kind of music do you listen to?", "Where would you like to travel next?")


@dataclass
class AcuteArgs:
    conversations: list = field(default_factory=list, metadata={
        "help": "files of conversations to compare (canonical JSONL or any format `dialeval convert` reads, "
                "e.g. `dialeval self_chat` output); conversations with one model each"})
    question: str = field(default="preference", metadata={
        "help": f"what the worker is asked: {' | '.join(protocol.QUESTIONS)} (Smith et al. 2022, 3.1.3)"})
    model_pairs: list = field(default_factory=list, metadata={
        "help": "model pairs to compare, as [a, b] lists; empty = every pair of models found"})
    matchups_per_pair: int = field(default=10, metadata={
        "kind": "positive_int", "help": "conversation pairs per model pair"})
    subtasks_per_unit: int = field(default=5, metadata={
        "kind": "positive_int", "help": "conversation pairs per unit (HIT)"})
    onboarding_threshold: float = field(default=1.0, metadata={"kind": "share",
        "help": "share of onboarding pairs a worker must get right (0..1) in one try; failing every try "
                "screens the worker out (onboarding qualification 0)"})
    onboarding_tries: int = field(default=2, metadata={"kind": "positive_int", "help": TRIES_HELP})
    language: str = language_field()
    seed: Optional[int] = field(default=None, metadata={
        "help": "seed of pairing, unit split and sides; required with adaptive_judge (the pool that "
                "`dialeval judge --design` judged is drawn with it)"})
    self_chat_models: dict = field(default_factory=dict, metadata={
        "help": "fast path: model name -> {opt: {ParlAI opt}}; self-chats of these models are generated at "
                "launch and compared (added to `conversations`)"})
    self_chats_per_model: int = field(default=10, metadata={
        "kind": "positive_int", "help": "self-chats generated per model"})
    self_chat_turns: int = field(default=6, metadata={
        "kind": "positive_int", "help": "messages per speaker in each self-chat"})
    self_chat_openings: list = field(default_factory=lambda: list(SELF_CHAT_OPENINGS), metadata={
        "help": "opening lines the self-chats start from (cycled)"})
    self_chat_out: Optional[str] = field(default=None, metadata={
        "help": "also write the generated self-chats here (canonical JSONL) for reuse"})
    checks: checks.ChecksArgs = checks.checks_field(
        "ACUTE: positions count a unit's pairs (its subtasks_per_unit ones and the checks); an attention check is a "
        "pair whose question says which speaker to choose; a gold item shows a real conversation beside a copy "
        "whose speaker says only broken lines (the real one is right)")


@dataclass
class AcuteConfig(AdaptiveConfig):
    acute: AcuteArgs = field(default_factory=AcuteArgs)


def _load_conversations(paths: list[str]) -> list[dict]:
    from parlai_dialeval.importers.registry import load

    data = load([str(p) for p in paths])
    return [r for r in data.records() if r["type"] == "conversation"]


def generate_self_chats(args) -> list[dict]:
    """The fast path: self-chats of every ``self_chat_models`` model, written to ``self_chat_out`` if set."""
    from parlai.core.agents import create_agent_from_shared
    from tqdm import tqdm

    from parlai_dialeval.crowdsourcing.platform.bots import load_agent, model_opt
    from parlai_dialeval.data import write_jsonl

    openings = list(args.self_chat_openings) or list(SELF_CHAT_OPENINGS)
    chats = []
    for name, spec in args.self_chat_models.items():
        shared = load_agent(name, model_opt(name, spec)).share()
        pair = (create_agent_from_shared(shared), create_agent_from_shared(shared))
        for i in tqdm(range(args.self_chats_per_model), desc=f"self-chats of {name}"):
            chats.append(protocol.self_chat(pair, name, openings[i % len(openings)], args.self_chat_turns,
                                            f"self_chat_{name}_{i}"))
    if args.self_chat_out:
        write_jsonl(chats, args.self_chat_out)
    return chats


def build_units(args, rng: random.Random) -> list[dict]:
    """Unit data: the page receives ``shown`` (no model names); the pairs with their models stay on the
    server (``server``, dialeval_static) for the export."""
    if not args.conversations and not args.self_chat_models:
        raise DialevalError("give acute.conversations (files) or acute.self_chat_models (fast path)")
    conversations = _load_conversations(list(args.conversations)) if args.conversations else []
    conversations += generate_self_chats(args) if args.self_chat_models else []
    files = ", ".join(map(str, args.conversations)) or "acute.self_chat_models"
    expected = "conversations of one model each, of at least two models (ACUTE compares two speakers)"
    try:
        pairs = protocol.make_pairs(conversations,
                                    model_pairs=[tuple(p) for p in args.model_pairs] or None,
                                    matchups_per_pair=args.matchups_per_pair, rng=rng)
    except ValueError as error:  # a conversation of two models, a model_pairs name absent
        raise DataError(files, str(error), expected=expected) from None
    if not pairs:  # else a launch with nothing to show would start and wait
        if args.matchups_per_pair < 1:
            raise DialevalError(f"acute.matchups_per_pair={args.matchups_per_pair}: no conversation pairs "
                                "(expected at least 1 per model pair)")
        raise DataError(files, "the conversations name fewer than two models: no pair to compare", expected=expected)
    units = protocol.make_units(pairs, args.subtasks_per_unit, rng)
    rule = checks.rule(checks.validate(checks.of(args), "acute"))
    if rule["attention"] or rule["gold"]:
        units = protocol.with_checks(units, checks.of(args), rng)
    return [{"question": protocol.question_text(args.question), "question_key": args.question,
             "shown": [protocol.public_pair(p) for p in unit], SERVER_KEY: {"pairs": unit, "checks": rule}}
            for unit in units]


def fixed_design(args, judged: bool = False) -> tuple[list[dict], list[dict], list[str]]:
    """(units, onboarding pairs shown, their answer key): every random draw of a launch from ``acute.seed``,
    in the launch's order (the onboarding sides first, then the units). ``dialeval judge --design`` builds its
    pool here too (platform/adaptive/judge_design.py), so the items a judge answered are the ones the launch deals.

    ``judged``: the units are a judge's pool (an adaptive launch with ``adaptive_judge``). The judge's answers
    are matched by ``pair_id`` and model pair, and ``pair_<k>`` names the k-th pair whatever conversations it
    holds: without a seed, or with self-chats generated at launch, another launch would put other
    conversations under the same ids, so both are refused."""
    if judged and args.seed is None:
        raise DialevalError("acute.seed is not set: the conversation pairs a judge answered (`dialeval judge --design "
                            "... --protocol acute`) are drawn with a seed, and an unseeded launch draws others under "
                            "the same pair ids; give the launch and `dialeval judge --design` the same acute.seed")
    if judged and args.self_chat_models:
        raise DialevalError("acute.self_chat_models: self-chats generated at launch are not the ones a judge answered; "
                            "generate them first (`dialeval self_chat`, or a launch with acute.self_chat_out) and give "
                            "the files as acute.conversations")
    rng = random.Random(args.seed)
    shown, answers = protocol.onboarding_pairs(protocol.DEFAULT_ONBOARDING, rng)
    return build_units(args, rng), shown, answers


def shared_state(cfg) -> Any:
    from mephisto.abstractions.blueprints.abstract.static_task.static_blueprint import SharedStaticTaskState

    from parlai_dialeval.crowdsourcing.platform.frontend import page_language

    args = cfg.acute
    checks.refuse_adaptive(cfg, "acute")
    units, shown, answers = fixed_design(args, judged=bool(cfg.get("adaptive") and cfg.get("adaptive_judge")))

    def validate_onboarding(data: dict) -> bool:
        # Mephisto calls this with whatever the page posted: anything but a list of answers fails
        outputs = data.get("outputs") if isinstance(data, dict) else None
        submitted = outputs.get("answers") if isinstance(outputs, dict) else None
        if not isinstance(submitted, list) or len(submitted) != len(answers):
            return False
        choices = [a.get("choice") if isinstance(a, dict) else None for a in submitted]
        return protocol.onboarding_passed(answers, choices, args.onboarding_threshold)

    onboarding = {"question": protocol.question_text(args.question), "onboarding": True,
                  "shown": [protocol.public_pair(p) for p in shown],
                  SERVER_KEY: {"pairs": shown, "question_key": args.question}}
    state = SharedStaticTaskState(static_task_data=units, onboarding_data=onboarding,
                                  validate_onboarding=validate_onboarding,
                                  task_config={"language": page_language(args.language),
                                               "attention": bool(checks.rule(checks.of(args))["attention"])})
    setattr(state, ONBOARDING_TRIES, args.onboarding_tries)
    return state


@guard_units
def export(units, task_name: str) -> ExportReport:
    records, notes, question, rule = [], [], None, None
    for unit in units:
        inputs, outputs = unit.state.get("inputs") or {}, submission(unit)
        if not outputs.get("answers"):
            notes.append(f"unit {unit.unit_id} (worker {unit.worker_id}, {unit.agent_status}): no answers submitted")
            continue
        question = inputs["question_key"]
        server = unit.server or inputs  # runs launched before dialeval_static sent these to the page
        rule = server.get("checks") or rule
        records += acute_export.unit_records(server["pairs"], outputs["answers"], question=question,
                                             study=task_name, worker_id=unit.worker_id,
                                             assignment_id=unit.assignment_id, elapsed=unit_seconds(unit))
    head = [acute_export.study_record(task_name, question, rule)] if question else []
    return ExportReport(records=head + acute_export.dedupe_conversations(records), notes=notes)


@guard_units
def export_onboarding(attempts, task_name: str) -> ExportReport:
    """Each submitted onboarding attempt (one per try): one comparison per known-answer pair,
    ``onboarding: true``, ``meta.try`` and ``meta.passed``, and the known-answer conversations once
    (status onboarding), so every comparison's dialogues are in the file."""
    records, notes = [], []
    for attempt in attempts:
        answers = submission(attempt).get("answers")
        if not answers:
            notes.append(f"onboarding attempt {attempt.agent_id} (worker {attempt.worker_id}, "
                         f"{attempt.agent_status}): no answers submitted")
            continue
        if "pairs" not in attempt.server:
            notes.append(f"onboarding attempt {attempt.agent_id} (worker {attempt.worker_id}): the run kept no "
                         "server-side onboarding pairs (launched before they were recorded)")
            continue
        attempt_records = acute_export.unit_records(attempt.server["pairs"], answers,
                                                    question=attempt.server["question_key"], study=task_name,
                                                    worker_id=attempt.worker_id, assignment_id="", onboarding=True)
        # which try this attempt was (the data Mephisto sent its page) and how Mephisto graded it
        tried = {"try": (attempt.state.get("inputs") or {}).get("try", 1),
                 "passed": attempt.agent_status == "approved"}
        for record in attempt_records:
            if record["type"] == "comparison":
                record["meta"].update(tried)
        records += attempt_records
    return ExportReport(records=acute_export.dedupe_conversations(records), notes=notes)


TASK = TaskSpec(name="acute", config_class=AcuteConfig, shared_state=shared_state, export=export,
                export_onboarding=export_onboarding,
                description="PW-Dialog / ACUTE-Eval: which speaker of two conversations is better",
                extra={"adaptive": StaticPairwise(models_of=lambda p: (p["left"]["model"], p["right"]["model"]),
                                                  public=protocol.public_pair,
                                                  compared=lambda p: frozenset((p["left"]["conversation"]["id"],
                                                                                p["right"]["conversation"]["id"])),
                                                  judge_fields=("conversation_a", "conversation_b"))})
