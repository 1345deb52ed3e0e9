"""``-m dialeval:openai_chat``: a chatbot served behind an OpenAI-compatible chat-completions API
(vLLM, SGLang, llama.cpp server, Ollama, hosted APIs) as a ParlAI agent.

The conversation so far is sent each turn (see ``chat_history``: system prompt, persona/topic
placement, the per-turn ``latency``/token/``finish_reason``/``attempts`` fields). Replies are streamed
when the server streams (``--stream false`` never asks), and the endpoint's quirks are recorded per
turn (``client``). A reply with no text to show (empty content, all reasoning, filtered) fails the
turn with the reason. Copies made with ``share()`` use one HTTP client: simultaneous conversations
run in parallel, with no lock.
"""

from __future__ import annotations

import json

from parlai.core.opt import Opt

from parlai_dialeval.agents import chat_history
from parlai_dialeval.agents.chat_history import ChatHistoryAgent, Reply
from parlai_dialeval.agents.openai_chat.client import ChatEndpoint, EndpointError, EndpointSettings, StreamBroken
from parlai_dialeval.options import check_opt

DEFAULTS = {**chat_history.DEFAULTS, "base_url": None, "endpoint_model": None, "api_key_env": "",
            "temperature": None, "max_tokens": None, "stop": None, "extra_body": "", "request_timeout": 60.0,
            "max_retries": 2, "retry_backoff": 1.0, "stream": True}
LIMITS = {"temperature": "non_negative", "max_tokens": "positive_int", "request_timeout": "positive",
          "max_retries": "non_negative_int", "retry_backoff": "non_negative"}  # options.checked's kinds


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
                            body=request_body(opt), stream=_flag(opt.get("stream", True)))


def _flag(value) -> bool:
    """A yes/no option from a command line, a YAML config or a flag string ("false", "0", "no": off)."""
    return str(value).strip().lower() not in ("false", "0", "no", "off", "none", "")


class OpenaiChatAgent(ChatHistoryAgent):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        group = parser.add_argument_group("OpenAI-compatible chat endpoint")
        group.add_argument("--base-url", type=str, default=None,
                           help="the API root, e.g. http://localhost:8000/v1 (requests go to BASE/chat/completions)")
        group.add_argument("--endpoint-model", type=str, default=None, help="model name the server serves")
        group.add_argument("--api-key-env", type=str, default="",
                           help="NAME of the environment variable holding the API key ('' = send no key); "
                                "the key itself is never an option")
        chat_history.add_chat_args(group)
        group.add_argument("--temperature", type=float, default=None, help="sampling temperature (server default)")
        group.add_argument("--max-tokens", type=int, default=None, help="longest reply in tokens (server default)")
        group.add_argument("--stop", type=str, default=None, help="stop string, or a JSON list of them")
        group.add_argument("--extra-body", type=str, default="",
                           help='extra JSON fields of the request body, e.g. \'{"top_p": 0.9, "seed": 1}\'')
        group.add_argument("--request-timeout", type=float, default=60.0, help="seconds to wait for one reply")
        group.add_argument("--max-retries", type=int, default=2,
                           help="retries of a request answered 429 / 5xx, timed out or dropped (then the turn fails)")
        group.add_argument("--retry-backoff", type=float, default=1.0,
                           help="first retry delay in seconds, doubled each retry (Retry-After wins)")
        group.add_argument("--stream", type="bool", default=True,
                           help="stream replies (server-sent events) when the server does; False: never ask")
        return parser

    def __init__(self, opt, shared=None):
        opt = Opt({**DEFAULTS, **opt})  # create_agent(dict) gets no parser defaults
        check_opt(opt, LIMITS, "openai_chat")
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

    def measure_speed(self, tokens: int):
        """One reply of up to ``tokens`` tokens to a prompt that asks for more (called once at launch, to
        time it), and the longest reply this bot may give (its max_tokens; None: the server's)."""
        prompt = [{"role": "user", "content": "Count from one to one hundred in words, separated by spaces."}]
        return self.endpoint.complete(prompt, extra={"max_tokens": tokens}), self.endpoint.settings.body.get("max_tokens")

    def reply(self, messages: list[dict]) -> Reply:
        try:
            done = self.endpoint.complete(messages, on_text=self.on_text)
        except StreamBroken as error:  # the text shown so far goes into the failure's record
            raise StreamBroken(f"{error} (partial text: {error.partial[:2000]!r})", error.partial,
                               error.reasoning) from error
        if not done.text.strip():
            raise EndpointError(f"{self.endpoint.url} gave no text to show (finish_reason {done.finish_reason!r}"
                                f"{', only reasoning_content' if done.reasoning else ''})")
        extra = {"streamed": done.streamed}
        if done.quirks:
            extra["quirks"] = done.quirks
        if done.reasoning:
            extra["reasoning"] = done.reasoning
        return Reply(done.text, done.finish_reason, done.prompt_tokens, done.completion_tokens, done.attempts,
                     done.first_token_latency, done.tokens_per_second, extra)
