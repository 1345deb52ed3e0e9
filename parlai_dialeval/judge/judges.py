"""Judges: something that answers a prompt. ``lm:PATH`` (a local causal LM that picks the option it finds
most likely), ``hf:PATH`` (a local chat model through ``dialeval:hf_chat``), ``openai:MODEL`` (any OpenAI-compatible endpoint, through the platform's
``dialeval:openai_chat`` client) and ``script:FILE.json`` (replies you write, for tests and dry runs).

The local judges (``lm:``, ``hf:``) answer many prompts at once (``ask_batch``): one copy of the
model, prompts of similar length batched (left-padded greedy generation for ``hf:``, right-padded
scoring for ``lm:``), as many rows at once as fit in a quarter of the free memory (``batch_size``;
``--judge-batch-size`` overrides). Their answers are those of asking one prompt at a time
(benchmarks/bench_judge_batch.py checks it on every prompt it times)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from parlai_dialeval.errors import DataError, DialevalError


@dataclass
class Reply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


def batch_size_from_memory(model, tokens_per_row: int, logits_per_row: int, cap: int = 64) -> int:
    """Rows whose key/value cache (every layer, every token) and logits fit in a quarter of the memory
    free on the model's device; at least 1. Counts full-width keys and values, so models that share
    them between heads (grouped-query attention) get a safe underestimate."""
    import psutil
    import torch

    parameter = next(model.parameters())
    config = model.config
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None) or 12
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None) or 768
    vocab = getattr(config, "vocab_size", None) or 50000
    per_row = (tokens_per_row * 2 * layers * hidden + logits_per_row * vocab) * parameter.element_size()
    if parameter.device.type == "cuda":
        free = torch.cuda.mem_get_info(parameter.device)[0]
    else:
        free = psutil.virtual_memory().available
    return int(max(1, min(cap, free // 4 // max(1, per_row))))


class LikelihoodJudge:
    """Reads the option whose tokens the LM finds most likely after the prompt (summed log-probability).
    Always answers one of the options, so it never gives a bad reply. Batched (``ask_batch``)."""

    concurrency = 1

    def __init__(self, path: str, device=None, dtype=None, batch_size: int | None = None):
        from parlai_dialeval.metrics.lm_loading import load_causal_lm

        self.name = f"lm:{Path(path).name or path}"
        self.model, self.tokenizer = load_causal_lm(path, device, dtype)
        self.batch_size = batch_size

    def _texts(self, prompt: str, options: list[str]) -> tuple[list[list[int]], int]:
        context = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        # Options are tokenized apart and appended, so every option follows the same prompt tokens.
        return [context + self.tokenizer(" " + o, add_special_tokens=False)["input_ids"] for o in options], len(context)

    def ask(self, prompt: str, options: list[str]) -> Reply:
        return self.ask_batch([(prompt, options)], batch_size=1)[0]

    def ask_batch(self, questions: list[tuple[str, list[str]]], batch_size: int | None = None) -> list[Reply]:
        from parlai_dialeval.metrics.fed_lm import PrefixLM

        groups, starts = [], []
        for prompt, opts in questions:
            texts, start = self._texts(prompt, opts)
            groups.append(texts)
            starts.append([start] * len(texts))
        width = max(len(t) for group in groups for t in group)
        rows = batch_size or self.batch_size or batch_size_from_memory(self.model, width, width)
        # Judge prompts share their instructions, so PrefixLM's chaining of shared prefixes (one group at
        # a time) is switched off: groups run side by side in batches of ``rows``.
        lm = PrefixLM(self.model, batch_size=rows, max_tokens=rows * width, min_shared=10 ** 9, prefix_losses=False)
        replies = []
        for (prompt, opts), group, losses in zip(questions, groups, lm.score(groups, starts)):
            best = min(range(len(opts)), key=lambda i: losses[i].tail)
            replies.append(Reply(opts[best], prompt_tokens=sum(len(t) for t in group)))
        return replies


class ChatJudge:
    """An OpenAI-compatible chat endpoint; thread-safe, so ``concurrency`` requests run at once."""

    def __init__(self, model: str, base_url: str, api_key_env: str = "", max_tokens: int = 20,
                 concurrency: int = 4, timeout: float = 60.0, system: str | None = None):
        from parlai_dialeval.agents.openai_chat.client import ChatEndpoint, EndpointSettings

        if not base_url:
            raise DialevalError("an openai: judge needs --base-url (the endpoint's /v1 address)")
        self.name = f"openai:{model}"
        self.concurrency = max(1, concurrency)
        self.system = system
        # a judge's few tokens gain nothing from streaming: one JSON reply per prompt
        self.endpoint = ChatEndpoint(EndpointSettings(base_url, model, api_key_env=api_key_env, timeout=timeout,
                                                      body={"temperature": 0, "max_tokens": max_tokens}, stream=False))

    def ask(self, prompt: str, options: list[str]) -> Reply:
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": prompt}]
        done = self.endpoint.complete(messages)
        return Reply(done.text, done.prompt_tokens or 0, done.completion_tokens or 0)


class HfChatJudge:
    """A local Hugging Face chat model through the platform's ``dialeval:hf_chat`` agent (greedy);
    ``ask_batch`` generates for many prompts at once (left-padded), with the agent's prompt rendering."""

    concurrency = 1

    def __init__(self, path: str, max_tokens: int = 20, device=None, chat_template: str | None = None,
                 batch_size: int | None = None):
        from parlai.core.agents import create_agent

        import parlai_dialeval  # noqa: F401  (registers the dialeval: prefix)

        self.name = f"hf:{Path(path).name or path}"
        self.agent = create_agent({"model": "dialeval:hf_chat", "hf_chat_model": path, "max_new_tokens": max_tokens,
                                   "device": device or "cpu", "chat_template": chat_template})
        self.max_tokens = max_tokens
        self.batch_size = batch_size

    def ask(self, prompt: str, options: list[str]) -> Reply:
        done = self.agent.reply([{"role": "user", "content": prompt}])
        return Reply(done.text, done.prompt_tokens or 0, done.completion_tokens or 0)

    def ask_batch(self, questions: list[tuple[str, list[str]]], batch_size: int | None = None) -> list[Reply]:
        import torch

        tokenizer, model = self.agent.lm["tokenizer"], self.agent.lm["model"]
        prompts = [self.agent.prompt_ids([{"role": "user", "content": text}]) for text, _ in questions]
        eos = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
        width = max(len(ids) for ids in prompts) + self.max_tokens
        rows = batch_size or self.batch_size or batch_size_from_memory(model, width, 1)
        # Prompts of similar length share a batch, so little of it is padding.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        replies: list[Reply | None] = [None] * len(prompts)
        for start in range(0, len(order), rows):
            batch = order[start:start + rows]
            longest = max(len(prompts[i]) for i in batch)
            ids = torch.tensor([[pad] * (longest - len(prompts[i])) + prompts[i] for i in batch], device=model.device)
            mask = torch.tensor([[0] * (longest - len(prompts[i])) + [1] * len(prompts[i]) for i in batch],
                                device=model.device)
            with torch.no_grad():
                out = model.generate(ids, attention_mask=mask, max_new_tokens=self.max_tokens, do_sample=False,
                                     pad_token_id=pad, eos_token_id=eos)
            for row, i in enumerate(batch):
                new = out[row, longest:].tolist()
                if eos in new:
                    new = new[:new.index(eos) + 1]  # the rest is padding of a row that finished early
                text = tokenizer.decode(new, skip_special_tokens=True).strip()
                replies[i] = Reply(text, len(prompts[i]), len(new))
        return replies


class ScriptedJudge:
    """Replies from a JSON file ``{"rules": [{"match": "text in the prompt", "reply": "A"}, ...],
    "default": "B"}``: the first rule whose ``match`` occurs in the prompt answers; otherwise
    ``default`` (a prompt with neither is an error)."""

    concurrency = 1

    def __init__(self, path: str):
        self.name = f"script:{Path(path).stem}"
        try:
            spec = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise DataError(path, f"not valid JSON ({error.msg})", line=error.lineno) from None
        rules = spec.get("rules", []) if isinstance(spec, dict) else None
        if rules is None or not all(isinstance(r, dict) and isinstance(r.get("match"), str)
                                    and isinstance(r.get("reply"), str) for r in rules):
            raise DataError(path, "scripted judge", expected='{"rules": [{"match": str, "reply": str}], "default": str}')
        self.rules = [(r["match"], r["reply"]) for r in rules]
        self.default = spec.get("default")

    def ask(self, prompt: str, options: list[str]) -> Reply:
        for match, reply in self.rules:
            if match in prompt:
                return Reply(reply)
        if self.default is None:
            raise DialevalError(f"scripted judge {self.name}: no rule matches the prompt and no default")
        return Reply(self.default)


def make_judge(spec: str, *, base_url: str | None = None, api_key_env: str = "", max_tokens: int = 20,
               concurrency: int = 4, device=None, dtype=None, chat_template=None, batch_size: int | None = None,
               timeout: float = 60.0):
    kind, _, value = spec.partition(":")
    if kind == "lm" and value:
        return LikelihoodJudge(value, device=device, dtype=dtype, batch_size=batch_size)
    if kind == "openai" and value:
        return ChatJudge(value, base_url, api_key_env=api_key_env, max_tokens=max_tokens, concurrency=concurrency,
                         timeout=timeout)
    if kind == "hf" and value:
        return HfChatJudge(value, max_tokens=max_tokens, device=device, chat_template=chat_template,
                           batch_size=batch_size)
    if kind == "script" and value:
        return ScriptedJudge(value)
    raise DialevalError(f"unknown judge '{spec}': use lm:PATH_OR_NAME, hf:PATH (local chat model), "
                        f"openai:MODEL (with --base-url) or script:FILE.json")
