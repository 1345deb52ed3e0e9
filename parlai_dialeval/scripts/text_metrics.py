"""dialeval text_metrics: reference-free (and, given references, word-overlap) metrics per model, as CSV."""
from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import fmean

import pandas as pd
from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.metrics.coherence import semantic_similarity
from parlai_dialeval.metrics.distinct import distinct_n, tokenize
from parlai_dialeval.metrics.overlap import bleu, gleu, rouge_l
from parlai_dialeval.metrics.readability import flesch_reading_ease
from parlai_dialeval.scripts.command_line import add_data_args, load_data, write_csv

COLUMNS = ["model", "responses", "distinct1", "distinct2", "mean_length", "flesch", "coherence",
           "referenced", "bleu1", "bleu4", "rouge_l", "gleu"]


def model_responses(conversations: pd.DataFrame) -> list[dict]:
    """Every model turn: {conversation, turn_index, model, context (earlier turns), text}. A turn's
    speaker names its model; 'bot' (unknown) falls back to the conversation's single model."""
    responses = []
    for row in conversations.itertuples(index=False):
        texts = [turn["text"] for turn in row.turns]
        for t, turn in enumerate(row.turns):
            if turn["speaker"] == "human":
                continue
            model = turn["speaker"]
            if model == "bot" and len(row.models) == 1:
                model = row.models[0]
            responses.append({"conversation": row.id, "turn_index": t, "model": model,
                              "context": texts[:t], "text": turn["text"]})
    return responses


def read_references(path: Path) -> dict[tuple[str, int], list[str]]:
    """JSON Lines ``{"id": conversation id, "turn_index": int, "reference": str | [str, ...]}``."""
    references = {}
    expected = '{"id": str, "turn_index": int, "reference": str or [str, ...]}'
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(path, f"not valid JSON ({error.msg})", line=n) from None
        if not isinstance(entry, dict) or not {"id", "turn_index", "reference"} <= set(entry):
            raise DataError(path, "reference entry needs id, turn_index and reference", line=n,
                            expected=expected, got=line.strip())
        refs = [entry["reference"]] if isinstance(entry["reference"], str) else entry["reference"]
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) and r.strip() for r in refs):
            raise DataError(path, "reference must be a non-empty string or list of them", line=n,
                            field="reference", got=entry["reference"])
        if not isinstance(entry["turn_index"], int):
            raise DataError(path, "turn_index must be an integer", line=n, field="turn_index",
                            got=entry["turn_index"])
        key = (str(entry["id"]), entry["turn_index"])
        if key in references:
            raise DataError(path, "a second reference entry for the same turn", line=n, field="id",
                            got=f"{key[0]} turn {key[1]}")
        references[key] = refs
    return references


def model_metrics(responses: list[dict]) -> dict:
    """One model's row: corpus distinct-1/2, mean words per response, mean Flesch, mean coherence
    (responses with context), and BLEU-1/4, ROUGE-L, GLEU over the responses that have references."""
    texts = [r["text"] for r in responses]
    flesch = [f for f in map(flesch_reading_ease, texts) if not math.isnan(f)]
    with_context = [(r["context"], r["text"]) for r in responses if r["context"]]
    # nan where nothing in the texts could be encoded (emoji only): left out like responses without context
    coherence = [c for c in semantic_similarity(with_context) if not math.isnan(c)] if with_context else []
    row = {"responses": len(texts), "distinct1": distinct_n(texts, 1), "distinct2": distinct_n(texts, 2),
           "mean_length": fmean(len(tokenize(t)) for t in texts),
           "flesch": fmean(flesch) if flesch else math.nan,
           "coherence": fmean(coherence) if coherence else math.nan}
    referenced = [r for r in responses if r.get("references")]
    row["referenced"] = len(referenced)
    if referenced:
        hyps, refs = [r["text"] for r in referenced], [r["references"] for r in referenced]
        row |= {"bleu1": bleu(hyps, refs, 1), "bleu4": bleu(hyps, refs, 4), "rouge_l": rouge_l(hyps, refs),
                "gleu": gleu(hyps, refs)}
    return row


def text_metrics(responses: list[dict]) -> pd.DataFrame:
    """One row per model (sorted by name), columns ``COLUMNS``; overlap columns empty without references."""
    by_model: dict[str, list[dict]] = {}
    for response in responses:
        by_model.setdefault(response["model"], []).append(response)
    rows = [{"model": model} | model_metrics(items) for model, items in sorted(by_model.items())]
    return pd.DataFrame(rows, columns=COLUMNS)


@register_script("text_metrics")
class TextMetrics(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Distinct-n, length, Flesch, coherence and (with references) "
                                            "BLEU/ROUGE-L/GLEU per model (see docs/metrics.md)")
        add_data_args(parser, out="FILE.csv")
        parser.add_argument("--references", default=None, metavar="FILE.jsonl",
                            help='reference responses, one JSON object a line: {"id": conversation id, '
                                 '"turn_index": int, "reference": str or [str, ...]}')
        return parser

    def run(self):
        opt = self.opt
        data = load_data(opt)
        responses = model_responses(data.conversations)
        if not responses:
            raise DialevalError("no model turns to measure in " + ", ".join(opt["data"]))
        if opt["references"]:
            path = Path(opt["references"])
            references = read_references(path)
            by_key = {(r["conversation"], r["turn_index"]): r for r in responses}
            for key, refs in references.items():
                if key not in by_key:
                    raise DataError(path, "reference for no model turn of the data", field="id",
                                    got=f"{key[0]} turn {key[1]}")
                by_key[key]["references"] = refs
        table = text_metrics(responses)
        write_csv(table, opt["out"])
        print(f"wrote text metrics of {len(table)} models ({len(responses)} responses) to {opt['out']}")
        return table
