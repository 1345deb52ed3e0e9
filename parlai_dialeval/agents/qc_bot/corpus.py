"""Dialogue corpora for the offline bots: read once from a ParlAI teacher or a text/JSONL file.

A corpus is a list of dialogues, each a list of utterances (speakers alternate, first speaker
first). Responses are the second speaker's turns (the teacher's labels), or the only turn of a
one-turn dialogue.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.atomic import atomic_open

DEFAULT_TASK = "dialeval:chatterbot"


@dataclass(frozen=True)
class Corpus:
    source: str
    dialogues: list[list[str]]

    def responses(self) -> list[tuple[int, int]]:
        """(dialogue index, turn index) of every response turn."""
        out = []
        for d, turns in enumerate(self.dialogues):
            out += [(d, 0)] if len(turns) == 1 else [(d, t) for t in range(1, len(turns), 2)]
        return out

    def pairs(self) -> list[tuple[str, str, int]]:
        """(context: the turns before, joined by newlines; response; dialogue index)."""
        return [("\n".join(self.dialogues[d][:t]), self.dialogues[d][t], d) for d, t in self.responses()]


def load_corpus(task: str | None = None, path: str | None = None, datatype: str = "train") -> Corpus:
    """From ``path`` (text or JSONL) if given, else from the ParlAI teacher ``task`` (default
    ``dialeval:chatterbot``)."""
    if path:
        dialogues = _read_file(Path(path))
        source = str(path)
    else:
        task = task or DEFAULT_TASK
        dialogues = _read_teacher(task, datatype)
        source = f"task {task} ({datatype})"
    dialogues = [turns for turns in dialogues if any(t.strip() for t in turns)]
    if len(dialogues) < 2:
        raise DialevalError(f"{source}: the corpus needs at least 2 non-empty dialogues "
                            f"(a response and a different dialogue to distort it with), got {len(dialogues)}")
    return Corpus(source, dialogues)


def corpus_from_opt(opt, task_key: str, file_key: str) -> Corpus:
    """The corpus saved at ``opt['model_file']`` by the build script if there is one, else the
    one named by the ``task_key``/``file_key`` options."""
    model_file = opt.get("model_file")
    if model_file and Path(model_file).is_file():
        return read_saved(Path(model_file))
    return load_corpus(opt.get(task_key), opt.get(file_key))


def save(corpus: Corpus, path: Path) -> None:
    """Write the corpus as one JSON document (the offline bots' "model file")."""
    with atomic_open(path, "w", encoding="utf-8") as handle:
        json.dump({"source": corpus.source, "dialogues": corpus.dialogues}, handle)


def read_saved(path: Path) -> Corpus:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return Corpus(data["source"], data["dialogues"])
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise DataError(path, f"not a saved corpus ({error})",
                        expected='{"source": ..., "dialogues": [[...], ...]} written by build_offline_bots') from None


def _read_teacher(task: str, datatype: str) -> list[list[str]]:
    from parlai.core.agents import Agent
    from parlai.core.params import ParlaiParser
    from parlai.core.worlds import create_task

    class Listener(Agent):
        """Answers every turn with no text: the teacher then scores nothing (a reply, as RepeatLabelAgent's,
        has it compute F1 and BLEU for every turn of the corpus, importing nltk: about 0.5 s a launch)."""

        def act(self):
            return {"id": self.getID(), "episode_done": False}

    # Train data is shuffled unless ':ordered': one pass in file order keeps the corpus deterministic.
    datatype = f"{datatype}:ordered" if datatype == "train" else datatype
    opt = ParlaiParser(True, False).parse_args(["--task", task, "--datatype", datatype])
    world = create_task(opt, Listener(opt))
    dialogues, turns = [], []
    while not world.epoch_done():
        world.parley()
        act = world.get_acts()[0]
        labels = act.get("labels", act.get("eval_labels")) or []
        turns += [t for t in [act.get("text", "")] + list(labels[:1]) if t]
        if act.get("episode_done"):
            dialogues.append(turns)
            turns = []
    if turns:
        dialogues.append(turns)
    return dialogues


def _read_file(path: Path) -> list[list[str]]:
    """Text: one utterance per line, a blank line between dialogues. JSONL: one dialogue per line, a
    list of strings, or an object with ``dialogue`` (strings or {"text"}) or ParlAI Conversations'
    ``dialog`` (list of [{"text"}, ...] exchanges)."""
    if not path.is_file():
        raise DataError(path, "no such file", expected="a text file (one utterance per line, blank "
                        "line between dialogues) or a JSONL file (one dialogue per line)")
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if path.suffix in (".jsonl", ".json"):
        return [_json_dialogue(path, i, line) for i, line in enumerate(lines, 1) if line.strip()]
    dialogues, turns = [], []
    for line in lines + [""]:
        if line.strip():
            turns.append(line.strip())
        elif turns:
            dialogues.append(turns)
            turns = []
    return dialogues


def _json_dialogue(path: Path, line_no: int, line: str) -> list[str]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise DataError(path, f"not JSON ({error.msg})", line=line_no) from None
    if isinstance(value, dict) and "dialog" in value:
        value = [turn for exchange in value["dialog"] for turn in exchange]
    elif isinstance(value, dict):
        value = value.get("dialogue")
    if not isinstance(value, list):
        raise DataError(path, "no dialogue found", line=line_no,
                        expected='a list of utterances, {"dialogue": [...]} or {"dialog": [[...]]}',
                        got=line)
    turns = [t.get("text", "") if isinstance(t, dict) else t for t in value]
    if not all(isinstance(t, str) for t in turns):
        raise DataError(path, "an utterance is not a string", line=line_no, got=line)
    return [t for t in turns if t.strip()]
