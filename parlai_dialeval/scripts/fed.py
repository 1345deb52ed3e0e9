"""dialeval fed: FED scores (Mehri & Eskenazi 2020) of every dialogue, as JSON Lines."""
from __future__ import annotations

import json
from pathlib import Path

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.atomic import atomic_open
from parlai_dialeval.distributed import add_shard_args, device_for, digest, init_world, run_parts, shard_folder
from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.metrics.fed import DEFAULT_MODEL, MODES, FedScorer, ScoreCache, join_turns
from parlai_dialeval.options import checked

FED_TEXT = "fed-text"


def read_fed_text(path: Path) -> list[dict]:
    """One conversation per line in the reference's format (turns joined by `` <|endoftext|> ``)."""
    items = []
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise DataError(path, "empty line", line=n, expected="one conversation per line")
        items.append({"id": f"{path.name}:{n}", "model": None, "level": None, "input": line})
    return items


def items_from_data(data, per_turn: bool, skipped: list | None = None) -> list[dict]:
    """One item per conversation (its turns joined), or with ``per_turn`` one per model turn (the
    conversation up to and including that turn: turn-level scoring of live chats). A conversation
    without turns is left out, with (id, reason) added to ``skipped``: an empty text would be scored."""
    items = []
    for row in data.conversations.itertuples(index=False):
        meta = row.meta if isinstance(row.meta, dict) else {}
        texts = [turn["text"] for turn in row.turns]
        model = row.models[0] if len(row.models) else None
        if not texts:
            if skipped is not None:
                skipped.append((row.id, "no turns to score"))
            continue
        if not per_turn:
            items.append({"id": row.id, "model": model, "level": meta.get("level"), "input": join_turns(texts)})
            continue
        for t, turn in enumerate(row.turns):
            if turn["speaker"] != "human":
                items.append({"id": row.id, "model": turn["speaker"], "level": "turn", "turn_index": t,
                              "input": join_turns(texts[: t + 1])})
    return items


@register_script("fed")
class Fed(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Score dialogues with the FED metric (see docs/metrics.md)")
        io = parser.add_argument_group("Input and output")
        io.add_argument("--data", nargs="+", required=True, metavar="PATH",
                        help="canonical JSON Lines, the FED dataset (fed_data.json), any importable "
                             "source, or with --data-format fed-text a text file of one conversation per line")
        io.add_argument("--data-format", "--from", dest="data_format", default=None, metavar="FORMAT",
                        help=f"force the input format: {FED_TEXT} or an importer name (detected when omitted)")
        io.add_argument("--out", required=True, metavar="FILE.jsonl",
                        help="JSON Lines output: one {id, model, level, [turn_index], input, scores} per input")
        fed = parser.add_argument_group("FED")
        fed.add_argument("--lm", default=DEFAULT_MODEL, metavar="NAME_OR_PATH",
                         help="Hugging Face causal LM (default %(default)s)")
        fed.add_argument("--mode", default="reference", choices=MODES,
                         help="reference: the reference implementation's numbers (mean NLL of the whole "
                              "text); conditional: the paper's equation (log-likelihood of the follow-up)")
        fed.add_argument("--qualities", default="reference", metavar="NAMES",
                         help="comma-separated quality names or groups: reference (the paper's 18, default), "
                              "turn, dialog, ji2022 (fun, robotic), all")
        fed.add_argument("--followups", default=None, metavar="FILE.json",
                         help="custom follow-up sets {quality: {positive: [...], negative: [...]}}")
        fed.add_argument("--per-turn", type="bool", default=False,
                         help="score every model turn with the dialogue up to it (turn-level scoring)")
        fed.add_argument("--device", default=None, help="torch device (default: cuda when present, else cpu)")
        fed.add_argument("--dtype", default="auto", choices=("auto", "float32", "float16", "bfloat16"))
        fed.add_argument("--batch-size", type=checked("--batch-size", "positive_int"), default=16,
                         help="dialogues per forward pass")
        fed.add_argument("--packing", type="bool", default=None,
                         help="oneDNN pre-packed linear layers on CPU (faster, same numbers to ~1e-6; any layer "
                              "shape failing its trial call stays plain); default: on unless $DIALEVAL_PACKING=0")
        fed.add_argument("--max-tokens", type=checked("--max-tokens", "positive_int"), default=2048,
                         help="bound on rows x tokens of one forward pass (memory)")
        fed.add_argument("--cache", default=None, metavar="FILE.jsonl",
                         help="persistent cache of scores keyed by model, mode and text")
        add_shard_args(parser)
        return parser

    def run(self):
        opt = self.opt
        world = init_world()
        items = self._items()
        scorer = FedScorer(opt["lm"], mode=opt["mode"], device=device_for(world, opt["device"]),
                           batch_size=opt["batch_size"], dtype=opt["dtype"], followups=opt["followups"],
                           qualities=[q.strip() for q in opt["qualities"].split(",") if q.strip()],
                           cache=ScoreCache(opt["cache"]) if opt["cache"] else None, progress=world.main,
                           max_tokens=opt["max_tokens"], packing=opt["packing"])

        def work(part):
            if not opt["cache"]:
                # A value kept from another part could differ in the last bits (other batch), and which
                # parts a process scored depends on the number of processes.
                scorer.cache.clear()
            scores = scorer.score([item["input"] for item in part])
            return [{k: v for k, v in item.items() if v is not None} | {"scores": score}
                    for item, score in zip(part, scores)]

        # Everything that changes a number: a shard folder made with other values is refused.
        identity = {"command": "fed", "lm": opt["lm"], "mode": opt["mode"], "dtype": opt["dtype"],
                    "device": scorer.model.device.type, "packed": scorer.packed, "batch_size": opt["batch_size"],
                    "max_tokens": opt["max_tokens"], "qualities": scorer.qualities,
                    "followups": {q: scorer.followups[q].positive + scorer.followups[q].negative
                                  for q in scorer.qualities},
                    "input": digest([item["input"] for item in items])}
        rows = run_parts(items, work, identity=identity, part_size=opt["part_size"],
                         folder=shard_folder(opt, world), world=world)
        if rows is None:
            return None
        with atomic_open(opt["out"]) as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
        print(f"wrote FED scores ({opt['mode']} mode, {opt['lm']}) of {len(items)} inputs to {opt['out']}")
        return [row["scores"] for row in rows]

    def _items(self) -> list[dict]:
        opt = self.opt
        if opt["data_format"] == FED_TEXT:
            items = [item for path in opt["data"] for item in read_fed_text(Path(path))]
        else:
            from parlai_dialeval.scripts.command_line import load_data

            skipped: list = []
            items = items_from_data(load_data(opt), opt["per_turn"], skipped)
            for conversation_id, why in skipped:
                print(f"skipped conversation {conversation_id}: {why}")
        if not items:
            raise DialevalError("no conversations to score in " + ", ".join(opt["data"]))
        return items
