"""Bots for checking a task's failure handling: ``model: "parlai_dialeval.crowdsourcing.platform.diagnostic_bots:CrashingAgent"``.

CrashingAgent echoes the worker ``crash_after`` times, then raises, as a crashed model server would.
"""
from __future__ import annotations

from parlai.core.agents import Agent


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
