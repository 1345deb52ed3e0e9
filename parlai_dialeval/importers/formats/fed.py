"""Importer ``fed``: the FED dataset (Mehri & Eskenazi 2020), ``fed_data.json``.

Mapping (docs/pairwise_analysis.md): one ``conversation`` per item, id ``fed-turn-<i>`` or
``fed-dialog-<i>`` (i = 0-based position in the file), turns parsed from the ``User:``/``System:``
lines (speaker ``human`` / the system name), the turn-level ``response`` appended as the last turn;
one ``rating`` per numeric annotator label, worker ``fed-annotator-<k>`` (k = position, annotators
are anonymous), criterion = the quality lower-cased; an integral float (1.0) counts as its integer.
Skipped with a reason: "N/A (...)" labels, other labels that are not integers ("3", 1.5), a dialog-level
item with an empty context and a turn-level item with an empty response (nothing was rated).
"""
from __future__ import annotations

import json
from pathlib import Path

from parlai_dialeval.errors import DataError
from parlai_dialeval.importers.registry import ImportReport, register_importer

FORMAT = "fed"
STUDY = "fed"
# Label ranges from the FED annotation guidelines (shared/data/README.md): 0-2 unless listed here.
SCALE_MAX = {"turn": {"understandable": 1, "overall": 4}, "dialog": {"consistent": 1, "overall": 4}}
DEFAULT_MAX = 2


def scale_max(level: str, criterion: str) -> int:
    return SCALE_MAX[level].get(criterion, DEFAULT_MAX)


def detect(path: Path) -> bool:
    if not (path.is_file() and path.suffix == ".json"):
        return False
    with open(path, encoding="utf-8", errors="replace") as handle:
        head = handle.read(4096)
    return head.lstrip().startswith("[") and '"annotations"' in head and '"system"' in head


def parse_context(text: str, system: str, where: str) -> list[dict]:
    """``User: ...``/``System: ...`` lines -> turns; a line without a prefix continues the last turn."""
    turns: list[dict] = []
    for line in text.split("\n"):
        if line.startswith("User:"):
            turns.append({"speaker": "human", "text": line[len("User:"):].strip()})
        elif line.startswith("System:"):
            turns.append({"speaker": system, "text": line[len("System:"):].strip()})
        elif turns:
            turns[-1]["text"] += "\n" + line
        elif line.strip():
            raise DataError(where, "dialogue line without a speaker", field="context",
                            expected="lines starting with 'User:' or 'System:'", got=line)
    return turns


def _level(item: dict) -> str:
    return "turn" if "response" in item else "dialog"


def criteria() -> list[dict]:
    """The study's criteria: every FED quality, lower-cased, with its level(s) and range."""
    names = {"turn": ["interesting", "engaging", "specific", "relevant", "correct", "semantically appropriate",
                      "understandable", "fluent", "overall"],
             "dialog": ["coherent", "error recovery", "consistent", "diverse", "depth", "likeable",
                        "understanding", "flexible", "informative", "inquisitive", "overall"]}
    declared: dict[str, dict] = {}
    for level, qualities in names.items():
        for name in qualities:
            entry = declared.setdefault(name, {"name": name, "positive": True, "scale": "likert", "min": 0,
                                               "max": scale_max(level, name), "levels": []})
            entry["levels"].append(level)
    return list(declared.values())


@register_importer(FORMAT, detect=detect, help="FED dataset fed_data.json (Mehri & Eskenazi 2020)")
def import_fed(paths) -> ImportReport:
    report = ImportReport(FORMAT)
    report.records.append({"type": "study", "name": STUDY, "criteria": criteria(),
                           "description": "FED dataset: turn- and dialog-level quality annotations of "
                                          "Meena, Mitsuku and Human conversations, 5 annotators per item"})
    for path in map(Path, paths):
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as error:
            raise DataError(path, f"not UTF-8 text ({error.reason})", expected="UTF-8 JSON") from None
        except json.JSONDecodeError as error:
            raise DataError(path, f"not valid JSON ({error.msg})", line=error.lineno) from None
        if not isinstance(items, list):
            raise DataError(path, "not a list of items", expected="[{context, system, annotations}, ...]")
        for i, item in enumerate(items):
            with report.reading(path, f"item {i}"):
                _convert_item(path, i, item, report)
    return report


def _convert_item(path: Path, i: int, item, report: ImportReport) -> None:
    where = f"{path} item {i}"
    if not isinstance(item, dict) or not {"context", "system", "annotations"} <= set(item):
        raise DataError(path, "item lacks context/system/annotations", line=f"item {i}",
                        expected="{context, system, annotations, response?}", got=item)
    level, system = _level(item), item["system"]
    cid = f"fed-{level}-{i}"
    turns = parse_context(item["context"], system, where)
    # Ratings of nothing are not judgements: counted as one item read and skipped, its labels unread.
    if level == "dialog" and not any(turn["text"].strip() for turn in turns):
        report.read += 1
        report.skip(where, "no dialogue to rate (empty context)")
        return
    if level == "turn":
        response = parse_context(item["response"], system, where)
        if not any(turn["text"].strip() for turn in response):
            report.read += 1
            report.skip(where, "no response to rate (empty response)")
            return
        turns += response
    report.records.append({"type": "conversation", "id": cid, "study": STUDY, "task": "fed",
                           "models": [system], "turns": turns, "meta": {"level": level, "index": i}})
    for quality, labels in item["annotations"].items():
        criterion = quality.lower()
        top = scale_max(level, criterion)
        for k, label in enumerate(labels):
            report.read += 1
            if isinstance(label, float) and label.is_integer():
                label = int(label)  # 1.0 as another JSON writer may put FED's 1
            if isinstance(label, bool) or not isinstance(label, int):
                # FED's "N/A (...)" answers are not ratings; anything else is not a label of the scale
                shown = repr(label[:40]) if isinstance(label, str) else repr(label)[:40]
                why = (f"non-numeric label {shown}" if isinstance(label, str) and label.startswith("N/A")
                       else f"label {shown} is not an integer")
                report.skip(f"{where} {quality} annotator {k}", why)
                continue
            if not 0 <= label <= top:
                raise DataError(path, "label outside the quality's range", line=f"item {i}", field=quality,
                                expected=f"0..{top}", got=label)
            report.records.append({"type": "rating", "study": STUDY, "conversation_id": cid,
                                   "worker_id": f"fed-annotator-{k}", "model": system, "criterion": criterion,
                                   "scale": "likert", "scale_min": 0, "scale_max": top, "value": label,
                                   "meta": {"level": level, "annotator": k}})
            report.kept += 1
