"""``-m dialeval:fed``: scores every dialogue it observes with FED (Mehri & Eskenazi 2020).

It collects each observed message's ``text`` and its label (``labels`` or ``eval_labels``, the
response being judged) as the dialogue's turns; when an episode ends, it scores the dialogue and
returns the scores in its reply (``fed_scores``, and ``metrics`` as ``fed_<quality>``), so that
``dialeval eval_model -t TASK -m dialeval:fed`` reports the mean of every quality over episodes.
"""
from __future__ import annotations

from parlai.core.agents import Agent
from parlai.core.message import Message
from parlai.core.metrics import AverageMetric

from parlai_dialeval.metrics.fed import DEFAULT_MODEL, MODES, FedScorer, join_turns


class FedAgent(Agent):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        group = parser.add_argument_group("FED scorer")
        group.add_argument("--fed-lm", default=DEFAULT_MODEL, help="Hugging Face causal LM name or path")
        group.add_argument("--fed-mode", default="reference", choices=MODES, help="see docs/metrics.md")
        group.add_argument("--fed-qualities", default="reference",
                           help="comma-separated qualities or groups (reference, turn, dialog, ji2022, all)")
        group.add_argument("--fed-followups", default=None, help="custom follow-up sets (JSON file)")
        group.add_argument("--fed-device", default=None, help="torch device (default: cuda when present)")
        group.add_argument("--fed-batch-size", type=int, default=16)
        group.add_argument("--fed-packing", type="bool", default=None,
                           help="oneDNN pre-packed linear layers on CPU; default: on unless $DIALEVAL_PACKING=0")
        return parser

    def __init__(self, opt, shared=None):
        super().__init__(opt, shared)
        self.id = "fed"
        if shared is not None:
            self.scorer = shared["scorer"]
        else:
            self.scorer = FedScorer(opt.get("fed_lm", DEFAULT_MODEL), mode=opt.get("fed_mode", "reference"),
                                    device=opt.get("fed_device"), batch_size=opt.get("fed_batch_size", 16),
                                    followups=opt.get("fed_followups"),
                                    qualities=opt.get("fed_qualities", "reference").split(","),
                                    packing=opt.get("fed_packing"))
        self.turns: list[str] = []
        self.ended = False
        self.totals: dict[str, AverageMetric] = {}

    def share(self):
        shared = super().share()
        shared["scorer"] = self.scorer
        return shared

    def observe(self, observation):
        self.observation = observation
        if observation.get("text"):
            self.turns.append(observation["text"])
        label = observation.get("labels") or observation.get("eval_labels")
        if label:
            self.turns.append(label[0])
        self.ended = bool(observation.get("episode_done"))
        return observation

    def act(self):
        reply = Message({"id": self.id, "text": "", "episode_done": False})
        if self.ended and self.turns:
            scores = self.scorer.score([join_turns(self.turns)])[0]
            reply["fed_scores"] = scores
            reply["metrics"] = {f"fed_{q}": AverageMetric(v) for q, v in scores.items()}
            for key, metric in reply["metrics"].items():
                self.totals[key] = self.totals[key] + metric if key in self.totals else metric
            self.turns = []
        return reply

    def report(self):
        return dict(self.totals)

    def reset_metrics(self):
        self.totals = {}

    def reset(self):
        super().reset()
        self.turns = []
        self.ended = False
