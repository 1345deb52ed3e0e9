"""One OpenAI-compatible chat-completions endpoint: ``POST {base_url}/chat/completions`` over httpx.

``ChatEndpoint`` holds one ``httpx.Client`` (thread-safe, pooled connections) shared by every copy of
an agent, so simultaneous conversations never queue behind one another. Retries 429 / 5xx / timeouts
and failed connections with exponential back-off, honouring ``Retry-After``, a bounded number of
times; every other failure raises ``EndpointError`` at once with a one-line reason. The API key is
read from the environment variable named in the settings and lives only in the client's headers
(never in opts or messages).
"""
from __future__ import annotations

import email.utils
import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from parlai_dialeval.errors import DialevalError

logger = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 60.0  # a server asking for longer than this is treated as down for this turn


class EndpointError(DialevalError):
    """The endpoint could not give a reply: the reason in one line (status, model, what it said)."""


@dataclass
class EndpointSettings:
    base_url: str
    model: str
    api_key_env: str = ""
    timeout: float = 60.0
    max_retries: int = 2
    backoff: float = 1.0
    body: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, stop, extra fields


@dataclass
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency: float  # seconds from the first request to the reply, retries included
    attempts: int
    model: str | None


def read_api_key(env_name: str) -> str | None:
    """The key from variable ``env_name`` ('' = no key); a named variable that is unset is an error."""
    if not env_name:
        return None
    key = os.environ.get(env_name)
    if not key:
        raise EndpointError(f"the API key variable {env_name} is not set: export {env_name}=... before "
                            "launching (the key itself never goes into a config)")
    return key


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds: either a number or an HTTP date (RFC 9110 10.2.3)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def parse_completion(payload: Any) -> tuple[str, str | None, int | None, int | None, str | None]:
    """(text, finish_reason, prompt_tokens, completion_tokens, model) of a chat-completions reply."""
    if not isinstance(payload, dict):
        raise EndpointError(f"the reply is not a JSON object: {str(payload)[:200]}")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        raise EndpointError(f"the reply has no choices: {json.dumps(payload)[:200]}")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    text = (choice.get("message") or {}).get("content")
    if not isinstance(text, str):
        raise EndpointError(f"the reply has no text (finish_reason {choice.get('finish_reason')!r}): "
                            f"{json.dumps(choice)[:200]}")
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    return (text, choice.get("finish_reason"), usage.get("prompt_tokens"), usage.get("completion_tokens"),
            payload.get("model"))


def _error_detail(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    return str(message or response.text or response.reason_phrase)[:300]


class ChatEndpoint:
    def __init__(self, settings: EndpointSettings):
        if not settings.base_url:
            raise EndpointError("openai_chat needs --base-url (e.g. http://localhost:8000/v1)")
        if not settings.model:
            raise EndpointError("openai_chat needs --endpoint-model (the model name the server serves)")
        self.settings = settings
        headers = {"Content-Type": "application/json"}
        key = read_api_key(settings.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # pool sized for many simultaneous conversations; httpx.Client is safe to share between threads
        self.client = httpx.Client(base_url=settings.base_url.rstrip("/") + "/", headers=headers,
                                   timeout=settings.timeout,
                                   limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))

    @property
    def url(self) -> str:
        return f"{self.settings.base_url.rstrip('/')}/chat/completions"

    def complete(self, messages: list[dict], extra: dict | None = None, sleep=time.sleep) -> Completion:
        body = {**self.settings.body, **(extra or {}), "model": self.settings.model, "messages": messages}
        start = time.monotonic()
        attempts = 1 + max(0, self.settings.max_retries)
        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            try:
                response = self.client.post("chat/completions", json=body)
            except httpx.TimeoutException as error:
                reason = f"no reply within {self.settings.timeout:g} s ({type(error).__name__})"
                wait = None
            except httpx.TransportError as error:  # refused or reset connections: often a busy server
                if last:
                    raise EndpointError(f"{self.url} is unreachable: {type(error).__name__}: {error} "
                                        f"(tried {attempts} times)") from error
                reason, wait = f"connection failed: {type(error).__name__}: {error}", None
            else:
                if response.status_code == 200:
                    try:
                        payload = response.json()
                    except ValueError as error:
                        raise EndpointError(f"{self.url} returned malformed JSON: {response.text[:200]!r}") from error
                    text, finish, prompt_tokens, completion_tokens, model = parse_completion(payload)
                    return Completion(text, finish, prompt_tokens, completion_tokens, time.monotonic() - start,
                                      attempt, model)
                reason = f"HTTP {response.status_code}: {_error_detail(response)}"
                if response.status_code == 404:
                    raise EndpointError(f"{self.url}: model {self.settings.model!r} not found ({reason})")
                if response.status_code not in RETRY_STATUS:
                    raise EndpointError(f"{self.url} refused the request ({reason})")
                wait = retry_after_seconds(response.headers.get("Retry-After"))
            if last:
                raise EndpointError(f"{self.url} failed {attempts} times, last: {reason}")
            delay = self.settings.backoff * 2 ** (attempt - 1) if wait is None else wait
            if delay > MAX_RETRY_AFTER:
                raise EndpointError(f"{self.url} asks to retry after {delay:.0f} s ({reason}); giving up this turn")
            logger.warning("%s: %s; retry %d/%d in %.1f s", self.url, reason, attempt, attempts - 1, delay)
            sleep(delay)
        raise AssertionError("unreachable")

    def ping(self) -> None:
        """One cheap request at launch (1 token), so a wrong URL, key or model name stops the launch."""
        self.complete([{"role": "user", "content": "Hi"}], extra={"max_tokens": 1})
