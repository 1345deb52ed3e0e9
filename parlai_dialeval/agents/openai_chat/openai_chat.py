"""``-m dialeval:openai_chat``: a chatbot served behind an OpenAI-compatible chat-completions API
(vLLM, SGLang, llama.cpp server, Ollama, hosted APIs) as a ParlAI agent.

The conversation so far (observed messages as ``user``, own replies as ``assistant``) is sent each
turn, after an optional system prompt. A persona or topic reaches the bot as the observation's
``context`` field or as ParlAI's ``your persona:`` lines, and is placed in the system message, at the
start of the first user message, or nowhere (``--context-placement``). Each reply carries
``latency`` (seconds, retries included), ``prompt_tokens``, ``completion_tokens``, ``finish_reason``
and ``attempts``, which the crowdsourcing tasks keep in the turn's ``meta``. Copies made with
``share()`` use one HTTP client: simultaneous conversations run in parallel, with no lock.
"""
from __future__ import annotations

import json

from parlai.core.agents import Agent
from parlai.core.message import Message
from parlai.core.opt import Opt

from parlai_dialeval.agents.openai_chat.client import ChatEndpoint, EndpointError, EndpointSettings

PLACEMENTS = ("system", "first_user", "none")
PERSONA_PREFIX = "your persona:"
DEFAULTS = {"base_url": None, "endpoint_model": None, "api_key_env": "", "system_prompt": "",
            "context_placement": "system", "temperature": None, "max_tokens": None, "stop": None,
            "extra_body": "", "request_timeout": 60.0, "max_retries": 2, "retry_backoff": 1.0}


def request_body(opt) -> dict:
    """The generation fields sent with every request: temperature, max_tokens, stop, extra body."""
    body = {k: opt[k] for k in ("temperature", "max_tokens") if opt.get(k) is not None}
    stop = opt.get("stop")
    if stop:
        try:
            body["stop"] = json.loads(stop) if stop.lstrip().startswith("[") else stop
        except ValueError as error:
            raise EndpointError(f"--stop {stop!r}: not a JSON list of strings ({error})") from error
    if opt.get("extra_body"):
        extra = opt["extra_body"]
        try:
            extra = json.loads(extra) if isinstance(extra, str) else dict(extra)
        except (ValueError, TypeError) as error:
            raise EndpointError(f"--extra-body {extra!r}: not a JSON object ({error})") from error
        if not isinstance(extra, dict):
            raise EndpointError(f"--extra-body {extra!r}: expected a JSON object")
        body.update(extra)
    return body


def settings_from_opt(opt) -> EndpointSettings:
    return EndpointSettings(base_url=opt.get("base_url") or "", model=opt.get("endpoint_model") or "",
                            api_key_env=opt.get("api_key_env") or "", timeout=float(opt["request_timeout"]),
                            max_retries=int(opt["max_retries"]), backoff=float(opt["retry_backoff"]),
                            body=request_body(opt))


def split_context(text: str) -> tuple[list[str], str]:
    """ParlAI's ``your persona: ...`` lines apart from the rest of an observed text."""
    lines = text.split("\n")
    persona = [line for line in lines if line.strip().lower().startswith(PERSONA_PREFIX)]
    rest = "\n".join(line for line in lines if not line.strip().lower().startswith(PERSONA_PREFIX))
    return persona, rest


def build_messages(system_prompt: str, context: list[str], placement: str, history: list[dict]) -> list[dict]:
    """The chat-completions ``messages``: system prompt, the context where ``placement`` says, history."""
    if placement not in PLACEMENTS:
        raise EndpointError(f"--context-placement {placement!r}: expected one of {', '.join(PLACEMENTS)}")
    context_text = "\n".join(context) if placement != "none" else ""
    system = "\n".join(part for part in (system_prompt, context_text if placement == "system" else "") if part)
    messages = [{"role": "system", "content": system}] if system else []
    history = [dict(m) for m in history]
    if placement == "first_user" and context_text:
        first = next((m for m in history if m["role"] == "user"), None)
        if first is None:
            history.insert(0, {"role": "user", "content": context_text})
        else:
            first["content"] = f"{context_text}\n{first['content']}" if first["content"] else context_text
    return messages + history


class OpenaiChatAgent(Agent):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        group = parser.add_argument_group("OpenAI-compatible chat endpoint")
        group.add_argument("--base-url", type=str, default=None,
                           help="the API root, e.g. http://localhost:8000/v1 (requests go to BASE/chat/completions)")
        group.add_argument("--endpoint-model", type=str, default=None, help="model name the server serves")
        group.add_argument("--api-key-env", type=str, default="",
                           help="NAME of the environment variable holding the API key ('' = send no key); "
                                "the key itself is never an option")
        group.add_argument("--system-prompt", type=str, default="", help="system message sent first")
        group.add_argument("--context-placement", type=str, default="system", choices=PLACEMENTS,
                           help="where the task's persona/topic goes: the system message, the start of the "
                                "first user message, or nowhere")
        group.add_argument("--temperature", type=float, default=None, help="sampling temperature (server default)")
        group.add_argument("--max-tokens", type=int, default=None, help="longest reply in tokens (server default)")
        group.add_argument("--stop", type=str, default=None, help="stop string, or a JSON list of them")
        group.add_argument("--extra-body", type=str, default="",
                           help='extra JSON fields of the request body, e.g. \'{"top_p": 0.9, "seed": 1}\'')
        group.add_argument("--request-timeout", type=float, default=60.0, help="seconds to wait for one reply")
        group.add_argument("--max-retries", type=int, default=2,
                           help="retries of a request answered 429 / 5xx or timed out (then the turn fails)")
        group.add_argument("--retry-backoff", type=float, default=1.0,
                           help="first retry delay in seconds, doubled each retry (Retry-After wins)")
        return parser

    def __init__(self, opt, shared=None):
        opt = Opt({**DEFAULTS, **opt})  # create_agent(dict) gets no parser defaults
        super().__init__(opt, shared)
        self.id = "OpenAIChat"
        self.endpoint = shared["endpoint"] if shared else ChatEndpoint(settings_from_opt(opt))
        self.reset()

    def share(self):
        shared = super().share()
        shared["endpoint"] = self.endpoint
        return shared

    def check_ready(self) -> None:
        """One 1-token request (called once at launch): a wrong URL, key or model name fails here."""
        self.endpoint.ping()

    def reset(self):
        super().reset()
        self.history: list[dict] = []
        self.context: list[str] = []
        self.episode_over = False

    def observe(self, observation):
        observation = super().observe(observation) or {}
        context = observation.get("context")
        if context:
            self.context += [context] if isinstance(context, str) else [str(c) for c in context]
        persona, text = split_context(str(observation.get("text") or ""))
        self.context += persona
        if text.strip():
            self.history.append({"role": "user", "content": text})
        self.episode_over = bool(observation.get("episode_done"))
        return observation

    def messages(self) -> list[dict]:
        return build_messages(self.opt["system_prompt"], self.context, self.opt["context_placement"], self.history)

    def act(self):
        done = self.endpoint.complete(self.messages())
        self.history.append({"role": "assistant", "content": done.text})
        reply = Message({"id": self.id, "text": done.text, "episode_done": False, "latency": round(done.latency, 4),
                         "prompt_tokens": done.prompt_tokens, "completion_tokens": done.completion_tokens,
                         "finish_reason": done.finish_reason, "attempts": done.attempts})
        if self.episode_over:
            self.reset()
        return reply
