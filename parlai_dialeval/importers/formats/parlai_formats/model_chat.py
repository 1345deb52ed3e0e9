"""``parlai-model-chat``: see the package docstring."""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.importers.formats.parlai_formats.common import (HUMAN, bucket_ratings, files_matching,
                                                                     load_json)
from parlai_dialeval.importers.registry import ImportReport, register_importer, unexpected_content

FORMAT = "parlai-model-chat"
_FINAL_SCALE = (1, 5)  # model_chat's end-of-chat rating question is 1-5


def _is_model_chat(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    obj = load_json(path)
    return isinstance(obj, dict) and {"dialog", "workers", "task_description"} <= set(obj)


def _message_ratings(path: Path, index: int, message: dict, conv_id: str, worker: str, model: str,
                     report: ImportReport) -> list[dict]:
    """The bucket ticks and final rating(s) a worker gave one bot message, each placed at that message."""
    base = {"_file": str(path), "_line": f"message {index}", "type": "rating", "conversation_id": conv_id,
            "worker_id": worker, "model": model, "turn_index": index}
    ratings = []
    if isinstance(message.get("problem_data"), dict):
        report.read += 1
        kept = bucket_ratings(message["problem_data"], base, f"{path} message {index}", report)
        report.kept += bool(kept)
        ratings += kept
    if message.get("final_rating") not in (None, ""):
        values = str(message["final_rating"]).split("|")
        for k, value in enumerate(values):
            report.read += 1
            criterion = "final_rating" if len(values) == 1 else f"final_rating_{k + 1}"
            try:
                number = int(value)
            except ValueError:
                report.skip(f"{path} message {index}", f"final rating '{value}' is not an integer")
                continue
            ratings.append({**{k2: v for k2, v in base.items() if k2 != "turn_index"}, "criterion": criterion,
                            "scale": "likert", "scale_min": _FINAL_SCALE[0], "scale_max": _FINAL_SCALE[1],
                            "value": number})
            report.kept += 1
    return ratings


def _model_chat_records(path: Path, root: Path, data: dict, report: ImportReport) -> list[dict]:
    description = data.get("task_description") or {}
    model = str(description.get("model_nickname") or "bot")
    workers = data.get("workers") or []
    worker = str(workers[0]) if workers else None
    conv_id = str(path.relative_to(root).with_suffix("")) if path != root else path.stem
    turns, ratings = [], []
    for index, message in enumerate(data.get("dialog") or []):
        with unexpected_content(path, f"message {index}", FORMAT):
            is_human = message.get("agent_idx") == 0
            turn = {"speaker": HUMAN if is_human else model, "text": str(message.get("text", "")),
                    "meta": {"id": str(message.get("id", ""))}}
            if message.get("fake_start"):
                turn["meta"]["fake_start"] = True
            turns.append(turn)
            if not is_human and worker is not None:
                ratings += _message_ratings(path, index, message, conv_id, worker, model, report)
    conversation = {"type": "conversation", "id": conv_id, "models": [model], "turns": turns, "task": "model_chat",
                    "meta": {k: data.get(k) for k in ("context_dataset", "person1_seed_utterance",
                                                      "person2_seed_utterance", "additional_context",
                                                      "bad_workers", "acceptability_violations")
                             if data.get(k) not in (None, [], [None])}}
    if worker:
        conversation["worker_id"] = worker
    for field, key in (("assignment_id", "assignment_ids"), ("hit_id", "hit_ids")):
        if data.get(key):
            conversation[field] = str(data[key][0])
            if field == "assignment_id":
                for rating in ratings:
                    rating["assignment_id"] = conversation[field]
    personas = data.get("personas")
    if isinstance(personas, list) and len(personas) == 2:
        # model_chat gives personas[0] to the worker (agent 0) and personas[1] to the bot (agent 1).
        conversation["personas"] = {HUMAN: list(personas[0]), model: list(personas[1])}
    if worker and worker in (data.get("bad_workers") or []):
        conversation["status"] = "failed"
    return [conversation] + ratings


@register_importer(FORMAT, detect=lambda p: bool(files_matching(p, "*.json", _is_model_chat)),
                   help="ParlAI model_chat results (*.json with dialog, workers, task_description): "
                        "conversations, per-message bucket annotations, final ratings; a file or folder")
def import_model_chat(paths) -> ImportReport:
    report = ImportReport(FORMAT)
    seen: set = set()
    for given in paths:
        root = given if given.is_dir() else given.parent
        for path in files_matching(given, "*.json", _is_model_chat):
            report.read += 1
            with report.reading(path):
                records = _model_chat_records(path, root, load_json(path), report)
            for record in records:  # ratings already name their message
                record.setdefault("_file", str(path))
            if records[0]["id"] in seen:
                report.skip(str(path), f"duplicate conversation id '{records[0]['id']}' (already imported)")
                continue
            seen.add(records[0]["id"])
            report.records += records
            report.kept += 1
    return report
