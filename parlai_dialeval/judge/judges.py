"""Judges: something that answers a prompt. ``lm:PATH`` (a local causal LM that picks the option it finds
most likely), ``hf:PATH`` (a local chat model through ``dialeval:hf_chat``), ``openai:MODEL`` (any OpenAI-compatible endpoint, through the platform's
``dialeval:openai_chat`` client) and ``script:FILE.json`` (replies you write, for tests and dry runs)."""
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


class LikelihoodJudge:
    """Reads the option whose tokens the LM finds most likely after the prompt (summed log-probability).
    Always answers one of the options, so it never gives a bad reply. One at a time (``concurrency`` 1)."""

    concurrency = 1

    def __init__(self, path: str, device=None, dtype=None):
        from parlai_dialeval.metrics.fed_lm import PrefixLM
        from parlai_dialeval.metrics.lm_loading import load_causal_lm

        self.name = f"lm:{Path(path).name or path}"
        self.model, self.tokenizer = load_causal_lm(path, device, dtype)
        self.lm = PrefixLM(self.model, batch_size=1)

    def ask(self, prompt: str, options: list[str]) -> Reply:
        context = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        # Options are tokenized apart and appended, so every option follows the same prompt tokens.
        texts = [context + self.tokenizer(" " + o, add_special_tokens=False)["input_ids"] for o in options]
        losses = self.lm.score([texts], [[len(context)] * len(texts)])[0]
        best = min(range(len(options)), key=lambda i: losses[i].tail)
        return Reply(options[best], prompt_tokens=sum(len(t) for t in texts))


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
        self.endpoint = ChatEndpoint(EndpointSettings(base_url, model, api_key_env=api_key_env, timeout=timeout,
                                                      body={"temperature": 0, "max_tokens": max_tokens}))

    def ask(self, prompt: str, options: list[str]) -> Reply:
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": prompt}]
        done = self.endpoint.complete(messages)
        return Reply(done.text, done.prompt_tokens or 0, done.completion_tokens or 0)


class HfChatJudge:
    """A local Hugging Face chat model through the platform's ``dialeval:hf_chat`` agent (greedy)."""

    concurrency = 1

    def __init__(self, path: str, max_tokens: int = 20, device=None, chat_template: str | None = None):
        from parlai.core.agents import create_agent

        import parlai_dialeval  # noqa: F401  (registers the dialeval: prefix)

        self.name = f"hf:{Path(path).name or path}"
        self.agent = create_agent({"model": "dialeval:hf_chat", "hf_chat_model": path, "max_new_tokens": max_tokens,
                                   "device": device or "cpu", "chat_template": chat_template})

    def ask(self, prompt: str, options: list[str]) -> Reply:
        done = self.agent.reply([{"role": "user", "content": prompt}])
        return Reply(done.text, done.prompt_tokens or 0, done.completion_tokens or 0)


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
               concurrency: int = 4, device=None, dtype=None, chat_template=None):
    kind, _, value = spec.partition(":")
    if kind == "lm" and value:
        return LikelihoodJudge(value, device=device, dtype=dtype)
    if kind == "openai" and value:
        return ChatJudge(value, base_url, api_key_env=api_key_env, max_tokens=max_tokens, concurrency=concurrency)
    if kind == "hf" and value:
        return HfChatJudge(value, max_tokens=max_tokens, device=device, chat_template=chat_template)
    if kind == "script" and value:
        return ScriptedJudge(value)
    raise DialevalError(f"unknown judge '{spec}': use lm:PATH_OR_NAME, hf:PATH (local chat model), "
                        f"openai:MODEL (with --base-url) or script:FILE.json")
