"""Chatbots in crowdsourcing tasks: any ParlAI agent, configured per model, loaded once per launch.

Each model is a name and a ParlAI opt (``model``/``model_file`` plus any of that agent's options):
a zoo model, a ``dialeval:`` agent, a Hugging Face model through ParlAI's ``hugging_face`` agents or
ParlAI's OpenAI-compatible chat agent all work the same. ``BotPool`` loads each model once and hands
every conversation its own copy made with ``create_agent_from_shared`` (weights shared); it also
assigns models to HITs so every model gets the same number of conversations, under concurrency.
"""
from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any, Mapping

from parlai_dialeval.errors import DialevalError

# Options ParlAI must never act on inside a task: downloading from parl.ai, interactive prompts.
_BLOCKED_PREFIXES = ("zoo:",)


def load_agent(name: str, opt: Mapping[str, Any], allow_zoo: bool = False):
    """One ParlAI agent from an opt mapping, with every option the agent declares at its default."""
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    opt = dict(opt)
    if not opt.get("model") and not opt.get("model_file"):
        raise DialevalError(f"bot {name!r}: its opt needs `model` or `model_file`")
    model_file = str(opt.get("model_file") or "")
    if model_file.startswith(_BLOCKED_PREFIXES) and not allow_zoo:
        raise DialevalError(f"bot {name!r}: model_file {model_file!r} would download from parl.ai; "
                            "download it yourself and give a local path (or set allow_zoo: true)")
    try:
        full_opt = ParlaiParser(True, True).parse_kwargs(**opt)
        return create_agent(full_opt, requireModelExists=bool(model_file))
    except DialevalError:
        raise
    except (Exception, SystemExit) as error:  # ParlAI reports bad opts through argparse's exit
        raise DialevalError(f"bot {name!r} could not be loaded from {opt}: {error}") from error


class BotPool:
    """Models loaded once; per-conversation copies; balanced, thread-safe assignment to HITs."""

    def __init__(self, models: Mapping[str, Mapping[str, Any]], qc_models: list[str] | None = None,
                 seed: int | None = None, allow_zoo: bool = False):
        """``models``: name -> {"opt": {...ParlAI opt...}, "persona": [sentences] (optional)}."""
        if not models:
            raise DialevalError("no bots configured: give at least one model under `models`")
        self.qc_models = list(qc_models or [])
        missing = [name for name in self.qc_models if name not in models]
        if missing:
            raise DialevalError(f"qc_models {missing} are not among the configured models {sorted(models)}")
        self.personas = {name: list((spec or {}).get("persona") or []) for name, spec in models.items()}
        self._shared = {name: load_agent(name, (spec or {}).get("opt") or {}, allow_zoo).share()
                        for name, spec in models.items()}
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self.assigned = Counter({name: 0 for name in models})

    @property
    def genuine_models(self) -> list[str]:
        return [name for name in self._shared if name not in self.qc_models]

    def new_bot(self, name: str):
        from parlai.core.agents import create_agent_from_shared

        bot = create_agent_from_shared(self._shared[name])
        bot.reset()
        return bot

    def reserve(self, count: int, qc: bool = False) -> list[str]:
        """``count`` distinct models (repeats only when fewer exist), least assigned first, ties random.

        Reservations count as conversations as soon as a HIT starts, so concurrent HITs spread over
        the models; ``release`` gives back the ones whose conversation never completed.
        """
        candidates = self.qc_models if qc else self.genuine_models
        if not candidates:
            raise DialevalError("no quality-control model configured" if qc else "no genuine models configured")
        with self._lock:
            chosen: list[str] = []
            for _ in range(count):
                fresh = [m for m in candidates if m not in chosen] or candidates
                low = min(self.assigned[m] for m in fresh)
                pick = self._rng.choice([m for m in fresh if self.assigned[m] == low])
                self.assigned[pick] += 1
                chosen.append(pick)
            return chosen

    def release(self, name: str) -> None:
        with self._lock:
            self.assigned[name] -= 1

    def shuffle(self, items: list) -> list:
        with self._lock:
            items = list(items)
            self._rng.shuffle(items)
            return items

    def randint(self, low: int, high: int) -> int:
        with self._lock:
            return self._rng.randint(low, high)

    def choice(self, items: list):
        with self._lock:
            return self._rng.choice(items)
