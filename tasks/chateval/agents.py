"""``-t dialeval:chateval:SET``: ChatEval's evaluation prompt sets, read from ChatEval's own files.

Single-turn sets (one prompt per line; the label is the human reference response where ChatEval
has one): ``ncm`` (Neural Conversational Model, 200), ``dbdc`` (Dialogue Breakdown Detection, 200),
``twitter`` (200), ``opensubtitles`` (200, no reference). Multi-turn sets from the baseline
collection's CSVs (a Python-list cell of ``A:``/``B:`` turns per conversation, text = the turns one
per line, no label): ``esl2``, ``esl3``, ``movie2``, ``movie3`` (ESL dialogues / movie dialogues,
2 or 3 turns); identical conversations repeated across HITs are kept once (the count is logged).
``--chateval-datapath`` is the ``eval_sets`` folder; ``--chateval-prompts FILE`` reads a single
prompt file in the set's format instead. Prompt sets have no splits: every datatype sees all.
"""
from __future__ import annotations

import ast
import csv
import logging
import re
from pathlib import Path

from parlai.core.teachers import DialogTeacher

from parlai_dialeval.errors import DataError
from parlai_dialeval.shared_data import resolve

LOG = logging.getLogger(__name__)
APP, JSEDOC, BASELINE = ("chateval_application_2018_eval_data", "jsedoc_ChatEval_HEAD",
                         "baseline_collection_ESL_MD_prompts")
# set -> (prompt file, reference file or None), relative to the eval_sets folder
SINGLE_TURN = {
    "ncm": (f"{APP}/ncm/neural_conv_model_eval_source.txt", f"{APP}/ncm/neural_conv_model_eval_responses_human_1.txt"),
    "dbdc": (f"{APP}/dbdc/dbdc_eval_minus_CIC_200rand.txt",
             f"{JSEDOC}/dbdc/dbdc_eval_minus_CIC_200rand_responses_human_1.txt"),
    "twitter": (f"{APP}/twitter/twitter_eval_source.txt", f"{JSEDOC}/twitter/twitter_eval_responses.txt"),
    "opensubtitles": (f"{APP}/os/os_eval_source.txt", None),
}
MULTI_TURN = {"esl2": f"{BASELINE}/coverageesl2turnconvos.csv", "esl3": f"{BASELINE}/coverageesl3turnconvos.csv",
              "movie2": f"{BASELINE}/coveragemd2turnconvos.csv", "movie3": f"{BASELINE}/coveragemd3turnconvos.csv"}
SOURCE = ("https://github.com/chateval/application (data/eval_data), https://github.com/jsedoc/ChatEval and "
          "https://github.com/chateval/baseline-collection")
_SPEAKER = re.compile(r"^\s*(?:<b>)?\s*[AB]\s*:\s*(?:</b>)?\s*")
_TAG = re.compile(r"</?[a-z]+>")


def read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def parse_turns(cell: str, path: Path, row: int, field: str) -> list[str]:
    """A conversation cell: a Python list literal of "A: ..." turns. The 3-turn ESL file doubles
    some quotes and ends the cell with a stray quote; that is repaired before giving up."""
    for candidate in (cell, cell.replace('""', '"').rstrip().removesuffix('"')):
        try:
            turns = ast.literal_eval(candidate)
            break
        except (ValueError, SyntaxError):
            continue
    else:
        raise DataError(path, "not a list of turns", line=row, field=field, got=cell)
    return [_TAG.sub("", _SPEAKER.sub("", turn)).replace("<continued_utterance>", "").strip() for turn in turns]


def read_multi_turn(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    conversations, seen = [], set()
    for row_no, row in enumerate(rows, 2):
        for field, cell in row.items():
            if field.startswith("convo") and cell and cell.strip():
                turns = parse_turns(cell, path, row_no, field)
                if tuple(turns) not in seen:
                    seen.add(tuple(turns))
                    conversations.append(turns)
    repeated = sum(1 for row in rows for f, c in row.items() if f.startswith("convo") and c and c.strip())
    LOG.info(f"{path}: {len(conversations)} distinct conversations ({repeated - len(conversations)} repeats kept once)")
    return conversations


class ChatevalTeacher(DialogTeacher):
    set_name = "ncm"

    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("ChatEval prompt sets")
        group.add_argument("--chateval-datapath", type=str, default=None,
                           help="ChatEval eval_sets folder (default: $DIALEVAL_SHARED_DATA/chateval/eval_sets, "
                                "else ../shared/data/chateval/eval_sets beside the repository)")
        group.add_argument("--chateval-prompts", type=str, default=None,
                           help="read this prompt file (the set's format) instead of the set's file")
        return parser

    def __init__(self, opt, shared=None):
        opt = dict(opt)
        self.id = f"chateval:{self.set_name}"
        self.folder = None
        if opt.get("chateval_prompts"):
            opt["datafile"] = str(resolve(opt["chateval_prompts"], "", "ChatEval prompt file",
                                          "--chateval-prompts", SOURCE))
        else:
            self.folder = resolve(opt.get("chateval_datapath"), "chateval/eval_sets", "ChatEval eval_sets folder",
                                  "--chateval-datapath", SOURCE)
            relative = MULTI_TURN.get(self.set_name) or SINGLE_TURN[self.set_name][0]
            opt["datafile"] = str(self.folder / relative)
        super().__init__(opt, shared)

    def setup_data(self, path):
        path = Path(path)
        if self.set_name in MULTI_TURN:
            for turns in read_multi_turn(path):
                yield {"text": "\n".join(turns)}, True
            return
        prompts = read_lines(path)
        reference = SINGLE_TURN[self.set_name][1]
        labels = read_lines(self.folder / reference) if self.folder and reference else None
        if labels is not None and len(labels) != len(prompts):
            raise DataError(self.folder / reference, f"{len(labels)} references for {len(prompts)} prompts in {path}",
                            expected="one reference line per prompt line")
        for i, prompt in enumerate(prompts):
            yield ({"text": prompt, "labels": [labels[i]]} if labels else {"text": prompt}), True


def _teacher(name: str) -> type:
    return type(f"{name.capitalize()}Teacher", (ChatevalTeacher,), {"set_name": name})


NcmTeacher = _teacher("ncm")
DbdcTeacher = _teacher("dbdc")
TwitterTeacher = _teacher("twitter")
OpensubtitlesTeacher = _teacher("opensubtitles")
Esl2Teacher = _teacher("esl2")
Esl3Teacher = _teacher("esl3")
Movie2Teacher = _teacher("movie2")
Movie3Teacher = _teacher("movie3")
DefaultTeacher = NcmTeacher
