"""What a judge is asked: the humans' items of a protocol, each with the question wording the human task
shows, rendered as a prompt, and the judge's reply read back as an option or a value.

Items come from the human data: a pairwise protocol's items are its comparisons' (item, model pair,
turn, question), a rating protocol's its ratings' (conversation, turn, criterion, model) of its unit (a
per-turn protocol's ratings have a turn_index, a per-dialog one's none). Items that lack what the
protocol shows (responses, the conversation) are returned apart, with the reason.
"""
from __future__ import annotations

import math
import re
from collections import Counter

import pandas as pd

from parlai_dialeval.protocols import get_protocol
from parlai_dialeval.protocols.base import Protocol, ProtocolError, Question

RATING_KINDS = ("likert", "binary", "continuous")
# 0-100 sliders: a likelihood judge weighs these points (an endpoint judge may answer any number).
SLIDER_POINTS = 10


def _text(value) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def render_turns(turns) -> str:
    """``User: ...`` / ``Bot: ...`` lines (the worker is the user; any model speaker is the bot)."""
    lines = []
    for turn in turns:
        if isinstance(turn, dict):
            speaker = "User" if turn.get("speaker") == "human" else "Bot"
            lines.append(f"{speaker}: {str(turn.get('text', '')).strip()}")
        else:
            lines.append(str(turn).strip())
    return "\n".join(lines)


def _context(value) -> str | None:
    if isinstance(value, (list, tuple)):
        return render_turns(value) or None
    return _text(value)


def _questions(protocol: Protocol, asked) -> list[Question]:
    """The question a comparison answered (its wording), or all of the protocol's when unrecorded."""
    if _text(asked):
        return [protocol.question(asked)]
    return list(protocol.questions)


def _none(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def build_items(data, protocol_name: str) -> tuple[list[dict], Counter, list[dict]]:
    """(items, bad item counts by reason, bad item examples) of ``protocol_name`` in ``data``."""
    protocol = get_protocol(protocol_name)
    conversations = {row.id: row for row in data.conversations.itertuples(index=False)}
    if protocol.pairwise:
        return _pairwise_items(protocol, data.comparisons, conversations)
    return _rating_items(protocol, data.ratings, conversations)


def _pairwise_items(protocol, comparisons: pd.DataFrame, conversations):
    items, bad, examples, seen = [], Counter(), [], set()

    def reject(reason, where):
        bad[reason] += 1
        if len(examples) < 20:
            examples.append({"reason": reason, "item": where})

    for row in comparisons.itertuples(index=False):
        if _none(getattr(row, "automatic", None)) or _none(getattr(row, "onboarding", None)):
            continue  # decided without a worker, or a known-answer check: not an item
        turn = _none(row.turn_index)
        try:
            questions = _questions(protocol, _none(row.question))
        except ProtocolError:
            reject(f"question {protocol.name} does not ask", f"{row.item_id}: {row.question!r}")
            continue
        for question in questions:
            key = (row.item_id, tuple(sorted((row.model_a, row.model_b))), turn, question.id)
            if key in seen:
                continue
            seen.add(key)
            item = {"key": "|".join(map(str, key)), "protocol": protocol.name, "pairwise": True,
                    "question_id": question.id, "criterion": question.criterion, "question": question.wording,
                    "allow_tie": "tie" in protocol.meta.get("choices", ()), "item_id": row.item_id,
                    "model_a": row.model_a, "model_b": row.model_b, "turn_index": turn,
                    "study": _none(row.study)}
            if protocol.turns.unit == "dialog":
                conv_a, conv_b = _none(row.conversation_a), _none(row.conversation_b)
                if conv_a not in conversations or conv_b not in conversations:
                    reject("conversation not in the data", f"{row.item_id}: {conv_a}, {conv_b}")
                    continue
                item |= {"conversation_a": conv_a, "conversation_b": conv_b, "context": None,
                         "candidates": [render_turns(conversations[c].turns) for c in (conv_a, conv_b)]}
            else:
                context, a, b = _context(_none(row.context)), _text(row.response_a), _text(row.response_b)
                if a is None or b is None:
                    reject("no response text", row.item_id)
                    continue
                if context is None:
                    reject("no context", row.item_id)
                    continue
                item |= {"context": context, "candidates": [a, b], "context_raw": _none(row.context),
                         "response_a": row.response_a, "response_b": row.response_b}
            items.append(item)
    return items, bad, examples


def _rating_items(protocol, ratings: pd.DataFrame, conversations):
    items, bad, examples, seen = [], Counter(), [], set()
    criteria = {q.criterion: q for q in protocol.questions}
    for row in ratings.itertuples(index=False):
        question = criteria.get(row.criterion)
        if question is None:
            continue  # another protocol's criterion
        turn = _none(row.turn_index)
        if (protocol.turns.unit == "turn" and turn is None) or (protocol.turns.unit == "dialog" and turn is not None):
            continue  # another unit's rating of the same criterion (SM-Eval rates each turn and the dialog)
        key = (row.conversation_id, turn, row.criterion, row.model)
        if key in seen:
            continue
        seen.add(key)
        conversation = conversations.get(row.conversation_id)
        if conversation is None or not len(conversation.turns):
            bad["conversation not in the data"] += 1
            if len(examples) < 20:
                examples.append({"reason": "conversation not in the data", "item": row.conversation_id})
            continue
        turns = list(conversation.turns)
        item = {"key": "|".join(map(str, key)), "protocol": protocol.name, "pairwise": False,
                "question_id": question.id, "criterion": question.criterion, "question": question.wording,
                "kind": question.kind, "scale": list(question.scale), "conversation_id": row.conversation_id,
                "model": row.model, "turn_index": turn, "study": _none(row.study)}
        if protocol.turns.unit == "dialog":
            item |= {"context": render_turns(turns), "response": None}
        else:
            last = int(turn) if turn is not None else len(turns) - 1
            if last >= len(turns):
                bad["turn not in the conversation"] += 1
                continue
            item |= {"context": render_turns(turns[:last]) or None, "response": render_turns([turns[last]])}
        items.append(item)
    return items, bad, examples


def options(item: dict) -> list[str]:
    """What a likelihood judge chooses among: letters for pairwise items, scale points for ratings."""
    if item["pairwise"]:
        return ["A", "B", "tie"] if item["allow_tie"] else ["A", "B"]
    low, high = item["scale"]
    step = 1 if high - low <= 10 else (high - low) / SLIDER_POINTS
    return [_number(low + i * step) for i in range(int(round((high - low) / step)) + 1)]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def prompt(item: dict, first: int = 0) -> str:
    """The prompt for ``item``; for pairwise items ``first`` (0 or 1) is the candidate shown as A."""
    parts = []
    if item["pairwise"]:
        a, b = item["candidates"][first], item["candidates"][1 - first]
        if item.get("context") is not None:
            parts.append(f"Conversation:\n{item['context']}")
        label = "Conversation" if item.get("conversation_a") else "Response"
        parts += [f"{label} A:\n{a}", f"{label} B:\n{b}", f"Question: {item['question']}",
                  'Answer with "A" or "B"' + (' or "tie".' if item["allow_tie"] else ".")]
    else:
        if item.get("context"):
            parts.append(f"Conversation:\n{item['context']}")
        if item.get("response"):
            parts.append(f"Response to judge:\n{item['response']}")
        low, high = (_number(v) for v in item["scale"])
        if item["kind"] == "binary":
            parts += [f"Does this describe the response: {item['question']}?", "Answer 1 for yes or 0 for no."]
        elif item["kind"] == "continuous":
            parts += [f"Statement: {item['question']}",
                      f"How much do you agree? Answer with a whole number from {low} (strongly disagree) "
                      f"to {high} (strongly agree)."]
        else:
            parts += [f"Question: {item['question']}", f"Answer with a whole number from {low} to {high}."]
    return "\n\n".join(parts) + "\nAnswer:"


_LETTER = re.compile(r"(?<![\w'])([AB])(?![\w'])")
_NAMED = re.compile(r"\b(?:response|conversation|option|answer|speaker)\s*:?\s*([AB])\b", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def parse_reply(item: dict, text: str) -> tuple[str | float | None, str | None]:
    """(answer, None) or (None, reason): a pairwise answer is "A", "B" or "tie"; a rating a number.
    Nothing is guessed: a reply naming no option, both, or a number off the scale is a reason."""
    text = (text or "").strip()
    if item["pairwise"]:
        plain = text.strip(" .!\"'*").lower()
        if plain in ("a", "b"):
            return plain.upper(), None
        if plain == "tie" or re.search(r"\btie\b", text, re.IGNORECASE):
            return ("tie", None) if item["allow_tie"] else (None, "tie where the protocol has none")
        named = set(_NAMED.findall(text)) or set(_LETTER.findall(text))
        if len(named) == 1:
            return named.pop().upper(), None
        return None, "both options named" if named else "no option named"
    numbers = _NUMBER.findall(text)
    if not numbers:
        return None, "no number"
    value = float(numbers[0])
    low, high = item["scale"]
    if not low <= value <= high:
        return None, "outside the scale"
    if item["kind"] in ("likert", "binary") and not value.is_integer():
        return None, "not a scale point"
    return value, None
