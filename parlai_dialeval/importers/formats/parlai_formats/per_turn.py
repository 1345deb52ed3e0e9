"""``parlai-per-turn``: see the package docstring."""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.importers.formats.parlai_formats.common import (HUMAN, bucket_ratings, files_matching,
                                                                     load_json)
from parlai_dialeval.importers.registry import ImportReport, register_importer


def _is_agent_data(path: Path) -> bool:
    if path.name != "agent_data.json":
        return False
    obj = load_json(path)
    return isinstance(obj, dict) and isinstance((obj.get("outputs") or {}).get("final_data"), list)


@register_importer("parlai-per-turn", detect=lambda p: bool(files_matching(p, "agent_data.json", _is_agent_data)),
                   help="ParlAI turn_annotations_static results (<hit>/<worker>/agent_data.json); the last "
                        "subtask is the in-flight onboarding check, as ParlAI's analysis assumes")
def import_per_turn(paths) -> ImportReport:
    report = ImportReport("parlai-per-turn")
    seen: set = set()
    for given in paths:
        for path in files_matching(given, "agent_data.json", _is_agent_data):
            with report.reading(path):
                _per_turn_file(path, report, seen)
    return report


def _per_turn_file(path: Path, report: ImportReport, seen: set) -> None:
    data = load_json(path)
    worker, hit = path.parent.name, path.parent.parent.name  # ParlAI's layout: <hit>/<worker>/agent_data.json
    times = data.get("times") or {}
    duration = (times["task_end"] - times["task_start"]) if {"task_start", "task_end"} <= set(times) else None
    subtasks = data["outputs"]["final_data"]
    for position, subtask in enumerate(subtasks):
        with report.reading(path, f"subtask {position}"):
            report.read += 1
            index = subtask.get("subtask_index", position)
            conv_id = f"{hit}_{index}"
            onboarding = position == len(subtasks) - 1
            messages = subtask.get("data") or []
            if not messages:
                report.skip(f"{path} subtask {index}", "no messages")
                continue
            if conv_id not in seen:
                seen.add(conv_id)
                conversation = {"type": "conversation", "id": conv_id, "models": ["bot"], "hit_id": hit,
                                "task": "turn_annotations_static",
                                "turns": [{"speaker": HUMAN if m.get("agent_idx") == 0 else "bot",
                                           "text": str(m.get("text", ""))} for m in messages]}
                if onboarding:
                    conversation["status"] = "onboarding"
                report.records.append(conversation)
            report.kept += 1
            for message in messages:
                if message.get("agent_idx") != 1:
                    continue
                annotations = {k: v for k, v in message.items() if k.startswith("bucket_") or k.startswith("none")}
                if not annotations or all(v is None for v in annotations.values()):
                    continue  # turn not offered for annotation
                report.read += 1
                base = {"type": "rating", "conversation_id": conv_id, "worker_id": worker, "model": "bot",
                        "turn_index": int(message.get("turn_idx", messages.index(message))),
                        "assignment_id": f"{hit}/{worker}",
                        "meta": {"onboarding": onboarding, "assignment_duration": duration}}
                kept = bucket_ratings({k: v for k, v in annotations.items() if v is not None}, base,
                                      f"{path} subtask {index} turn {base['turn_index']}", report)
                report.kept += bool(kept)
                report.records += kept
