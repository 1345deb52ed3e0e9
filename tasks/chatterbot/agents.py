"""``-t dialeval:chatterbot``: the English conversations of the ``chatterbot-corpus`` PyPI package.

A small default corpus (about 2,000 short conversations) that needs no download. Split by
conversation position: every 10th conversation (index % 10 == 8) is valid, the next (== 9) test,
the rest train. ``--chatterbot-datapath`` points to another folder of chatterbot YAML files.
"""
from __future__ import annotations

import functools
import logging
from pathlib import Path

import yaml
from parlai.core.teachers import DialogTeacher

from parlai_dialeval.errors import DataError
from parlai_dialeval.shared_data import resolve

LOG = logging.getLogger(__name__)


def default_folder() -> Path | None:
    try:
        import chatterbot_corpus
    except ImportError:
        return None
    return Path(chatterbot_corpus.__file__).parent / "data" / "english"


def read_conversations(folder: Path) -> list[list[str]]:
    """Every conversation of every *.yml file in ``folder``, files in name order."""
    files = sorted(folder.glob("*.yml"))
    if not files:
        raise DataError(folder, "no chatterbot *.yml files", expected="a chatterbot-corpus language folder")
    stamps = tuple((str(file), file.stat().st_mtime_ns, file.stat().st_size) for file in files)
    return [list(turns) for turns in _parsed(stamps)]


# A launch's bots each read the corpus (the QC bot, the retrieval bot: a teacher per split): parsed once per
# process while no file changes (name, mtime and size are the key).
@functools.lru_cache(maxsize=4)
def _parsed(stamps: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, ...], ...]:
    # libyaml's loader where PyYAML has it: the same data, about 10x faster than the pure-Python one
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = []
    for name, _, _ in stamps:
        file = Path(name)
        with open(file, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=loader) or {}
        for i, conversation in enumerate(data.get("conversations") or []):
            if not isinstance(conversation, list):
                # chatterbot-corpus 1.3.3 trivia.yml #13 is one string (a YAML indentation slip).
                LOG.warning(f"{file}: conversation {i} skipped: not a list of turns: {conversation!r:.60}")
                continue
            turns = tuple(str(turn).strip() for turn in conversation if turn is not None and str(turn).strip())
            if len(turns) >= 2:
                out.append(turns)
    return tuple(out)


def split_of(index: int) -> str:
    return {8: "valid", 9: "test"}.get(index % 10, "train")


class ChatterbotTeacher(DialogTeacher):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("chatterbot corpus")
        group.add_argument("--chatterbot-datapath", type=str, default=None,
                           help="folder of chatterbot *.yml files (default: the installed chatterbot-corpus "
                                "package's english folder, else $DIALEVAL_SHARED_DATA/chatterbot_corpus/english)")
        return parser

    def __init__(self, opt, shared=None):
        opt = dict(opt)
        self.split = opt["datatype"].split(":")[0]
        opt["datafile"] = str(self._folder(opt))
        self.id = "chatterbot"
        super().__init__(opt, shared)

    @staticmethod
    def _folder(opt) -> Path:
        explicit = opt.get("chatterbot_datapath")
        package = default_folder()
        if not explicit and package is not None and package.is_dir():
            explicit = package
        return resolve(explicit, "chatterbot_corpus/english", "the chatterbot English corpus",
                       "--chatterbot-datapath", "PyPI (pip install chatterbot-corpus==1.3.3)")

    def setup_data(self, path):
        for i, turns in enumerate(read_conversations(Path(path))):
            if split_of(i) != self.split:
                continue
            # ParlAI's convention: the first speaker's turn is text, the reply is the label.
            for j in range(0, len(turns) - 1, 2):
                yield {"text": turns[j], "labels": [turns[j + 1]]}, j == 0


class DefaultTeacher(ChatterbotTeacher):
    pass
