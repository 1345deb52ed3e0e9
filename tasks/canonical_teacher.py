"""A ParlAI teacher over canonical records (``docs/data_model.md``) produced by an importer.

Each conversation becomes one episode. ``mode="chat"``: one example per human turn, the model's
reply as the label (ParlAI's usual dialogue teacher). ``mode="item"``: one example per conversation,
the whole conversation as text and a rating as the label (an annotated item, e.g. FED). Every example
carries ``conversation_id``, ``model`` and ``ratings`` ({criterion: [values]}), so nothing the
annotators said is lost.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from statistics import mean

from parlai.core.teachers import DialogTeacher

from parlai_dialeval.importers import import_paths


def load_records(path: Path, fmt: str) -> tuple[list[dict], dict[str, dict[str, list]]]:
    """Conversations (import order) and, per conversation id, {criterion: [rating values]}."""
    report = import_paths([path], fmt)
    conversations = [r for r in report.records if r["type"] == "conversation"]
    ratings: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for record in report.records:
        if record["type"] == "rating":
            ratings[record["conversation_id"]][record["criterion"]].append(record["value"])
    return conversations, {cid: dict(by_criterion) for cid, by_criterion in ratings.items()}


def format_turns(turns: list[dict]) -> str:
    return "\n".join(f"{turn['speaker']}: {turn['text']}" for turn in turns)


def chat_examples(conversation: dict, ratings: dict) -> list[dict]:
    """(human turn, model reply) examples; a reply with no human turn before it is prefixed to the
    next text, as ParlAI teachers do with a bot-first opening."""
    extra = {"conversation_id": conversation["id"], "model": conversation["models"][0], "ratings": ratings}
    examples, pending = [], []
    for turn in conversation["turns"]:
        if turn["speaker"] == "human":
            pending.append(turn["text"])
        elif pending:
            examples.append({"text": "\n".join(pending), "labels": [turn["text"]], **extra})
            pending = []
        else:
            pending.append(turn["text"])
    if pending:
        examples.append({"text": "\n".join(pending), **extra})
    return examples


def item_example(conversation: dict, ratings: dict, criterion: str, response_is_last: bool) -> dict:
    """One annotated item: the conversation as text (for a rated response, its last turn, also
    given as ``response``), the mean of ``criterion``'s ratings as the label."""
    turns = conversation["turns"]
    values = [v for v in ratings.get(criterion, []) if v is not None]
    example = {"text": format_turns(turns), "conversation_id": conversation["id"],
               "model": conversation["models"][0], "ratings": ratings}
    if response_is_last:
        example["response"] = turns[-1]["text"]
    if values:
        example["labels"] = [f"{mean(values):.2f}"]
    return example


class CanonicalTeacher(DialogTeacher):
    """Subclasses set ``self.id`` and implement ``data_path(opt)`` and ``episodes(path)``."""

    def __init__(self, opt, shared=None):
        opt = dict(opt)
        opt["datafile"] = str(self.data_path(opt))
        super().__init__(opt, shared)

    def setup_data(self, path):
        for episode in self.episodes(Path(path)):
            for i, example in enumerate(episode):
                yield example, i == 0
