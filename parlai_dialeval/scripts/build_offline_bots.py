"""dialeval build_offline_bots: build and cache the offline bots (QC bot, TF-IDF retrieval, tiny LM).

Writes, under --out (default offline_bots/ in $DIALEVAL_HOME, see parlai_dialeval/home.py):
``qc_bot/model``, ``retrieval/model`` (the corpus, JSON), ``hf_lm/model/`` (a GPT-2 and its byte-level
BPE tokenizer, trained here on CPU), each with ParlAI's ``model.opt`` beside it, and
``quality.json`` (each bot scored on the corpus's held-out test split, all pairs and those with a
message never seen in training). A trained model whose ``build.json`` matches the corpus, settings
and training code version is reused (--force retrains).
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from pathlib import Path

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.agents.hf_lm.config import TrainConfig
from parlai_dialeval.agents.qc_bot.corpus import DEFAULT_TASK, Corpus, load_corpus, save
from parlai_dialeval.home import offline_bots_dir
from parlai_dialeval.options import checked
from parlai_dialeval.scripts.command_line import write_json

TRAINING_VERSION = 2  # bump when training code changes, so cached models are rebuilt


def message_pairs(corpus: Corpus) -> list[tuple[str, str]]:
    """(the turn answered, the response) for every response that answers something."""
    return [(context.split("\n")[-1], response) for context, response, _ in corpus.pairs() if context]


def build(out: Path, task: str = DEFAULT_TASK, config: TrainConfig = TrainConfig(), force: bool = False,
          evaluate: bool = True, eval_limit: int | None = None) -> dict:
    """Build all three bots under ``out``; returns {"paths", "training", "quality"}."""
    corpus = load_corpus(task, datatype="train")
    paths = {}
    for name, model, extra in [("qc_bot", "dialeval:qc_bot", {"qc_seed": 0, "qc_distort": True}),
                               ("retrieval", "dialeval:tfidf_retrieval", {"retrieval_match": "response"})]:
        save(corpus, out / name / "model")
        write_json({"model": model, **extra}, out / name / "model.opt")
        paths[name] = str(out / name / "model")

    lm_dir = out / "hf_lm" / "model"
    stamp = {"corpus_sha256": hashlib.sha256(json.dumps(corpus.dialogues).encode()).hexdigest(),
             "task": task, "config": asdict(config), "training_version": TRAINING_VERSION}
    stamp_file = out / "hf_lm" / "build.json"
    cached = (not force and stamp_file.is_file() and (lm_dir / "config.json").is_file()
              and json.loads(stamp_file.read_text())["stamp"] == stamp)
    if cached:
        training = json.loads(stamp_file.read_text())["training"] | {"cached": True}
    else:
        started = time.monotonic()
        from parlai_dialeval.agents.hf_lm.train import train  # loads transformers: only when training

        training = train(message_pairs(corpus), lm_dir, config)
        training["seconds"] = round(time.monotonic() - started, 1)
        write_json({"stamp": stamp, "training": training}, stamp_file)
    write_json({"model": "dialeval:hf_lm", "hf_max_new_tokens": 40}, out / "hf_lm" / "model.opt")
    paths["hf_lm"] = str(lm_dir)

    quality = None
    if evaluate:
        quality = measure(paths, load_corpus(task, datatype="test"), eval_limit, corpus)
        write_json(quality, out / "quality.json")
    return {"paths": paths, "training": training, "quality": quality}


def measure(paths: dict[str, str], test_corpus: Corpus, limit: int | None = None,
            train_corpus: Corpus | None = None) -> dict:
    """Scores on the test pairs ("all") and, given ``train_corpus``, on those whose message never
    occurs in training ("novel": nothing to look up or memorise). Fresh agents per subset."""
    from parlai.core.agents import create_agent_from_model_file

    from parlai_dialeval.agents.quality_levels import compare

    subsets = {"all": message_pairs(test_corpus)[:limit]}
    if train_corpus is not None:
        seen = {message.lower().strip() for message, _ in message_pairs(train_corpus)}
        subsets["novel"] = [pair for pair in subsets["all"] if pair[0].lower().strip() not in seen]
    result = {"test_source": test_corpus.source}
    for subset, pairs in subsets.items():
        agents = {name: create_agent_from_model_file(path) for name, path in paths.items()}
        scores = compare(agents, pairs)
        result[subset] = {"scores": scores}
        if {"qc_bot", "retrieval", "hf_lm"} <= scores.keys():
            result[subset]["expected_order_holds"] = all(
                scores["qc_bot"][m] < scores["retrieval"][m] < scores["hf_lm"][m] for m in ("f1", "tfidf_similarity"))
    return result


@register_script("build_offline_bots")
class BuildOfflineBots(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Build and cache the offline bots (QC bot, TF-IDF retrieval, "
                                            "a tiny GPT-2 trained on CPU) and measure their quality levels")
        parser.add_argument("--out", default=None,
                            help="folder for the bots (default: offline_bots/ in $DIALEVAL_HOME, "
                                 "~/.local/share/parlai_dialeval unless set)")
        parser.add_argument("--corpus-task", default=DEFAULT_TASK,
                            help="ParlAI teacher whose train split is the bots' corpus and whose test split "
                                 "measures them")
        parser.add_argument("--epochs", type=checked("--epochs", "positive_int"), default=TrainConfig.epochs,
                            help="LM training epochs")
        parser.add_argument("--max-steps", type=checked("--max-steps", "positive_int"), default=None,
                            help="stop LM training after this many steps")
        parser.add_argument("--force", type="bool", default=False, help="retrain even if a matching model is cached")
        parser.add_argument("--evaluate", type="bool", default=True,
                            help="score the bots on the test split (writes quality.json)")
        parser.add_argument("--eval-limit", type=checked("--eval-limit", "positive_int"), default=None,
                            help="score on at most this many test pairs")
        return parser

    def run(self):
        config = TrainConfig(epochs=self.opt["epochs"], max_steps=self.opt["max_steps"])
        result = build(Path(self.opt["out"] or offline_bots_dir()), self.opt["corpus_task"], config, self.opt["force"],
                       self.opt["evaluate"], self.opt["eval_limit"])
        for name, path in result["paths"].items():
            print(f"{name}: {path}")
        print(f"hf_lm training: {result['training']}")
        for subset in ("all", "novel"):
            if result["quality"] and subset in result["quality"]:
                part = result["quality"][subset]
                for name, scores in part["scores"].items():
                    print(f"{subset} test pairs, {name}: {scores}")
                holds = "yes" if part["expected_order_holds"] else "NO"
                print(f"{subset} test pairs: qc_bot < retrieval < hf_lm on both measures: {holds}")
        return result
