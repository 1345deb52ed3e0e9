"""``-t dialeval:ji2022``: the live-chat conversations of Ji et al. (2022) with their ratings.

One episode per conversation (both free-topic runs, workers who passed and failed quality control):
each human turn is ``text`` and the model's reply its label; every example carries ``model`` (ParlAI
name, ``_p`` = with persona, ``qc`` = the quality-control bot), ``conversation_id`` and ``ratings``
({statement: [0-100 value as the worker entered it]}). Parsed by the ``ji2022-dialogues`` importer.
The data has no splits: every datatype sees all conversations.
"""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.tasks.canonical_teacher import CanonicalTeacher, chat_examples, load_records
from parlai_dialeval.shared_data import resolve

SOURCE = "https://github.com/TianboJi/Dialogue-Eval (folder data/dialogue_data)"


def data_folder(opt) -> Path:
    return resolve(opt.get("ji2022_datapath"), "ji2022/dialogue_data",
                   "Ji et al. (2022) dialogue data", "--ji2022-datapath", SOURCE)


class Ji2022Teacher(CanonicalTeacher):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("Ji et al. 2022 live chats")
        group.add_argument("--ji2022-datapath", type=str, default=None,
                           help="the dialogue_data folder or one {pass,fail}_free(runN).json file (default: "
                                "$DIALEVAL_SHARED_DATA/ji2022/dialogue_data, else ../shared/data/ji2022/"
                                "dialogue_data beside the repository)")
        return parser

    def __init__(self, opt, shared=None):
        self.id = "ji2022"
        super().__init__(opt, shared)

    @staticmethod
    def data_path(opt) -> Path:
        return data_folder(opt)

    def episodes(self, path: Path):
        conversations, ratings = load_records(path, "ji2022-dialogues")
        for conversation in conversations:
            yield chat_examples(conversation, ratings.get(conversation["id"], {}))


class DefaultTeacher(Ji2022Teacher):
    pass
