"""``parlai-conversations``: see the package docstring."""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.importers.formats.parlai_formats.common import (HUMAN, first_json_line, is_human, json_lines,
                                                                     load_json)
from parlai_dialeval.importers.registry import ImportReport, register_importer


def _is_conversations_line(obj) -> bool:
    return (isinstance(obj, dict) and "type" not in obj and isinstance(obj.get("dialog"), list)
            and all(isinstance(x, list) for x in obj["dialog"][:3]) and "dialogue_dicts" not in obj)


def _detect_conversations(path: Path) -> bool:
    return path.is_file() and path.suffix == ".jsonl" and _is_conversations_line(first_json_line(path))


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
    bot_ids = sorted({str(m.get("id")) for m in messages if not is_human(m.get("id", ""))})
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
            speaker = HUMAN if is_human(speaker_id) else (model or speaker_id or "bot")
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
        metadata = load_json(metadata_path) if metadata_path.is_file() else None
        model, partner = _model_from_metadata(path, metadata), _partner_from_metadata(metadata)
        self_chat = bool((metadata or {}).get("self_chat"))
        for where, line_number, obj in json_lines(path, report):
            if not _is_conversations_line(obj) or not obj["dialog"]:
                report.skip(where, "no 'dialog' list of exchanges")
                continue
            with report.reading(path, line_number):
                conv_id = str(obj.get("conversation_id") or obj.get("id") or f"{path.stem}:{line_number}")
                record = _conversation_from_dialog(conv_id, obj["dialog"], model, self_chat, obj.get("context"),
                                                  partner)
                if record["turns"]:
                    report.records.append(record)
                    report.kept += 1
                else:
                    report.skip(where, "dialog holds no messages")
    return report
