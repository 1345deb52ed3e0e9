"""Chatbots in crowdsourcing tasks: any ParlAI agent, configured per model, loaded once per launch.

Each model is a name and a ParlAI opt (``model``/``model_file`` plus any of that agent's options), or
a ParlAI flag string as in ParlAI's own ``model_opts.yaml`` (``"--model-file zoo:blender/blender_90M/model
--beam-size 10"``): a ``dialeval:`` agent (``openai_chat`` for OpenAI-compatible endpoints, ``hf_chat``
for local Hugging Face chat models), a zoo model already built under ParlAI's datapath, or any agent
class. ``BotPool`` loads each model once (an endpoint is pinged once, so a wrong URL, key or model name
stops the launch), hands every conversation its own copy made with ``create_agent_from_shared``
(weights and HTTP clients shared) and assigns models to HITs so every model gets the same number of
conversations, or the numbers of ParlAI's ``conversations_needed`` quotas, under concurrency.
"""
from __future__ import annotations

import random
import shlex
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from parlai_dialeval.crowdsourcing.platform import speed
from parlai_dialeval.crowdsourcing.platform.launch_log import say
from parlai_dialeval.errors import DialevalError

# Reply fields a task keeps in the bot turn's ``meta``: the QC bot's audit, the endpoint bots' costs and
# timing (latency is the total time; first_token_latency and tokens_per_second of streamed replies) and
# what the endpoint needed working around (quirks) or said apart from the reply (reasoning).
TURN_META_KEYS = ("qc_audit", "latency", "prompt_tokens", "completion_tokens", "finish_reason", "attempts",
                  "first_token_latency", "tokens_per_second", "streamed", "quirks", "reasoning")


def turn_meta(reply) -> dict:
    """What of a bot's reply goes into its turn's ``meta`` (empty when nothing does)."""
    if not isinstance(reply, Mapping):
        return {}
    return {key: reply[key] for key in TURN_META_KEYS if reply.get(key) is not None}


def flags_to_opt(flags: str, where: str = "flags") -> dict:
    """A ParlAI flag string (``--model-file F -m NAME --beam-size 10 --skip-generation False``) as an opt
    dict, without ParlAI's parse (which would resolve, and so download, zoo paths)."""
    from parlai.core.params import ParlaiParser

    aliases = {}
    for action in ParlaiParser(True, True)._actions:
        for option in action.option_strings:
            aliases[option.lstrip("-")] = action.dest
    tokens = shlex.split(flags)
    opt: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("-") or token in ("-", "--"):
            raise DialevalError(f"{where}: {token!r} is not a --flag (expected ParlAI flags like --model-file F)")
        name = token.lstrip("-")
        key = aliases.get(name, name.replace("-", "_"))
        if i + 1 < len(tokens) and not (tokens[i + 1].startswith("-") and len(tokens[i + 1]) > 1
                                        and not _is_number(tokens[i + 1])):
            opt[key], i = tokens[i + 1], i + 2
        else:
            opt[key], i = True, i + 1
    return opt


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def model_opt(name: str, spec) -> dict:
    """The ParlAI opt of one ``models`` entry: ``{"opt": {...}}`` or a ParlAI flag string."""
    if isinstance(spec, str):
        return flags_to_opt(spec, f"model {name!r}")
    return dict((spec or {}).get("opt") or {})


def read_model_opts(path: str) -> dict[str, dict]:
    """ParlAI's ``model_opts.yaml`` (model name -> flag string) as name -> {"opt": {...}}."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise DialevalError(f"{path}: cannot read the model_opts file ({error.strerror})") from error
    if not isinstance(data, dict):
        raise DialevalError(f"{path}: expected a mapping of model name -> ParlAI flag string")
    return {str(name): {"opt": flags_to_opt(str(flags), f"{path}: model {name!r}")} for name, flags in data.items()}


def parse_quotas(spec) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """ParlAI's ``conversations_needed_string``: ``"a:10,b:20"`` (per model, model_chat) or ``"a:b:100"``
    (per pair, pairwise_per_turn_eval), or a mapping. Returns (model quotas, pair quotas)."""
    if not spec:
        return {}, {}
    parts = spec.items() if isinstance(spec, Mapping) else [p.rsplit(":", 1) for p in str(spec).split(",") if p.strip()]
    models, pairs = {}, {}
    for part in parts:
        if len(part) != 2 or not str(part[1]).strip().isdigit():
            raise DialevalError(f"conversations_needed {spec!r}: expected entries like 'modelA:50' or "
                                f"'modelA:modelB:100', got {':'.join(map(str, part))!r}")
        name, count = str(part[0]).strip(), int(part[1])
        if ":" in name:
            a, b = name.split(":", 1)
            pairs[(a, b)] = count
        else:
            models[name] = count
    return models, pairs


def resolve_models(models: Mapping[str, Any] | None, model_opts: str | None = None,
                   conversations_needed=None) -> tuple[dict, dict, dict]:
    """The task's ``models`` merged with a ``model_opts.yaml``; flag strings parsed; with quotas, only the
    models that have one (as ParlAI loads only those). Returns (models, model quotas, pair quotas)."""
    from omegaconf import OmegaConf

    merged: dict[str, Any] = dict(read_model_opts(model_opts)) if model_opts else {}
    if OmegaConf.is_config(models):
        models = OmegaConf.to_container(models, resolve=True)
    for name, spec in (models or {}).items():
        merged[name] = {"opt": model_opt(name, spec)} if isinstance(spec, str) else dict(spec or {})
    quotas, pair_quotas = parse_quotas(conversations_needed)
    needed = set(quotas) | {m for pair in pair_quotas for m in pair}
    unknown = sorted(needed - set(merged))
    if unknown:
        raise DialevalError(f"conversations_needed names {unknown}, which are not among the models "
                            f"{sorted(merged)} (the task's models and model_opts file)")
    return merged, quotas, pair_quotas


def load_agent(name: str, opt: Mapping[str, Any], allow_zoo: bool = False):
    """One ParlAI agent from an opt mapping, with every option the agent declares at its default.

    ``zoo:`` paths must already be built under ParlAI's datapath unless ``allow_zoo``; an agent with a
    ``check_ready()`` method (endpoint bots) is asked once, so a bad endpoint stops here in one line.
    """
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    from parlai_dialeval.crowdsourcing.platform.zoo_check import resolve_zoo_paths

    opt = dict(opt)
    if not opt.get("model") and not opt.get("model_file"):
        raise DialevalError(f"bot {name!r}: its opt needs `model` or `model_file`")
    if not allow_zoo:
        opt = resolve_zoo_paths(opt, name)
    try:
        full_opt = ParlaiParser(True, True).parse_kwargs(**opt)
        agent = create_agent(full_opt, requireModelExists=bool(opt.get("model_file")))
    except DialevalError as error:
        raise DialevalError(f"bot {name!r}: {error}") from error
    except (Exception, SystemExit) as error:  # ParlAI reports bad opts through argparse's exit
        raise DialevalError(f"bot {name!r} could not be loaded from {opt}: {error}") from error
    if hasattr(agent, "check_ready"):
        try:
            agent.check_ready()
        except DialevalError as error:
            raise DialevalError(f"bot {name!r}: {error}") from error
    return agent


def server_threads(agents) -> int | None:
    """torch's CPU threads for every bot of a live-chat server, set once for the process (it is a
    process-wide setting: changed per reply it would race between conversations): the largest
    ``--cpu-threads`` a local bot asks for, else ``lm_loading.server_cpu_threads`` (the cores other
    processes leave free, less one for the server itself); such bots then leave the setting alone. None
    (torch's setting kept) where no bot runs a model here (endpoints) or ``OMP_NUM_THREADS`` chooses."""
    import torch

    from parlai_dialeval.metrics.lm_loading import server_cpu_threads

    agents = list(agents)
    asked = [agent.follow_process_threads() for agent in agents if hasattr(agent, "follow_process_threads")]
    # a TorchAgent exists only once its module is imported: importing it (about 1 s) to find none is waste
    torch_agent = sys.modules.get("parlai.core.torch_agent")
    if not asked and not (torch_agent and any(isinstance(agent, torch_agent.TorchAgent) for agent in agents)):
        return None
    threads = max(asked, default=0) or server_cpu_threads()
    if threads:
        torch.set_num_threads(threads)
    return threads


class BotPool:
    """Models loaded once; per-conversation copies; balanced, thread-safe assignment to HITs."""

    def __init__(self, models: Mapping[str, Any], qc_models: list[str] | None = None,
                 seed: int | None = None, allow_zoo: bool = False, model_opts: str | None = None,
                 conversations_needed=None):
        """``models``: name -> {"opt": {...ParlAI opt...}, "persona": [sentences] (optional), "slow_reply":
        seconds people wait for its reply before the launch warns (optional; endpoint bots are timed at load)} or a ParlAI
        flag string; ``model_opts``: ParlAI's model_opts.yaml adding more; ``conversations_needed``:
        ParlAI's quota string (``"a:10,b:20"`` or, for pairs, ``"a:b:100"``) or mapping."""
        self.qc_models = list(qc_models or [])
        models, self.quotas, self.pair_quotas = resolve_models(models, model_opts, conversations_needed)
        if self.quotas or self.pair_quotas:
            active = set(self.quotas) | {m for pair in self.pair_quotas for m in pair} | set(self.qc_models)
            models = {name: spec for name, spec in models.items() if name in active}
        if not models:
            raise DialevalError("no bots configured: give at least one model under `models`")
        missing = [name for name in self.qc_models if name not in models]
        if missing:
            raise DialevalError(f"qc_models {missing} are not among the configured models {sorted(models)}")
        self.personas = {name: list((spec or {}).get("persona") or []) for name, spec in models.items()}
        agents = {name: load_agent(name, (spec or {}).get("opt") or {}, allow_zoo) for name, spec in models.items()}
        for name, spec in models.items():  # people wait for these bots' replies: warn before they do
            speed.check(name, agents[name], float((spec or {}).get("slow_reply", speed.PATIENCE_SECONDS)), say)
        self.cpu_threads = server_threads(agents.values())
        self._shared = {name: agent.share() for name, agent in agents.items()}
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self.assigned = Counter({name: 0 for name in models})
        self.pairs_assigned = Counter({pair: 0 for pair in self.pair_quotas})

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

        With quotas, models (or, for two models, pairs) with the most conversations still needed come
        first. Reservations count as conversations as soon as a HIT starts, so concurrent HITs spread
        over the models; ``release`` gives back the ones whose conversation never completed.
        """
        candidates = self.qc_models if qc else self.genuine_models
        if not qc and self.quotas:
            candidates = [m for m in candidates if m in self.quotas]
        if not candidates:
            raise DialevalError("no quality-control model configured" if qc else "no genuine models configured")
        with self._lock:
            if count == 2 and not qc and self.pair_quotas:
                return self._reserve_pair()
            chosen: list[str] = []
            for _ in range(count):
                fresh = [m for m in candidates if m not in chosen] or candidates
                pick = self._least_used(fresh, lambda m: self.assigned[m] - self.quotas.get(m, 0))
                self.assigned[pick] += 1
                chosen.append(pick)
            return chosen

    def _least_used(self, items, used):
        low = min(used(item) for item in items)
        return self._rng.choice([item for item in items if used(item) == low])

    def _reserve_pair(self) -> list[str]:
        pair = self._least_used(list(self.pair_quotas), lambda p: self.pairs_assigned[p] - self.pair_quotas[p])
        self.pairs_assigned[pair] += 1
        for name in pair:
            self.assigned[name] += 1
        return list(pair)

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


def quota_args(cfg) -> dict:
    """ParlAI's model-chat keys under ``mephisto.blueprint`` (``model_opt_path``, ``conversations_needed_string``)
    as BotPool arguments, so a ParlAI model_chat / pairwise_per_turn_eval config's model lines work unchanged."""
    blueprint = cfg.mephisto.blueprint
    return {"model_opts": blueprint.get("model_opt_path") or None,
            "conversations_needed": blueprint.get("conversations_needed_string") or None}


class StreamToPage:
    """Shows a bot's reply on the worker's page as it arrives: ``with StreamToPage(send, bot): bot.act()``.

    ``send(task_data)`` updates the page; ``key`` names the field (``streaming``; PW-Turn, which shows
    two replies, uses ``streaming_left`` / ``streaming_right``). On entry it sends ``""`` (the page shows
    a typing indicator and blocks sending); then, for a bot that streams (it has ``on_text``:
    ``openai_chat``, ``hf_chat``, ``hf_lm``; any other ParlAI agent's ``act()`` only returns the
    finished reply, so its page keeps the typing indicator), the text so far at most every ``interval``
    seconds, so a fast model does not flood the socket, and on exit the text held back by the interval.
    The world's message with the whole reply sets the field to None (the page then shows the reply
    once, as a chat message; a page reloaded mid-stream, or one whose socket reconnected, gets the same
    end).
    """

    def __init__(self, send, bot, interval: float = 0.2, clock=None, key: str = "streaming"):
        import time

        self.send, self.bot, self.interval, self.key = send, bot, interval, key
        self.clock = clock or time.monotonic
        self.last = float("-inf")
        self.unsent = None  # text held back by the interval, sent when the reply ends

    def __call__(self, text: str) -> None:
        now = self.clock()
        self.unsent = text
        if now - self.last >= self.interval:
            self.last, self.unsent = now, None
            self.send({self.key: text})

    def __enter__(self) -> "StreamToPage":
        self.send({self.key: ""})
        if hasattr(self.bot, "on_text"):
            self.bot.on_text = self
        return self

    def __exit__(self, *exc) -> None:
        if getattr(self.bot, "on_text", None) is self:
            self.bot.on_text = None
        if self.unsent is not None and exc[0] is None:
            self.send({self.key: self.unsent})
