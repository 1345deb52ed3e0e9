"""``-m dialeval:hf_chat``: any local Hugging Face causal LM with a chat template, as a ParlAI agent.

The model is a folder or a hub id already in the local cache (``local_files_only``: nothing is ever
downloaded). Each turn the conversation (see ``chat_history``: system prompt, persona/topic placement)
is rendered with the tokenizer's chat template (or ``--chat-template``), the oldest turns dropped
when it would not fit the model's context, and the reply generated greedily (``--temperature 0``)
or by sampling. Replies carry ``latency``, ``prompt_tokens``, ``completion_tokens`` and
``finish_reason`` (``stop`` at the end-of-sequence token, else ``length``), and when someone watches
(``on_text``, see ``chat_history``) the text streams out as it is generated (transformers'
``TextIteratorStreamer``), with ``first_token_latency`` and ``tokens_per_second``. Copies made with
``share()`` share the weights.
"""
from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from pathlib import Path

from parlai.core.opt import Opt

from parlai_dialeval.agents import chat_history
from parlai_dialeval.agents.chat_history import ChatHistoryAgent, Reply
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.options import check_opt

DTYPES = ("auto", "float32", "float16", "bfloat16")
DEFAULTS = {**chat_history.DEFAULTS, "hf_chat_model": None, "chat_template": None, "device": "cpu",
            "dtype": "auto", "max_new_tokens": 64, "temperature": 0.0, "top_p": 1.0,
            "repetition_penalty": 1.0, "generation_seed": None, "cpu_threads": 0}
LIMITS = {"max_new_tokens": "positive_int", "temperature": "non_negative", "top_p": "fraction",
          "repetition_penalty": "positive", "cpu_threads": "non_negative_int"}  # options.checked's kinds


def render_chat(tokenizer, messages: list[dict], template: str | None = None) -> str:
    """The prompt text of ``messages`` with the generation prompt added.

    transformers' ``apply_chat_template`` needs Jinja2 >= 3.1, but Mephisto 1.1.1's Flask 1.1.4
    pins Jinja2 < 3, so with the older Jinja2 the same template is rendered here with the variables
    and helpers transformers provides.
    """
    import jinja2

    template = template or tokenizer.chat_template
    if int(jinja2.__version__.split(".")[0]) >= 3:
        return tokenizer.apply_chat_template(messages, chat_template=template, tokenize=False,
                                             add_generation_prompt=True)
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda value, indent=None, ensure_ascii=False: json.dumps(
        value, indent=indent, ensure_ascii=ensure_ascii)
    env.globals.update(raise_exception=raise_exception, strftime_now=lambda fmt: datetime.now().strftime(fmt))
    return env.from_string(template).render(messages=messages, add_generation_prompt=True,
                                            **tokenizer.special_tokens_map)


def generate_streamed(model, tokenizer, inputs, settings: dict, on_text, start: float):
    """``model.generate`` in a thread, its reply's text so far handed to ``on_text`` as it grows
    (transformers' ``TextIteratorStreamer``); (output ids, seconds from ``start`` to the first text).
    ``hf_chat`` and ``hf_lm`` stream with it."""
    import torch
    from transformers import TextIteratorStreamer

    streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
    result: dict = {}

    def run():
        try:
            with torch.no_grad():
                result["out"] = model.generate(inputs, attention_mask=torch.ones_like(inputs), streamer=streamer,
                                               **settings)
        except BaseException as error:  # re-raised in the caller's thread
            result["error"] = error
            streamer.end()

    thread = threading.Thread(target=run, daemon=True, name="hf-generate")
    thread.start()
    text, first = "", None
    for piece in streamer:
        if piece:
            if first is None:
                first = time.monotonic() - start
            text += piece
            on_text(text.strip())
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["out"], first


class HfChatAgent(ChatHistoryAgent):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        group = parser.add_argument_group("Local Hugging Face chat model")
        group.add_argument("--hf-chat-model", type=str, default=None,
                           help="a local model folder, or a hub id already in the Hugging Face cache "
                                "(never downloaded)")
        group.add_argument("--chat-template", type=str, default=None,
                           help="a Jinja chat template (file path or the template itself) for tokenizers without one")
        chat_history.add_chat_args(group)
        group.add_argument("--device", type=str, default="cpu", help="torch device: cpu, cuda, cuda:1, mps ...")
        group.add_argument("--dtype", type=str, default="auto", choices=DTYPES,
                           help="weights' dtype (auto: as saved)")
        group.add_argument("--max-new-tokens", type=int, default=64, help="longest reply, in tokens")
        group.add_argument("--temperature", type=float, default=0.0, help="0: greedy (deterministic); > 0: sampling")
        group.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling (with --temperature > 0)")
        group.add_argument("--repetition-penalty", type=float, default=1.0, help="1.0: none")
        group.add_argument("--generation-seed", type=int, default=None, help="seed for sampling (None: random)")
        group.add_argument("--cpu-threads", type=int, default=0,
                           help="torch CPU threads for generating (0: the cores other processes leave free when "
                                "the model loads; in a live-chat server one core less, set once for all bots)")
        return parser

    def __init__(self, opt, shared=None):
        opt = Opt({**DEFAULTS, **opt})  # create_agent(dict) gets no parser defaults
        check_opt(opt, LIMITS, "hf_chat")
        super().__init__(opt, shared)
        self.id = "HfChat"
        self.lm = shared["lm"] if shared else self._load(opt)
        self.reset()

    @staticmethod
    def _load(opt) -> dict:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        name = opt.get("hf_chat_model") or opt.get("model_file")
        if not name:
            raise DialevalError("hf_chat needs --hf-chat-model (a local folder or a cached hub id)")
        if opt["dtype"] not in DTYPES:
            raise DialevalError(f"hf_chat: --dtype {opt['dtype']!r}: expected one of {', '.join(DTYPES)}")
        try:
            tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=True)
            dtype = "auto" if opt["dtype"] == "auto" else getattr(torch, opt["dtype"])
            model = AutoModelForCausalLM.from_pretrained(name, local_files_only=True, dtype=dtype)
        except OSError as error:
            raise DialevalError(f"hf_chat: no local model {name!r} (a folder, or a hub id already in the Hugging "
                                f"Face cache; nothing is downloaded): {str(error).splitlines()[0]}") from error
        template = opt.get("chat_template")
        if template and Path(template).is_file():
            template = Path(template).read_text(encoding="utf-8")
        if not (template or tokenizer.chat_template):
            raise DialevalError(f"hf_chat: the tokenizer of {name!r} has no chat template: give --chat-template "
                                "(or use dialeval:hf_lm for a plain language model)")
        from parlai_dialeval.metrics.lm_loading import free_cpu_threads, on_device

        model = on_device(model, opt["device"], "hf_chat: ")
        threads = opt.get("cpu_threads") or free_cpu_threads(opt["device"])  # before its own work adds to the load
        return {"tokenizer": tokenizer, "model": model, "template": template, "threads": threads}

    def follow_process_threads(self) -> int:
        """Stop setting torch's threads per reply (a live-chat server sets them once for the whole process:
        the setting is process-wide, so changing it per reply would race between conversations); the
        count this bot asked for with ``--cpu-threads`` (0: none)."""
        self.lm["threads"] = None
        return int(self.opt.get("cpu_threads") or 0)

    def share(self):
        shared = super().share()
        shared["lm"] = self.lm
        return shared

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        """Token ids of the rendered conversation, dropping the oldest turns until the reply fits."""
        tokenizer, model = self.lm["tokenizer"], self.lm["model"]
        limit = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", 2048)
        budget = limit - self.opt["max_new_tokens"]
        system = [m for m in messages[:1] if m["role"] == "system"]
        turns = messages[len(system):]
        while True:
            prompt = render_chat(tokenizer, system + turns, self.lm["template"])
            ids = tokenizer.encode(prompt, add_special_tokens=False)
            if len(ids) <= budget:
                return ids
            if len(turns) <= 1:
                raise DialevalError(f"hf_chat: the prompt needs {len(ids)} tokens, more than the model's {limit} "
                                    f"positions minus --max-new-tokens {self.opt['max_new_tokens']}")
            turns = turns[2:] if len(turns) > 2 else turns[1:]  # oldest user/assistant pair first

    def reply(self, messages: list[dict]) -> Reply:
        import torch

        from parlai_dialeval.metrics.lm_loading import torch_threads

        tokenizer, model = self.lm["tokenizer"], self.lm["model"]
        ids = self.prompt_ids(messages)
        sampling = self.opt["temperature"] > 0
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        settings = {"max_new_tokens": self.opt["max_new_tokens"], "do_sample": sampling,
                    "repetition_penalty": self.opt["repetition_penalty"], "pad_token_id": pad,
                    "eos_token_id": tokenizer.eos_token_id}
        if sampling:
            settings.update(temperature=self.opt["temperature"], top_p=self.opt["top_p"])
            if self.opt.get("generation_seed") is not None:
                torch.manual_seed(self.opt["generation_seed"])
        inputs = torch.tensor([ids], device=model.device)
        start = time.monotonic()
        first = None
        with torch_threads(self.lm.get("threads")):
            if self.on_text is None:
                with torch.no_grad():
                    out = model.generate(inputs, attention_mask=torch.ones_like(inputs), **settings)
            else:
                out, first = generate_streamed(model, tokenizer, inputs, settings, self.on_text, start)
        total = time.monotonic() - start
        new = out[0, len(ids):].tolist()
        finished = bool(new) and new[-1] == tokenizer.eos_token_id
        text = tokenizer.decode(new, skip_special_tokens=True).strip()
        span = total - (first or 0.0)
        return Reply(text, "stop" if finished else "length", len(ids), len(new), first_token_latency=first,
                     tokens_per_second=len(new) / span if new and span > 0 else None,
                     extra={"streamed": first is not None})
