"""Rating-scale designs (Santhanam & Shaikh 2020) declared to the platform: ``dialeval launch scale_designs``.

A static task; one launch runs one design (the designs are between-subject). Items come from a JSONL
file: item_id, context (string or list), reference (the gold response), responses {model: text},
and for ``bme`` reference_metrics {readability: score, coherence: score}. The page never sees model
names: responses are shown in random order under neutral keys; the key -> model map and the items stay
server-side (dialeval_static's ``server`` data) and are mapped back at export.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Optional

from mephisto.operations.hydra_config import TaskConfig

from parlai_dialeval.crowdsourcing.platform import checks
from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY
from parlai_dialeval.crowdsourcing.platform.config import language_field
from parlai_dialeval.crowdsourcing.platform.export import ExportReport, guard_units, submission, unit_seconds
from parlai_dialeval.crowdsourcing.platform.registry import TaskSpec
from parlai_dialeval.crowdsourcing.scale_designs import export as sd_export
from parlai_dialeval.crowdsourcing.scale_designs import protocol
from parlai_dialeval.errors import DataError, DialevalError


@dataclass
class ScaleDesignArgs:
    design: str = field(default="likert", metadata={
        "help": f"rating design: {' | '.join(protocol.DESIGNS)} (Likert 1-6, rank-based ME with reference 100, "
                "biased ME with the reference's automatic score, best-worst scaling)"})
    items_file: Optional[str] = field(default=None, metadata={
        "help": "JSONL of items: item_id, context, reference, responses {model: text}, reference_metrics (bme)"})
    items_per_unit: int = field(default=10, metadata={
        "kind": "positive_int", "help": "items each worker rates in one unit"})
    language: str = language_field()
    seed: Optional[int] = field(default=None, metadata={"help": "seed of unit composition and response order"})
    checks: checks.ChecksArgs = checks.checks_field(
        "scale designs: positions count a unit's items (its items_per_unit ones and the checks); an attention check "
        "is an item whose questions ask for a stated answer (a value for every response, or which is best and "
        "which worst); a gold item has one response replaced by a clearly broken one (it must come out lowest)")


@dataclass
class ScaleDesignConfig(TaskConfig):
    scale_designs: ScaleDesignArgs = field(default_factory=ScaleDesignArgs)


def read_items(path: str) -> list[protocol.ScaleItem]:
    items = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            for name in ("item_id", "context", "reference", "responses"):
                if name not in row:
                    raise DataError(path, "missing field", line=line_no, field=name)
            if not isinstance(row["responses"], dict) or len(row["responses"]) < 2:
                raise DataError(path, "responses must map at least two models to texts", line=line_no,
                                field="responses", got=row["responses"])
            context = row["context"] if isinstance(row["context"], list) else [row["context"]]
            items.append(protocol.ScaleItem(str(row["item_id"]), [str(c) for c in context], str(row["reference"]),
                                            {str(k): str(v) for k, v in row["responses"].items()},
                                            row.get("reference_metrics")))
    return items


def _shown_item(item: protocol.ScaleItem, design: str, rng: random.Random) -> tuple[dict, dict]:
    models = list(item.responses)
    rng.shuffle(models)
    keys = {f"r{i}": model for i, model in enumerate(models)}
    shown = {"item_id": item.item_id, "context": item.context, "reference": item.reference,
             "reference_values": {c: protocol.reference_value(item, design, c) for c in protocol.CRITERIA},
             "responses": [{"key": key, "text": item.responses[model]} for key, model in keys.items()]}
    if item.check and item.check["kind"] == "attention":  # its instruction; a gold item looks like any other
        shown["attention"] = {k: v for k, v in item.check.items() if k != "kind"}
    return shown, keys


def shared_state(cfg) -> Any:
    from mephisto.abstractions.blueprints.abstract.static_task.static_blueprint import SharedStaticTaskState

    from parlai_dialeval.crowdsourcing.platform.frontend import page_language

    args = cfg.scale_designs
    protocol.scale_of(args.design)
    if not args.items_file:
        raise DialevalError("scale_designs needs scale_designs.items_file")
    items = read_items(args.items_file)
    rng = random.Random(args.seed)
    rng.shuffle(items)
    scale, low, high = protocol.scale_of(args.design)
    chunks = [items[start:start + args.items_per_unit] for start in range(0, len(items), args.items_per_unit)]
    rule = checks.rule(checks.validate(checks.of(args), "scale_designs"))
    if rule["attention"] or rule["gold"]:
        chunks = protocol.check_items(chunks, checks.of(args), args.design, rng)
    units = []
    for chunk in chunks:
        shown, keys = zip(*(_shown_item(item, args.design, rng) for item in chunk))
        units.append({"design": args.design, "scale": {"kind": scale, "min": low, "max": high},
                      "criteria": [{"name": c, "question": protocol.CRITERION_QUESTIONS[c]} for c in protocol.CRITERIA],
                      "prior_questions": protocol.PRIOR_EXPERIENCE_QUESTIONS, "shown": list(shown),
                      SERVER_KEY: {"keys": {item.item_id: k for item, k in zip(chunk, keys)},
                                   "items": [item.__dict__ for item in chunk], "checks": rule}})
    return SharedStaticTaskState(static_task_data=units, task_config={"language": page_language(args.language),
                                                                      "attention": bool(rule["attention"])})


def _to_models(item_id: str, criterion: str, answer, keys: dict) -> dict:
    """A criterion answer with the page's neutral response keys replaced by model names; ValueError for
    anything but an answer about this item's responses."""
    where = f"item {item_id} {criterion}"
    if not isinstance(answer, dict):
        raise ValueError(f"{where}: an answer must be an object, got {type(answer).__name__}")
    if "values" in answer:
        values = answer["values"]
        if not isinstance(values, dict) or set(values) - set(keys):
            raise ValueError(f"{where}: values must rate the responses {sorted(keys)}, got {values!r:.80}")
        return {"values": {keys[k]: v for k, v in values.items()}}
    return {side: keys.get(answer.get(side)) if isinstance(answer.get(side), str) else None
            for side in ("best", "worst")}


def _ratings_by_model(ratings, keys: dict) -> dict:
    """The submitted ratings {item_id: {criterion: answer}} with model names; ValueError on unknown items."""
    if not isinstance(ratings, dict):
        raise ValueError(f"ratings must map item ids to answers, got {type(ratings).__name__}")
    unknown = sorted(set(ratings) - set(keys))
    if unknown:
        raise ValueError(f"ratings of items this unit did not show: {unknown[:5]!r:.120}")
    out = {}
    for item_id, per_item in ratings.items():
        if not isinstance(per_item, dict):
            raise ValueError(f"item {item_id}: answers must map criteria to answers, got {type(per_item).__name__}")
        out[item_id] = {c: _to_models(item_id, c, a, keys[item_id]) for c, a in per_item.items()}
    return out


@guard_units
def export(units, task_name: str) -> ExportReport:
    records, notes, design, rule = [], [], None, None
    for unit in units:
        inputs, outputs = unit.state.get("inputs") or {}, submission(unit)
        if not outputs.get("ratings"):
            notes.append(f"unit {unit.unit_id} (worker {unit.worker_id}, {unit.agent_status}): no ratings submitted")
            continue
        design = inputs["design"]
        server = unit.server or inputs  # runs launched before dialeval_static sent these to the page
        rule = server.get("checks") or rule
        items = [protocol.ScaleItem(**item) for item in server["items"]]
        ratings = _ratings_by_model(outputs["ratings"], server["keys"])
        records += sd_export.unit_records(items, {**outputs, "ratings": ratings}, design=design,
                                          study=task_name, worker_id=unit.worker_id, assignment_id=unit.assignment_id,
                                          order={i: list(k.values()) for i, k in server["keys"].items()},
                                          tolerance=(rule or {}).get("tolerance", checks.ChecksArgs.tolerance),
                                          elapsed=unit_seconds(unit))
    head = [sd_export.study_record(task_name, design, rule)] if design else []
    return ExportReport(records=head + records, notes=notes)


TASK = TaskSpec(name="scale_designs", config_class=ScaleDesignConfig, shared_state=shared_state, export=export,
                description="Likert / magnitude estimation / best-worst rating designs (Santhanam & Shaikh 2020)")
