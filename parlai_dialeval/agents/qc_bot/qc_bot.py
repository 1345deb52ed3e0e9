"""``-m dialeval:qc_bot``: the degraded quality-control model (Ji et al. 2022, section 3.2, A.1).

Each response is a random response turn of the corpus's training dialogues, ignoring the user's
input, with a run of its words replaced by a run from a different dialogue (``distortion``). Every
reply carries ``qc_audit``: the source dialogue and turn, the original text, and what was replaced.
"""
from __future__ import annotations

import random

from parlai.core.agents import Agent
from parlai.core.message import Message
from parlai.core.opt import Opt

from parlai_dialeval.agents.qc_bot.corpus import DEFAULT_TASK, Corpus, corpus_from_opt
from parlai_dialeval.agents.qc_bot.distortion import distort

DEFAULTS = {"qc_task": DEFAULT_TASK, "qc_file": None, "qc_seed": 0, "qc_distort": True}


class QcBotAgent(Agent):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        group = parser.add_argument_group("Quality-control bot (Ji et al. 2022)")
        group.add_argument("--qc-task", type=str, default=DEFAULTS["qc_task"],
                           help="ParlAI teacher whose training dialogues supply the responses")
        group.add_argument("--qc-file", type=str, default=DEFAULTS["qc_file"],
                           help="text (one utterance per line, blank line between dialogues) or JSONL "
                                "(one dialogue per line) corpus; overrides --qc-task")
        group.add_argument("--qc-seed", type=int, default=DEFAULTS["qc_seed"],
                           help="random seed: the same seed and corpus give the same responses")
        group.add_argument("--qc-distort", type="bool", default=DEFAULTS["qc_distort"],
                           help="apply meaning distortion (False: random responses only)")
        return parser

    def __init__(self, opt, shared=None):
        opt = Opt({**DEFAULTS, **opt})  # create_agent(dict) gets no parser defaults
        super().__init__(opt, shared)
        self.id = "QcBot"
        if shared is None:
            corpus = corpus_from_opt(opt, "qc_task", "qc_file")
            self.shared_state = {"corpus": corpus, "responses": corpus.responses(), "copies": 0}
        else:
            self.shared_state = shared["qc_state"]
            self.shared_state["copies"] += 1
        # Each copy draws its own stream, reproducible from the seed and the copy's number.
        self.rng = random.Random(f"{opt['qc_seed']}:{self.shared_state['copies']}")

    @property
    def corpus(self) -> Corpus:
        return self.shared_state["corpus"]

    def share(self):
        shared = super().share()
        shared["qc_state"] = self.shared_state
        return shared

    def act(self) -> Message:
        dialogues = self.corpus.dialogues
        d, t = self.rng.choice(self.shared_state["responses"])
        original = dialogues[d][t]
        audit = {"source_dialogue": d, "source_turn": t, "original": original, "distorted": False}
        text = original
        if self.opt["qc_distort"]:
            donor_index = self.rng.randrange(len(dialogues) - 1)
            donor_index += donor_index >= d  # any dialogue but the source
            donor = " ".join(dialogues[donor_index]).split()
            words, change = distort(original.split(), donor, self.rng)
            text = " ".join(words)
            audit.update(distorted=True, donor_dialogue=donor_index, **change.to_dict())
        return Message({"id": self.id, "text": text, "episode_done": False, "qc_audit": audit})
