"""``parlai-acute``: see the package docstring."""
from __future__ import annotations

import ast
import csv
from pathlib import Path

from parlai_dialeval.importers.formats.parlai_formats.common import (HUMAN, files_matching, first_json_line,
                                                                     is_human, json_lines)
from parlai_dialeval.importers.registry import ImportReport, register_importer


_ACUTE_RESULT_COLUMNS = {"winner", "loser", "eval_choice_0", "eval_choice_1", "pairing_id", "question"}


def _is_acute_results(path: Path) -> bool:
    if path.suffix != ".csv":
        return False
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError):
        return False
    return _ACUTE_RESULT_COLUMNS <= set(header)


def _is_acute_pairings(path: Path) -> bool:
    if path.suffix != ".jsonl":
        return False
    obj = first_json_line(path)
    return isinstance(obj, dict) and "speakers_to_eval" in obj and "dialogue_dicts" in obj


def _acute_files(path: Path) -> list[Path]:
    return files_matching(path, "*.csv", _is_acute_results) + files_matching(path, "*.jsonl", _is_acute_pairings)


def _dialogue_problem(dialogue: dict) -> str | None:
    """Why a dialogue cannot become a conversation: nothing to judge, or a message whose speaker is
    unknown (it would become a speaker named "")."""
    messages = dialogue.get("dialogue") or []
    if not isinstance(messages, list):
        return "'dialogue' is not a list of messages"
    if not messages:
        return "an empty dialogue"
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or not str(message.get("id") or "").strip():
            return f"message {number} has no speaker id"
    return None


def _acute_conversation(conv_id: str, model: str, dialogue: dict, status: str | None = None) -> dict:
    turns = []
    for message in dialogue.get("dialogue") or []:
        speaker_id = str(message.get("id", ""))
        speaker = model if speaker_id == model else HUMAN if is_human(speaker_id) else speaker_id
        turns.append({"speaker": speaker, "text": str(message.get("text", "")), "meta": {"id": speaker_id}})
    human = any(t["speaker"] == HUMAN for t in turns)
    record = {"type": "conversation", "id": conv_id, "models": [model], "turns": turns,
              "task": "acute_eval" if human else "self_chat"}
    if dialogue.get("evaluator_id_hashed"):
        record["worker_id"] = str(dialogue["evaluator_id_hashed"])
    if dialogue.get("context"):
        record["meta"] = {"context": dialogue["context"]}
    if status:
        record["status"] = status
    return record


def _import_acute_results(path: Path, report: ImportReport, seen: set) -> None:
    with open(path, encoding="utf-8", newline="") as handle:
        for row_number, row in enumerate(csv.DictReader(handle), start=2):
            with report.reading(path, f"row {row_number}"):
                _acute_result(path, row_number, row, report, seen)


def _import_acute_pairings(path: Path, report: ImportReport, seen: set) -> None:
    for where, line_number, pairing in json_lines(path, report):
        with report.reading(path, line_number):
            _acute_pairing(where, line_number, pairing, report, seen)


def _acute_pairing(where: str, line_number: int, pairing, report: ImportReport, seen: set) -> None:
    if not isinstance(pairing, dict):
        report.skip(where, "a pairing must be a JSON object")
        return
    models, dialogues = pairing.get("speakers_to_eval") or [], pairing.get("dialogue_dicts") or []
    if len(models) != 2 or len(dialogues) != 2:
        report.skip(where, "a pairing needs two speakers_to_eval and two dialogue_dicts")
        return
    ids = pairing.get("dialogue_ids") or [None, None]
    status = "onboarding" if pairing.get("is_onboarding") else None
    for index, dialogue in enumerate(dialogues):
        problem = _dialogue_problem(dialogue)
        if problem:  # a pairing is judged as a whole: without one side there is nothing to compare
            report.skip(where, f"dialogue_dicts[{index}]: {problem}")
            return
    for model, dialogue, index in zip(models, dialogues, ids):
        conv_id = str(dialogue.get("id") or f"{model}-{index}")
        if conv_id in seen:
            continue
        seen.add(conv_id)
        record = _acute_conversation(conv_id, model, dialogue, status)
        record.setdefault("meta", {})["pairing"] = {"line": line_number, "tags": pairing.get("tags"),
                                                    "correct_answer": pairing.get("correct_answer")}
        report.records.append(record)
    report.kept += 1


def _acute_result(path: Path, row_number: int, row: dict, report: ImportReport, seen: set) -> None:
    report.read += 1
    where = f"{path}:{row_number}"
    a, b, winner = row["eval_choice_0"], row["eval_choice_1"], row["winner"]
    if winner not in (a, b):
        report.skip(where, f"winner '{winner}' is neither eval_choice_0 '{a}' nor eval_choice_1 '{b}'")
        return
    worker = str(row.get("worker_name") or row.get("worker") or "").strip()
    if not worker:  # str(None) made them all worker "None", then refused as duplicates of each other
        report.skip(where, "no worker: worker_name and worker are empty")
        return
    try:
        pair = ast.literal_eval(row.get("pairs_to_eval") or "{}")  # Python repr, not JSON
    except (ValueError, SyntaxError):
        report.skip(where, "pairs_to_eval is not a readable Python literal")
        return
    ids = dict(zip(pair.get("speakers_to_eval") or [], pair.get("dialogue_ids") or []))
    conv = {m: f"{m}-{ids[m]}" for m in (a, b) if m in ids}
    refused = set()  # models whose dialogue was refused: the comparison does not point at it
    for model, column in ((winner, "winner_dialogue"), (row["loser"], "loser_dialogue")):
        if model in conv and conv[model] not in seen and row.get(column):
            try:
                dialogue = ast.literal_eval(row[column])
            except (ValueError, SyntaxError):
                report.skip(where, f"{column} is not a readable Python literal (conversation not kept)")
                continue
            problem = _dialogue_problem(dialogue)
            if problem:
                report.skip(where, f"{column}: {problem} (conversation not kept)")
                refused.add(model)
                continue
            seen.add(conv[model])
            report.records.append(_acute_conversation(conv[model], model, dialogue))
    record = {"type": "comparison", "item_id": str(row["pairing_id"]),
              "worker_id": worker,
              "model_a": a, "model_b": b, "choice": "a" if winner == a else "b",
              "question": row["question"], "onboarding": str(row.get("is_onboarding")) == "True",
              "meta": {"run_id": row.get("run_id"), "matchup": row.get("matchup"),
                       "correct": row.get("correct")}}
    if row.get("reason"):
        record["justification"] = row["reason"]
    if row.get("unit_id"):
        record["assignment_id"] = str(row["unit_id"])
    if a in conv and b in conv and not refused:
        record["conversation_a"], record["conversation_b"] = conv[a], conv[b]
    report.records.append(record)
    report.kept += 1


@register_importer("parlai-acute", detect=lambda p: bool(_acute_files(p)),
                   help="ParlAI ACUTE-Eval pairings (pairings.jsonl) and results (*full*.csv of the "
                        "ACUTE analysis script); a file or a folder holding them")
def import_acute(paths) -> ImportReport:
    report = ImportReport("parlai-acute")
    seen: set = set()
    for given in paths:
        for path in _acute_files(given):
            (_import_acute_results if path.suffix == ".csv" else _import_acute_pairings)(path, report, seen)
    return report
