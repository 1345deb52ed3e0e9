"""A/B next-utterance (ChatEval) declared to the platform: ``dialeval launch ab_next_utterance``.

A static task: items are built at launch, either from a JSONL file of ready pairs or from a ParlAI
teacher's prompts (e.g. ``dialeval:chateval:ncm``) answered by two configured models. Identical
responses become automatic ties (never shown; every unit carries them, the export keeps one each).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from parlai_dialeval.crowdsourcing.ab_next_utterance import export as ab_export
from parlai_dialeval.crowdsourcing.ab_next_utterance import protocol
from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.adaptive.config import AdaptiveConfig, StaticPairwise
from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY
from parlai_dialeval.crowdsourcing.platform.config import language_field
from parlai_dialeval.crowdsourcing.platform.export import ExportReport, guard_units, submission, unit_seconds
from parlai_dialeval.crowdsourcing.platform.registry import TaskSpec
from parlai_dialeval.errors import DataError, DialevalError

ITEM_FIELDS = ("item_id", "context", "model_a", "model_b", "response_a", "response_b")


@dataclass
class AbArgs:
    items_file: Optional[str] = field(default=None, metadata={
        "help": "JSONL of ready items: item_id, context (string or list of turns), model_a, model_b, "
                "response_a, response_b (A/B here is only the file's order; display order is randomised)"})
    teacher: Optional[str] = field(default=None, metadata={
        "help": "ParlAI task whose prompts are answered by the two models, e.g. dialeval:chateval:ncm"})
    teacher_opt: dict = field(default_factory=dict, metadata={"help": "extra ParlAI options of the teacher"})
    max_items: Optional[int] = field(default=None, metadata={"help": "at most this many teacher prompts"})
    models: dict = field(default_factory=dict, metadata={
        "help": "exactly two models (name -> {opt: {ParlAI opt}}) answering the teacher's prompts"})
    per_hit: int = field(default=protocol.PER_HIT, metadata={
        "kind": "positive_int", "help": "comparisons per HIT (ChatEval: 10)"})
    language: str = language_field()
    seed: Optional[int] = field(default=None, metadata={"help": "seed of HIT composition and A/B order"})
    checks: checks.ChecksArgs = checks.checks_field(
        "A/B: positions count a HIT's items (its per_hit ones and the checks); an attention check is an item whose "
        "question says which answer to give; a gold item shows a clearly broken response on one side (the other "
        "is right)")


@dataclass
class AbConfig(AdaptiveConfig):
    ab: AbArgs = field(default_factory=AbArgs)


def read_items(path: str) -> list[protocol.ABItem]:
    items = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(path, f"not JSON: {error}", line=line_no) from error
            for name in ITEM_FIELDS:
                if name not in row:
                    raise DataError(path, "missing field", line=line_no, field=name)
            context = row["context"] if isinstance(row["context"], list) else [row["context"]]
            items.append(protocol.ABItem(str(row["item_id"]), [str(t) for t in context], row["model_a"],
                                         row["model_b"], str(row["response_a"]), str(row["response_b"])))
    return items


def build_items(args) -> list[protocol.ABItem]:
    if args.items_file:
        return read_items(args.items_file)
    if not args.teacher or len(args.models) != 2:
        raise DialevalError("ab_next_utterance needs ab.items_file, or ab.teacher with exactly two ab.models")
    from parlai_dialeval.crowdsourcing.platform.bots import load_agent, model_opt

    contexts = protocol.contexts_from_teacher(args.teacher, args.max_items, **dict(args.teacher_opt))
    responses = {name: protocol.generate_responses(contexts, load_agent(name, model_opt(name, spec)))
                 for name, spec in args.models.items()}
    return protocol.items_from_responses(contexts, responses, tuple(args.models), id_prefix=Path(
        args.teacher.replace(":", "_")).name)


def tie_dict(item: protocol.ABItem) -> dict:
    return {"item_id": item.item_id, "context": item.context, "model_x": item.model_x, "model_y": item.model_y,
            "response_x": item.response_x, "response_y": item.response_y}


def shared_state(cfg) -> Any:
    from mephisto.abstractions.blueprints.abstract.static_task.static_blueprint import SharedStaticTaskState

    from parlai_dialeval.crowdsourcing.platform.frontend import page_language

    args = cfg.ab
    checks.refuse_adaptive(cfg, "ab")
    rng = random.Random(args.seed)
    hits, ties = protocol.make_hits(build_items(args), rng, args.per_hit)
    if not hits:
        raise DialevalError(f"all {len(ties)} items have identical responses: nothing to show workers")
    rule = checks.rule(checks.validate(checks.of(args), "ab"))
    hits = protocol.with_checks(hits, checks.of(args), rng) if rule["attention"] or rule["gold"] else hits
    # the page gets `shown` (no model names); pairs and automatic ties stay server-side (dialeval_static)
    data = [{"shown": protocol.public_view(hit), "question": protocol.QUESTION,
             SERVER_KEY: {"pairs": hit, "automatic_ties": [tie_dict(t) for t in ties], "checks": rule}} for hit in hits]
    return SharedStaticTaskState(static_task_data=data, task_config={"language": page_language(args.language),
                                                                     "attention": bool(rule["attention"])})


@guard_units
def export(units, task_name: str) -> ExportReport:
    records, notes, ties, rule = [], [], {}, None
    for unit in units:
        outputs = submission(unit)
        # runs launched before dialeval_static sent these to the page
        server = unit.server or unit.state.get("inputs") or {}
        rule = server.get("checks") or rule
        for tie in server.get("automatic_ties") or []:
            ties.setdefault(tie["item_id"], protocol.ABItem(**tie))
        if not outputs.get("answers"):
            notes.append(f"unit {unit.unit_id} (worker {unit.worker_id}, {unit.agent_status}): no answers submitted")
            continue
        records += ab_export.unit_records(server["pairs"], outputs["answers"], study=task_name,
                                          worker_id=unit.worker_id, assignment_id=unit.assignment_id,
                                          elapsed=unit_seconds(unit))
    records += ab_export.automatic_tie_records(list(ties.values()), study=task_name)
    return ExportReport(records=[ab_export.study_record(task_name, rule), *records], notes=notes)


TASK = TaskSpec(name="ab_next_utterance", config_class=AbConfig, shared_state=shared_state, export=export,
                description="A/B next-utterance comparisons with ties (ChatEval, Lee et al. 2020)",
                extra={"adaptive": StaticPairwise(models_of=lambda p: (p["model_a"], p["model_b"]),
                                                  public=lambda p: protocol.public_view([p])[0],
                                                  compared=lambda p: frozenset((p["response_a"], p["response_b"])),
                                                  judge_fields=("response_a", "response_b"))})
