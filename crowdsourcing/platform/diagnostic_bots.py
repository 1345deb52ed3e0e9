"""Bots for checking a task and its participants: ``model: "parlai_dialeval.crowdsourcing.platform.diagnostic_bots:CrashingAgent"``.

CrashingAgent echoes the worker ``crash_after`` times, then raises, as a crashed model server would.
BrokenReplyAgent answers every message with one of the known-bad replies of gold items (platform/checks.py): the
arena's gold battles pit a model against it.
"""
from __future__ import annotations

import random

from parlai.core.agents import Agent

from parlai_dialeval.crowdsourcing.platform.checks import GOLD_REPLIES


class CrashingAgent(Agent):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        parser.add_argument_group("CrashingAgent").add_argument(
            "--crash-after", type=int, default=1, help="replies given before every later act raises")
        return parser

    def __init__(self, opt, shared=None):
        super().__init__(opt, shared)
        self.id = "CrashingAgent"
        self.replies = 0

    def act(self):
        if self.replies >= self.opt["crash_after"]:
            raise RuntimeError("CrashingAgent: simulated model failure")
        self.replies += 1
        return {"id": self.id, "text": (self.observation or {}).get("text", ""), "episode_done": False}


class BrokenReplyAgent(Agent):
    """Every reply a clearly broken line (``checks.GOLD_REPLIES``), drawn with ``seed``."""

    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        parser.add_argument_group("BrokenReplyAgent").add_argument(
            "--seed", type=int, default=None, help="seed of the lines drawn")
        return parser

    def __init__(self, opt, shared=None):
        super().__init__(opt, shared)
        self.id = "BrokenReplyAgent"
        self.rng = random.Random(opt.get("seed"))

    def act(self):
        return {"id": self.id, "text": self.rng.choice(GOLD_REPLIES), "episode_done": False}
