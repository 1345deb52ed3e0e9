"""Helpers shared by the ParlAI-output importers: reading JSON and JSON Lines, finding files, human ids."""
from __future__ import annotations

import json
from pathlib import Path

from parlai_dialeval.importers.registry import ImportReport

HUMAN = "human"
HUMAN_IDS = ("human_evaluator", "worker", "human")


def first_json_line(path: Path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    return json.loads(line)
    except (OSError, json.JSONDecodeError):
        return None
    return None


def json_lines(path: Path, report: ImportReport):
    """(where, line number, object) for every non-blank line that parses; counts reads, skips bad JSON."""
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            report.read += 1
            where = f"{path}:{line_number}"
            try:
                yield where, line_number, json.loads(line)
            except json.JSONDecodeError as error:
                report.skip(where, f"not valid JSON ({error.msg})")


def load_json(path: Path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def is_human(speaker_id: str) -> bool:
    lowered = str(speaker_id).lower()
    return lowered in HUMAN_IDS or lowered.endswith("_as_human")


def files_matching(path: Path, pattern: str, accept) -> list[Path]:
    if path.is_file():
        return [path] if accept(path) else []
    if path.is_dir():
        return sorted(p for p in path.rglob(pattern) if p.is_file() and accept(p))
    return []


def bucket_ratings(annotations: dict, base: dict, where: str, report: ImportReport) -> list[dict]:
    """Binary ratings from one message's bucket ticks; 'none' buckets are implied by all-zero
    ratings, so they yield no record; contradictory or empty ticks are skipped (ParlAI drops them too)."""
    none_keys = [k for k in annotations if k.lower().startswith("none")]
    buckets = {k: v for k, v in annotations.items() if k not in none_keys}
    none_ticked = any(bool(annotations[k]) for k in none_keys)
    if none_ticked and any(bool(v) for v in buckets.values()):
        report.skip(where, "inconsistent annotation: a 'none' bucket and a problem bucket both ticked")
        return []
    if none_keys and not none_ticked and not any(bool(v) for v in buckets.values()):
        report.skip(where, "no bucket ticked (not even 'none')")
        return []
    return [{**base, "criterion": name.lower(), "scale": "binary", "scale_min": 0, "scale_max": 1,
             "value": int(bool(value))} for name, value in buckets.items()]
