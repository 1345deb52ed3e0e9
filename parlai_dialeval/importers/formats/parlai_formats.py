"""Importers for ParlAI's own outputs (ParlAI 1.7.2 layouts; mapping in docs/single_model_analysis.md).

- ``parlai-conversations``: Conversations JSON Lines as ``parlai self_chat --outfile X.jsonl`` writes it:
  one conversation per line, ``dialog`` a list of [message, message] exchanges, optional ``context``
  and ``metadata_path`` (the ``.metadata`` file beside it names the model and whether it is a self-chat).
- ``parlai-acute``: ACUTE-Eval pairings (``pairings.jsonl``: ``speakers_to_eval``, ``dialogue_dicts``) and
  ACUTE-Eval results (the analysis script's ``*full*.csv``: one row per judgement).
- ``parlai-model-chat``: model_chat outputs (``*.json`` with ``dialog``, ``workers``,
  ``task_description``), per-message ``problem_data`` annotations and the ``final_rating``.
- ``parlai-per-turn``: turn_annotations_static outputs (``<hit>/<worker>/agent_data.json``).
"""
from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

from parlai_dialeval.importers.registry import ImportReport, register_importer

HUMAN = "human"
_HUMAN_IDS = ("human_evaluator", "worker", "human")
_FINAL_SCALE = (1, 5)  # model_chat's end-of-chat rating question is 1-5


def _first_json_line(path: Path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    return json.loads(line)
    except (OSError, json.JSONDecodeError):
        return None
    return None


def _json_lines(path: Path, report: ImportReport):
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


def _load_json(path: Path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def _is_human(speaker_id: str) -> bool:
    lowered = str(speaker_id).lower()
    return lowered in _HUMAN_IDS or lowered.endswith("_as_human")


def _files(path: Path, pattern: str, accept) -> list[Path]:
    if path.is_file():
        return [path] if accept(path) else []
    if path.is_dir():
        return sorted(p for p in path.rglob(pattern) if p.is_file() and accept(p))
    return []


# ---------------------------------------------------------------- parlai-conversations

def _is_conversations_line(obj) -> bool:
    return (isinstance(obj, dict) and "type" not in obj and isinstance(obj.get("dialog"), list)
            and all(isinstance(x, list) for x in obj["dialog"][:3]) and "dialogue_dicts" not in obj)


def _detect_conversations(path: Path) -> bool:
    return path.is_file() and path.suffix == ".jsonl" and _is_conversations_line(_first_json_line(path))


def _model_from_metadata(path: Path, metadata: dict | None) -> str | None:
    """ACUTE's fast-eval layout ``self_chats/<model>.<task>.jsonl`` names the model in the file name;
    otherwise the metadata's model file (its folder when the file is called ``model``) or model."""
    if path.parent.name == "self_chats" and "." in path.stem:
        return path.stem.split(".")[0]
    opt = (metadata or {}).get("opt") or {}
    return _model_name(opt.get("model_file")) or opt.get("model")


def _partner_from_metadata(metadata: dict | None) -> str | None:
    """The second agent of a self-chat between two models (``--partner-model-file``)."""
    opt = (metadata or {}).get("opt") or {}
    return _model_name(opt.get("partner_model_file")) or _model_name(opt.get("partner_opt_file"))


def _model_name(model_file: str | None) -> str | None:
    if not model_file:
        return None
    model_file = Path(model_file)
    return model_file.parent.name if model_file.stem == "model" else model_file.stem


_MESSAGE_KEYS = {"id", "text", "episode_done"}


def _conversation_from_dialog(conv_id: str, exchanges: list, model: str | None, self_chat: bool,
                              context: list | None, partner: str | None = None) -> dict:
    messages = [m for exchange in exchanges for m in exchange if isinstance(m, dict)]
    context = list(context or []) + [m for m in messages if m.get("id") == "context"]
    messages = [m for m in messages if m.get("id") != "context"]
    bot_ids = sorted({str(m.get("id")) for m in messages if not _is_human(m.get("id", ""))})
    # In a self-chat the first agent to speak is the model and the second its partner (itself
    # unless --partner-model-file named another model).
    speaker_ids = list(dict.fromkeys(str(m.get("id", "")) for m in messages))
    by_id = {sid: (partner or model) if i == 1 else model for i, sid in enumerate(speaker_ids)} if self_chat else {}
    turns = []
    for message in messages:
        speaker_id = str(message.get("id", ""))
        if self_chat:
            speaker = by_id[speaker_id] or speaker_id or "bot"
        else:
            speaker = HUMAN if _is_human(speaker_id) else (model or speaker_id or "bot")
        extra = {k: v for k, v in message.items() if k not in _MESSAGE_KEYS}
        turns.append({"speaker": speaker, "text": str(message.get("text", "")), "meta": {"id": speaker_id, **extra}})
    if self_chat:
        models = list(dict.fromkeys(t["speaker"] for t in turns)) or ["bot"]
    else:
        models = [model] if model else bot_ids or ["bot"]
    record = {"type": "conversation", "id": conv_id, "models": models, "turns": turns,
              "task": "self_chat" if self_chat else "parlai_conversations"}
    personas = [c.get("text", "") for c in context if "your persona:" in str(c.get("text", ""))]
    if personas:
        speakers = sorted({t["meta"]["id"] for t in turns})
        record["personas"] = {
            (speakers[i] if i < len(speakers) else f"speaker_{i + 1}"):
                [line.removeprefix("your persona:").strip() for line in text.split("\n")
                 if line.startswith("your persona:")]
            for i, text in enumerate(personas)}
    if context:
        record["meta"] = {"context": [c.get("text", "") for c in context]}
    return record


@register_importer("parlai-conversations", detect=_detect_conversations,
                   help="ParlAI Conversations JSON Lines (parlai self_chat --outfile X.jsonl; "
                        "dialeval self_chat), one conversation per line, with its .metadata when present")
def import_conversations(paths) -> ImportReport:
    report = ImportReport("parlai-conversations")
    for path in paths:
        metadata_path = path.with_suffix(".metadata")
        metadata = _load_json(metadata_path) if metadata_path.is_file() else None
        model, partner = _model_from_metadata(path, metadata), _partner_from_metadata(metadata)
        self_chat = bool((metadata or {}).get("self_chat"))
        for where, line_number, obj in _json_lines(path, report):
            if not _is_conversations_line(obj) or not obj["dialog"]:
                report.skip(where, "no 'dialog' list of exchanges")
                continue
            conv_id = str(obj.get("conversation_id") or obj.get("id") or f"{path.stem}:{line_number}")
            record = _conversation_from_dialog(conv_id, obj["dialog"], model, self_chat, obj.get("context"),
                                              partner)
            if not record["turns"]:
                report.skip(where, "dialog holds no messages")
                continue
            report.records.append(record)
            report.kept += 1
    return report


# ---------------------------------------------------------------- parlai-acute

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
    obj = _first_json_line(path)
    return isinstance(obj, dict) and "speakers_to_eval" in obj and "dialogue_dicts" in obj


def _acute_files(path: Path) -> list[Path]:
    return _files(path, "*.csv", _is_acute_results) + _files(path, "*.jsonl", _is_acute_pairings)


def _acute_conversation(conv_id: str, model: str, dialogue: dict, status: str | None = None) -> dict:
    turns = []
    for message in dialogue.get("dialogue") or []:
        speaker_id = str(message.get("id", ""))
        speaker = model if speaker_id == model else HUMAN if _is_human(speaker_id) else speaker_id
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
            report.read += 1
            where = f"{path}:{row_number}"
            a, b, winner = row["eval_choice_0"], row["eval_choice_1"], row["winner"]
            if winner not in (a, b):
                report.skip(where, f"winner '{winner}' is neither eval_choice_0 '{a}' nor eval_choice_1 '{b}'")
                continue
            try:
                pair = ast.literal_eval(row.get("pairs_to_eval") or "{}")  # Python repr, not JSON
            except (ValueError, SyntaxError):
                report.skip(where, "pairs_to_eval is not a readable Python literal")
                continue
            ids = dict(zip(pair.get("speakers_to_eval") or [], pair.get("dialogue_ids") or []))
            conv = {m: f"{m}-{ids[m]}" for m in (a, b) if m in ids}
            for model, column in ((winner, "winner_dialogue"), (row["loser"], "loser_dialogue")):
                if model in conv and conv[model] not in seen and row.get(column):
                    try:
                        dialogue = ast.literal_eval(row[column])
                    except (ValueError, SyntaxError):
                        report.skip(where, f"{column} is not a readable Python literal (conversation not kept)")
                        continue
                    seen.add(conv[model])
                    report.records.append(_acute_conversation(conv[model], model, dialogue))
            record = {"type": "comparison", "item_id": str(row["pairing_id"]),
                      "worker_id": str(row.get("worker_name") or row.get("worker")),
                      "model_a": a, "model_b": b, "choice": "a" if winner == a else "b",
                      "question": row["question"], "onboarding": str(row.get("is_onboarding")) == "True",
                      "meta": {"run_id": row.get("run_id"), "matchup": row.get("matchup"),
                               "correct": row.get("correct")}}
            if row.get("reason"):
                record["justification"] = row["reason"]
            if row.get("unit_id"):
                record["assignment_id"] = str(row["unit_id"])
            if a in conv and b in conv:
                record["conversation_a"], record["conversation_b"] = conv[a], conv[b]
            report.records.append(record)
            report.kept += 1


def _import_acute_pairings(path: Path, report: ImportReport, seen: set) -> None:
    for where, line_number, pairing in _json_lines(path, report):
        if not isinstance(pairing, dict):
            report.skip(where, "a pairing must be a JSON object")
            continue
        models, dialogues = pairing.get("speakers_to_eval") or [], pairing.get("dialogue_dicts") or []
        if len(models) != 2 or len(dialogues) != 2:
            report.skip(where, "a pairing needs two speakers_to_eval and two dialogue_dicts")
            continue
        ids = pairing.get("dialogue_ids") or [None, None]
        status = "onboarding" if pairing.get("is_onboarding") else None
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


# ---------------------------------------------------------------- parlai-model-chat

def _is_model_chat(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    obj = _load_json(path)
    return isinstance(obj, dict) and {"dialog", "workers", "task_description"} <= set(obj)


def _bucket_ratings(annotations: dict, base: dict, where: str, report: ImportReport) -> list[dict]:
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


def _model_chat_records(path: Path, root: Path, data: dict, report: ImportReport) -> list[dict]:
    description = data.get("task_description") or {}
    model = str(description.get("model_nickname") or "bot")
    workers = data.get("workers") or []
    worker = str(workers[0]) if workers else None
    conv_id = str(path.relative_to(root).with_suffix("")) if path != root else path.stem
    turns, ratings = [], []
    for index, message in enumerate(data.get("dialog") or []):
        is_human = message.get("agent_idx") == 0
        turn = {"speaker": HUMAN if is_human else model, "text": str(message.get("text", "")),
                "meta": {"id": str(message.get("id", ""))}}
        if message.get("fake_start"):
            turn["meta"]["fake_start"] = True
        turns.append(turn)
        if is_human or worker is None:
            continue
        base = {"type": "rating", "conversation_id": conv_id, "worker_id": worker, "model": model,
                "turn_index": index}
        if isinstance(message.get("problem_data"), dict):
            report.read += 1
            kept = _bucket_ratings(message["problem_data"], base, f"{path} message {index}", report)
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


@register_importer("parlai-model-chat", detect=lambda p: bool(_files(p, "*.json", _is_model_chat)),
                   help="ParlAI model_chat results (*.json with dialog, workers, task_description): "
                        "conversations, per-message bucket annotations, final ratings; a file or folder")
def import_model_chat(paths) -> ImportReport:
    report = ImportReport("parlai-model-chat")
    seen: set = set()
    for given in paths:
        root = given if given.is_dir() else given.parent
        for path in _files(given, "*.json", _is_model_chat):
            report.read += 1
            records = _model_chat_records(path, root, _load_json(path), report)
            if records[0]["id"] in seen:
                report.skip(str(path), f"duplicate conversation id '{records[0]['id']}' (already imported)")
                continue
            seen.add(records[0]["id"])
            report.records += records
            report.kept += 1
    return report


# ---------------------------------------------------------------- parlai-per-turn

def _is_agent_data(path: Path) -> bool:
    if path.name != "agent_data.json":
        return False
    obj = _load_json(path)
    return isinstance(obj, dict) and isinstance((obj.get("outputs") or {}).get("final_data"), list)


@register_importer("parlai-per-turn", detect=lambda p: bool(_files(p, "agent_data.json", _is_agent_data)),
                   help="ParlAI turn_annotations_static results (<hit>/<worker>/agent_data.json); the last "
                        "subtask is the in-flight onboarding check, as ParlAI's analysis assumes")
def import_per_turn(paths) -> ImportReport:
    report = ImportReport("parlai-per-turn")
    seen: set = set()
    for given in paths:
        for path in _files(given, "agent_data.json", _is_agent_data):
            _per_turn_file(path, report, seen)
    return report


def _per_turn_file(path: Path, report: ImportReport, seen: set) -> None:
    data = _load_json(path)
    worker, hit = path.parent.name, path.parent.parent.name  # ParlAI's layout: <hit>/<worker>/agent_data.json
    times = data.get("times") or {}
    duration = (times["task_end"] - times["task_start"]) if {"task_start", "task_end"} <= set(times) else None
    subtasks = data["outputs"]["final_data"]
    for position, subtask in enumerate(subtasks):
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
            kept = _bucket_ratings({k: v for k, v in annotations.items() if v is not None}, base,
                                   f"{path} subtask {index} turn {base['turn_index']}", report)
            report.kept += bool(kept)
            report.records += kept
