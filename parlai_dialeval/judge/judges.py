"""Judges: something that answers a prompt. ``lm:PATH`` (a local causal LM that picks the option it finds
most likely), ``hf:PATH`` (a local chat model through ``dialeval:hf_chat``), ``openai:MODEL`` (any OpenAI-compatible endpoint, through the platform's
``dialeval:openai_chat`` client) and ``script:FILE.json`` (replies you write, for tests and dry runs).

The local judges (``lm:``, ``hf:``) answer many prompts at once (``ask_batch``): one copy of the
model, prompts of similar length batched (``hf:``: greedy generation of left-padded rows after the
prompts' common first tokens, run once and their key/value cache shared, each row leaving the batch
when its reply ends; ``lm:``: prompts sharing their start scored as one token trie, right-padded, the
options read from the last position), as many rows at once as fit in a quarter of the free memory
(``batch_size``; ``--judge-batch-size`` overrides), on as many CPU threads as other processes leave
free (``lm_loading.free_cpu_threads``).
Their answers are those of asking one prompt at a time (tests/test_real_model.py;
benchmarks/bench_judge_batch.py checks it on every prompt it times)."""
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
        from parlai_dialeval.metrics.lm_loading import free_cpu_threads, load_causal_lm

        self.name = f"lm:{Path(path).name or path}"
        self.model, self.tokenizer = load_causal_lm(path, device, dtype)
        self.batch_size = batch_size
        self.threads = free_cpu_threads(device)  # before the judge's own work adds to the load

    def _texts(self, prompt: str, options: list[str]) -> tuple[list[list[int]], int]:
        context = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        # Options are tokenized apart and appended, so every option follows the same prompt tokens.
        return [context + self.tokenizer(" " + o, add_special_tokens=False)["input_ids"] for o in options], len(context)

    def ask(self, prompt: str, options: list[str]) -> Reply:
        return self.ask_batch([(prompt, options)], batch_size=1)[0]

    def ask_batch(self, questions: list[tuple[str, list[str]]], batch_size: int | None = None) -> list[Reply]:
        replies = []
        for (prompt, opts), (tokens, logprobs) in zip(questions, self.option_logprobs(questions, batch_size)):
            best = max(range(len(opts)), key=lambda k: logprobs[k])  # the first of equals, as ever
            replies.append(Reply(opts[best], prompt_tokens=tokens))
        return replies

    def option_logprobs(self, questions: list[tuple[str, list[str]]],
                        batch_size: int | None = None) -> list[tuple[int, list[float]]]:
        """Per question (prompt, options): its tokens (all options') and each option's summed
        log-probability after the prompt."""
        from parlai_dialeval.metrics.fed_lm import PrefixLM
        from parlai_dialeval.metrics.lm_loading import torch_threads

        texts, starts = zip(*(self._texts(prompt, opts) for prompt, opts in questions)) if questions else ((), ())
        groups = share_prefixes([t[0][:s] for t, s in zip(texts, starts)])
        width = max((sum(len(t) for i in group for t in texts[i]) for group in groups), default=1)
        rows = batch_size or self.batch_size or batch_size_from_memory(self.model, width, width)
        # Prompts sharing their first tokens (both orders of an item, items on one conversation) are one
        # PrefixLM group: the shared tokens run once, the rest as a token trie with tree attention. Groups
        # run side by side in batches of ``rows`` (``min_shared``: no chaining of groups, one at a time).
        lm = PrefixLM(self.model, batch_size=rows, max_tokens=rows * width, min_shared=10 ** 9, prefix_losses=False)
        with torch_threads(self.threads):
            scored = lm.score([[t for i in group for t in texts[i]] for group in groups],
                              [[starts[i] for i in group for _ in texts[i]] for group in groups])
        out: list[tuple[int, list[float]]] = [(0, [])] * len(questions)
        for group, losses in zip(groups, scored):
            for i in group:
                mine, losses = losses[:len(texts[i])], losses[len(texts[i]):]
                out[i] = (sum(len(t) for t in texts[i]), [-loss.tail for loss in mine])
        return out


# A group's prompts are packed into one tree of at most GROUP_PROMPTS prompts, each sharing at least
# SHARED_PART of its tokens with the one before: every node of a tree attends to the whole tree (masked),
# so prompts sharing little would cost more attention than their shared tokens save.
GROUP_PROMPTS, SHARED_PART = 8, 0.25


def share_prefixes(prompts: list[list[int]]) -> list[list[int]]:
    """Indices of ``prompts`` (token ids) in groups whose neighbours in token order share their first
    ``SHARED_PART`` or more of their tokens (both orders of an A/B item, items on one conversation)."""
    from parlai_dialeval.metrics.fed_lm import common_length

    groups: list[list[int]] = []
    for i in sorted(range(len(prompts)), key=lambda i: prompts[i]):
        last = groups[-1] if groups else None
        if (last and len(last) < GROUP_PROMPTS
                and common_length(prompts[last[-1]], prompts[i]) >= SHARED_PART * len(prompts[i])):
            last.append(i)
        else:
            groups.append([i])
    return groups


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


# Generation settings a model may ship that change what greedy ``generate`` picks.
GREEDY_CHANGERS = ("no_repeat_ngram_size", "bad_words_ids", "suppress_tokens", "begin_suppress_tokens", "min_length",
                   "min_new_tokens", "forced_bos_token_id", "forced_eos_token_id", "sequence_bias")


class HfChatJudge:
    """A local Hugging Face chat model through the platform's ``dialeval:hf_chat`` agent (greedy);
    ``ask_batch`` generates for many prompts at once (left-padded), with the agent's prompt rendering."""

    concurrency = 1

    def __init__(self, path: str, max_tokens: int = 20, device=None, chat_template: str | None = None,
                 batch_size: int | None = None):
        from parlai.core.agents import create_agent

        import parlai_dialeval  # noqa: F401  (registers the dialeval: prefix)
        from parlai_dialeval.metrics.lm_loading import free_cpu_threads

        self.name = f"hf:{Path(path).name or path}"
        self.agent = create_agent({"model": "dialeval:hf_chat", "hf_chat_model": path, "max_new_tokens": max_tokens,
                                   "device": device or "cpu", "chat_template": chat_template})
        self.agent.follow_process_threads()  # the judge's runs set their threads (``threads``) themselves
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.threads = free_cpu_threads(device or "cpu")  # before the judge's own work adds to the load

    def ask(self, prompt: str, options: list[str]) -> Reply:
        done = self.agent.reply([{"role": "user", "content": prompt}])
        return Reply(done.text, done.prompt_tokens or 0, done.completion_tokens or 0)

    def ask_batch(self, questions: list[tuple[str, list[str]]], batch_size: int | None = None) -> list[Reply]:
        import torch

        from parlai_dialeval.metrics.fed_lm import common_length
        from parlai_dialeval.metrics.lm_loading import torch_threads

        model = self.agent.lm["model"]
        if not questions:
            return []
        if any(getattr(model.generation_config, name, None) for name in GREEDY_CHANGERS):
            return [self.ask(*question) for question in questions]  # the batched loop applies none of them
        prompts = [self.agent.prompt_ids([{"role": "user", "content": text}]) for text, _ in questions]
        # The tokens every prompt starts with (the chat template's system turn, the judge's opening) run
        # once; each prompt keeps at least its last token of its own.
        shared = min(min(len(ids) for ids in prompts) - 1, *(common_length(prompts[0], ids) for ids in prompts))
        width = max(len(ids) for ids in prompts) + self.max_tokens
        rows = batch_size or self.batch_size or batch_size_from_memory(model, width, 1)
        # Prompts of similar length share a batch, so little of it is padding.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        replies: list[Reply | None] = [None] * len(prompts)
        with torch.inference_mode(), torch_threads(self.threads):
            prefix = None
            if shared > 0:
                prefix = model(input_ids=torch.tensor([prompts[0][:shared]], device=model.device),
                               use_cache=True, logits_to_keep=1).past_key_values
            for begin in range(0, len(order), rows):
                batch = order[begin:begin + rows]
                for i, new in zip(batch, self._greedy([prompts[i][shared:] for i in batch], prefix, shared)):
                    text = self.agent.lm["tokenizer"].decode(new, skip_special_tokens=True).strip()
                    replies[i] = Reply(text, len(prompts[i]), len(new))
        return replies

    def _greedy(self, tails: list[list[int]], prefix, shared: int) -> list[list[int]]:
        """Greedy replies (token ids, the end-of-sequence token included) of the prompts ``prefix`` tokens +
        ``tails``: the tails left-padded after a copy of the prefix's key/value cache, with their own
        position ids, so each row computes what ``generate`` computes for it alone; a row leaves the
        batch when its reply ends (``generate`` would keep running it until every row has ended)."""
        import copy

        import torch

        tokenizer, model = self.agent.lm["tokenizer"], self.agent.lm["model"]
        eos = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
        longest = max(len(t) for t in tails)
        ids = torch.tensor([[pad] * (longest - len(t)) + t for t in tails], device=model.device)
        mask = torch.tensor([[1] * shared + [0] * (longest - len(t)) + [1] * len(t) for t in tails],
                            device=model.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
        cache = None
        if prefix is not None:
            cache = copy.deepcopy(prefix)
            cache.batch_repeat_interleave(len(tails))
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                    use_cache=True, logits_to_keep=1)
        replies: list[list[int]] = [[] for _ in tails]
        live = list(range(len(tails)))  # rows still generating, in the batch's row order
        for step in range(self.max_tokens):
            tokens = out.logits[:, -1].argmax(-1)
            for row, token in zip(live, tokens.tolist()):
                replies[row].append(token)
            keep = [k for k, row in enumerate(live) if replies[row][-1] != eos]
            if not keep or step == self.max_tokens - 1:
                break
            cache = out.past_key_values
            if len(keep) < len(live):
                cache.batch_select_indices(torch.tensor(keep, device=model.device))
                live, tokens, mask, positions = ([live[k] for k in keep], tokens[keep], mask[keep], positions[keep])
            mask = torch.cat([mask, mask.new_ones((len(live), 1))], dim=-1)
            positions = positions[:, -1:] + 1
            out = model(input_ids=tokens[:, None], attention_mask=mask, position_ids=positions,
                        past_key_values=cache, use_cache=True)
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
