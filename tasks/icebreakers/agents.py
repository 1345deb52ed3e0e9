"""``-t dialeval:icebreakers``: ice-breaker topics drawn from model personas (Ji et al. 2022, s. 6).

In Ji et al.'s ice-breaker run one statement of the model's persona is prescribed to the worker as
the conversation's opening topic. One example per distinct persona: ``text`` is the persona
(``your persona: ...`` lines, ParlAI's convention), the label is the ice-breaker statement, chosen
at random with ``--icebreakers-seed`` (deterministic); ``persona`` lists the statements.

``--icebreakers-datapath``: Ji et al.'s ``HIT_detail`` folder (its ``*.txt`` files' ``Persona:``
blocks; ``None`` = a model without persona, skipped), or a text file with one persona per block
(one statement per line, blank line between personas). No splits: every datatype sees all.
"""
from __future__ import annotations

import random
from pathlib import Path

from parlai.core.teachers import DialogTeacher

from parlai_dialeval.shared_data import resolve

SOURCE = "https://github.com/TianboJi/Dialogue-Eval (folder data/dialogue_data/HIT_detail)"


def _blocks(lines: list[str], header: str | None) -> list[list[str]]:
    """Blocks of non-blank lines; with ``header``, only the block right after a ``header`` line."""
    blocks, block, inside = [], [], header is None
    for line in lines + [""]:
        line = line.strip()
        if header is not None and line == header:
            inside, block = True, []
        elif not line:
            if inside and block:
                blocks.append(block)
            block, inside = [], header is None
        elif inside:
            block.append(line)
    return blocks


def read_personas(path: Path) -> list[list[str]]:
    """Distinct personas, in file (name) order."""
    files = sorted(path.rglob("*.txt")) if path.is_dir() else [path]
    personas, seen = [], set()
    for file in files:
        with open(file, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        for block in _blocks(lines, "Persona:" if path.is_dir() else None):
            if block != ["None"] and tuple(block) not in seen:
                seen.add(tuple(block))
                personas.append(block)
    return personas


class IcebreakersTeacher(DialogTeacher):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("Ice-breaker topics")
        group.add_argument("--icebreakers-datapath", type=str, default=None,
                           help="HIT_detail folder or a persona text file (default: $DIALEVAL_SHARED_DATA/"
                                "ji2022/dialogue_data/HIT_detail, else ../shared/data/... beside the repository)")
        group.add_argument("--icebreakers-seed", type=int, default=0,
                           help="seed of the choice of each persona's ice-breaker statement")
        return parser

    def __init__(self, opt, shared=None):
        opt = dict(opt)
        self.id = "icebreakers"
        self.seed = opt.get("icebreakers_seed", 0)
        opt["datafile"] = str(resolve(opt.get("icebreakers_datapath"), "ji2022/dialogue_data/HIT_detail",
                                      "Model personas (Ji et al. 2022 HIT_detail)", "--icebreakers-datapath",
                                      SOURCE))
        super().__init__(opt, shared)

    def setup_data(self, path):
        rng = random.Random(self.seed)
        for persona in read_personas(Path(path)):
            text = "\n".join(f"your persona: {statement}" for statement in persona)
            yield {"text": text, "labels": [rng.choice(persona)], "persona": persona}, True


class DefaultTeacher(IcebreakersTeacher):
    pass
