"""Importer ``arena``: Chatbot Arena battles as FastChat writes and LMSYS releases them.

Sources of the layout (read, not copied): FastChat's ``fastchat/serve/monitor/clean_battle_data.py``
(github.com/lm-sys/FastChat; one dict per battle: question_id, model_a, model_b, winner, judge,
conversation_a, conversation_b, turn, anony, language, tstamp; its ``simple`` mode drops question_id and
the conversations, and writes a JSON array) and the dataset card of ``lmsys/chatbot_arena_conversations``
on Hugging Face (the same fields, conversations as lists of {role, content}, plus openai_moderation and
toxic_chat_tag; Parquet). Files: a JSON array (``.json``), JSON Lines (``.jsonl``) or Parquet (``.parquet``).

Mapping (docs/pairwise_analysis.md, "Importer `arena`"): one ``comparison`` per battle, worker =
``judge``, item = ``question_id`` (or ``<file>#<n>`` where the simple mode dropped it), submit time from
``tstamp`` (certify bets in that order). ``winner`` model_a / model_b / tie -> a / b / tie; ``tie (bothbad)``
is kept as a tie (as FastChat's own Bradley-Terry and Elo count it) with ``meta.bothbad`` true, so it can
be told apart. Where the conversations are kept, each side becomes a ``conversation`` record (id
``<question_id>/a`` and ``/b``, or ``<question_id>/<judge>/a`` and ``/b`` for a later judge of the same
question; speakers ``human`` and the model) that the comparison points at, so the unit of judgement is the
whole dialogue; a one-turn battle also carries its prompt and both replies as
``context``/``response_a``/``response_b``. Without conversations the unit is the response.
Skipped with a reason: a battle missing a model, the winner or the judge, a model against itself, a
message without text (null or blank), an empty conversation, the same judge's second vote on one
question. Anything of the wrong type or too large stops with one line naming the file, the record and
the field.
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from parlai_dialeval.errors import DataError
from parlai_dialeval.importers.registry import ImportReport, register_importer

FORMAT = "arena"
STUDY_PREFIX = "chatbot-arena/"
QUESTION = "Which model's answer is better? (Chatbot Arena vote)"
WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie"}
REQUIRED = ("model_a", "model_b", "winner", "judge")
SPEAKERS = {"user": "human"}  # "assistant" becomes the model's name
# Bounds on what one battle may hold: far above any real battle, low enough that a hostile file is
# refused with a line rather than filling memory.
MAX_NAME = 256  # model, judge, question id, language
MAX_TEXT = 200_000  # characters of one message
MAX_MESSAGES = 500  # messages of one conversation
# Kept verbatim in each comparison's meta (scalars, or small dicts for the moderation tags).
META_FIELDS = ("anony", "language", "turn", "tstamp", "openai_moderation", "toxic_chat_tag")
SUFFIXES = (".json", ".jsonl", ".parquet")


def detect(path: Path) -> bool:
    if not path.is_file() or path.suffix not in SUFFIXES:
        return False
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            names = set(pq.read_schema(path).names)
        except Exception:  # not a Parquet file at all: some other importer's, or none
            return False
        return set(REQUIRED[:3]) <= names
    with open(path, encoding="utf-8", errors="replace") as handle:
        head = handle.read(65536)
    return head.lstrip()[:1] in ("[", "{") and '"model_a"' in head and '"winner"' in head and '"choice"' not in head


def battles(path: Path):
    """(where, record) for every battle of a file, whatever its container."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        number = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=10_000):
            for record in batch.to_pylist():
                number += 1
                yield f"row {number}", record
        return
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    yield number, _json(path, line, number)
        return
    with open(path, encoding="utf-8") as handle:
        data = _json(path, handle.read(), None)
    if not isinstance(data, list):
        raise DataError(path, "not a list of battles", expected="a JSON array of battle objects (clean_battle_data.py)",
                        got=type(data).__name__)
    for number, record in enumerate(data, 1):
        yield f"battle {number}", record


def _json(path, text: str, line):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(path, f"not valid JSON ({error.msg})", line=line if line is not None else error.lineno) from None


def _text(path, where, field: str, value, limit: int = MAX_NAME) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DataError(path, "not a non-empty string", line=where, field=field, expected="a string", got=value)
    if len(value) > limit:
        raise DataError(path, f"too long ({len(value):,} characters)", line=where, field=field,
                        expected=f"at most {limit:,} characters")
    return value


def turns(path, where, field: str, messages, model: str) -> list[dict] | None:
    """A conversation's role/content messages as canonical turns; None when a message has no text
    (a failed reply in Arena's logs: null, or blank), which the caller skips with a reason."""
    if not isinstance(messages, list):
        raise DataError(path, "not a list of messages", line=where, field=field, expected="[{role, content}, ...]",
                        got=messages)
    if len(messages) > MAX_MESSAGES:
        raise DataError(path, f"too many messages ({len(messages):,})", line=where, field=field,
                        expected=f"at most {MAX_MESSAGES}")
    out = []
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise DataError(path, f"message {number} unreadable", line=where, field=f"{field}[{number}].role",
                            expected="{role: user|assistant, content}", got=message)
        if message.get("content") is None:
            return None
        text = message["content"]
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            raise DataError(path, "unreadable message text", line=where, field=f"{field}[{number}].content",
                            expected=f"a string of at most {MAX_TEXT:,} characters",
                            got=text if not isinstance(text, str) else f"{len(text):,} characters")
        if not text.strip():
            return None
        out.append({"speaker": SPEAKERS.get(message["role"], model), "text": text})
    return out


def convert(path: Path, where, battle, study: str, report: ImportReport, seen: set,
            conversation_ids: set) -> None:
    if not isinstance(battle, dict):
        raise DataError(path, "a battle is not an object", line=where, expected="{model_a, model_b, winner, judge, ...}",
                        got=battle)
    missing = [key for key in REQUIRED if battle.get(key) is None]
    if missing:
        report.skip(f"{path} {where}", f"missing {', '.join(missing)}")
        return
    model_a, model_b, judge = (_text(path, where, key, battle[key]) for key in ("model_a", "model_b", "judge"))
    winner = battle["winner"]
    if not isinstance(winner, str) or winner not in WINNERS:
        raise DataError(path, "unknown winner", line=where, field="winner", expected=" | ".join(WINNERS), got=winner)
    if model_a == model_b:
        report.skip(f"{path} {where}", f"a model against itself ({model_a})")
        return
    question_id = battle.get("question_id")
    item = _text(path, where, "question_id", question_id) if question_id is not None else f"{path.name}#{where}"
    if (item, judge) in seen:
        report.skip(f"{path} {where}", f"{judge} voted on question {item} before (the first vote is kept)")
        return
    meta = {key: battle[key] for key in META_FIELDS if battle.get(key) is not None}
    tstamp = battle.get("tstamp")
    if tstamp is not None:
        if type(tstamp) not in (int, float):
            raise DataError(path, "not a number", line=where, field="tstamp", expected="seconds since 1970", got=tstamp)
        try:
            meta["submit_time"] = datetime.datetime.fromtimestamp(tstamp, datetime.timezone.utc).isoformat()
        except (ValueError, OverflowError, OSError):  # NaN, infinity, or outside the years datetime holds
            raise DataError(path, "not a usable time", line=where, field="tstamp",
                            expected="seconds since 1970 within years 1-9999", got=tstamp) from None
    if winner == "tie (bothbad)":
        meta["bothbad"] = True
    comparison = {"type": "comparison", "study": study, "item_id": item, "worker_id": judge, "model_a": model_a,
                  "model_b": model_b, "choice": WINNERS[winner], "question": QUESTION, "meta": meta}
    conversations = []
    if battle.get("conversation_a") is not None and battle.get("conversation_b") is not None:
        sides = [turns(path, where, f"conversation_{side}", battle[f"conversation_{side}"], model)
                 for side, model in (("a", model_a), ("b", model_b))]
        if None in sides:
            report.skip(f"{path} {where}", "a message without text (a failed reply)")
            return
        if not sides[0] or not sides[1]:
            report.skip(f"{path} {where}", "an empty conversation (no messages to judge)")
            return
        # Each judge chatted on their own, so a question two judges voted on holds two pairs of
        # conversations: the later ones are named after their judge to keep ids unique.
        prefix = f"{item}/{judge}" if f"{item}/a" in conversation_ids else item
        for side, model, side_turns in (("a", model_a, sides[0]), ("b", model_b, sides[1])):
            conversations.append({"type": "conversation", "study": study, "id": f"{prefix}/{side}",
                                  "models": [model], "worker_id": judge, "task": "chatbot_arena",
                                  "turns": side_turns})
            comparison[f"conversation_{side}"] = f"{prefix}/{side}"
            conversation_ids.add(f"{prefix}/{side}")
        if _one_turn(sides[0]) and _one_turn(sides[1]) and sides[0][0]["text"] == sides[1][0]["text"]:
            comparison.update(context=sides[0][0]["text"], response_a=sides[0][1]["text"],
                              response_b=sides[1][1]["text"])
    seen.add((item, judge))
    report.records += conversations + [comparison]
    report.kept += 1


def _one_turn(side: list[dict]) -> bool:
    return len(side) == 2 and side[0]["speaker"] == "human" and side[1]["speaker"] != "human"


@register_importer(FORMAT, detect=detect,
                   help="Chatbot Arena battles (FastChat clean_battle_data.py output or the released "
                        "chatbot_arena_conversations): JSON array, JSON Lines or Parquet")
def import_arena(paths) -> ImportReport:
    report = ImportReport(FORMAT)
    for path in map(Path, paths):
        if not path.is_file() or path.suffix not in SUFFIXES:
            raise DataError(path, "not an Arena battle file", expected="a .json, .jsonl or .parquet file")
        study = STUDY_PREFIX + path.stem
        report.records.append({"type": "study", "name": study,
                               "description": f"Chatbot Arena battles from {path.name}: one vote per battle by an "
                                             "Arena user on two anonymous models' answers; 'tie (bothbad)' kept as a "
                                             "tie with meta.bothbad"})
        seen: set = set()
        conversation_ids: set = set()
        for where, battle in battles(path):
            report.read += 1
            with report.reading(path, where):
                convert(path, where, battle, study, report, seen, conversation_ids)
    return report
