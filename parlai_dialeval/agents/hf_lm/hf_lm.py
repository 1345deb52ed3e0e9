"""``-m dialeval:hf_lm``: any Hugging Face causal LM folder as a ParlAI agent, offline.

The prompt is the user's last message followed by ``<|sep|>`` when the tokenizer has that token
(models trained by ``build_offline_bots``), else by a newline; generation is greedy (deterministic)
up to ``--hf-max-new-tokens`` or the end-of-text token. With ``--model-file F`` the model is the
folder F itself (``build_offline_bots`` writes ``F`` and ``F.opt``). When someone watches (``on_text``,
as for ``hf_chat``: a crowdsourcing page) the text streams out as it is generated.
"""
from __future__ import annotations

import time
from pathlib import Path

import torch
from parlai.core.agents import Agent
from parlai.core.message import Message
from parlai.core.opt import Opt
from transformers import AutoModelForCausalLM, AutoTokenizer

from parlai_dialeval.agents.hf_chat.hf_chat import generate_streamed
from parlai_dialeval.agents.hf_lm.config import SEP
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.options import check_opt

DEFAULTS = {"hf_model_path": None, "hf_max_new_tokens": 40}


class HfLmAgent(Agent):
    on_text = None  # callback(text so far) while a reply is generated; None: the reply arrives whole

    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        group = parser.add_argument_group("Hugging Face causal LM bot")
        group.add_argument("--hf-model-path", type=str, default=None,
                           help="local folder of a causal LM and its tokenizer (default: --model-file)")
        group.add_argument("--hf-max-new-tokens", type=int, default=DEFAULTS["hf_max_new_tokens"],
                           help="longest reply, in tokens")
        return parser

    def __init__(self, opt, shared=None):
        opt = Opt({**DEFAULTS, **opt})  # create_agent(dict) gets no parser defaults
        check_opt(opt, {"hf_max_new_tokens": "positive_int"}, "hf_lm")
        super().__init__(opt, shared)
        self.id = "HfLm"
        if shared is None:
            path = opt.get("hf_model_path") or opt.get("model_file")
            if not path or not Path(path).is_dir():
                raise DialevalError(f"hf_lm: no model folder at {path!r}: run `dialeval build_offline_bots` "
                                    "(writes offline_bots/hf_lm/model in $DIALEVAL_HOME) or pass --hf-model-path FOLDER")
            # local_files_only: never reach the Hugging Face hub.
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
            self.lm = {"tokenizer": tokenizer, "model": model}
        else:
            self.lm = shared["lm"]

    def share(self):
        shared = super().share()
        shared["lm"] = self.lm
        return shared

    def respond_to(self, text: str) -> Message:
        tokenizer, model = self.lm["tokenizer"], self.lm["model"]
        separator = SEP if SEP in tokenizer.get_vocab() else "\n"
        limit = getattr(model.config, "n_positions", None) or getattr(model.config, "max_position_embeddings", 512)
        budget = max(1, limit - self.opt["hf_max_new_tokens"])
        ids = tokenizer.encode((text or "") + separator)[-budget:]
        inputs = torch.tensor([ids])
        settings = {"max_new_tokens": self.opt["hf_max_new_tokens"], "do_sample": False, "no_repeat_ngram_size": 3,
                    "eos_token_id": tokenizer.eos_token_id,
                    "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id}
        if self.on_text is not None:
            out, _ = generate_streamed(model, tokenizer, inputs, settings, self.on_text, time.monotonic())
        else:
            with torch.no_grad():
                out = model.generate(inputs, attention_mask=torch.ones_like(inputs), **settings)
        reply = tokenizer.decode(out[0, len(ids):], skip_special_tokens=True).strip()
        return Message({"id": self.id, "text": reply, "episode_done": False})

    def act(self):
        observation = self.observation or {}
        return self.respond_to(observation.get("text", ""))
