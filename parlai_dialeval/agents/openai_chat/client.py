"""One OpenAI-compatible chat-completions endpoint: ``POST {base_url}/chat/completions`` over httpx.

``ChatEndpoint`` holds one ``httpx.Client`` (thread-safe, pooled connections) shared by every copy of
an agent, so simultaneous conversations never queue behind one another. Retries 429 / 5xx / timeouts
and failed connections as ``parlai_dialeval/retry.py``'s policy says (Retry-After, else jittered back-off),
a bounded number of times; every other failure raises ``EndpointError`` at once with a one-line reason. The API key is
read from the environment variable named in the settings and lives only in the client's headers
(never in opts or messages).

Replies are streamed (server-sent events, ``stream: true``) unless the settings say not to: each
piece of text is handed to ``on_text`` as it arrives, and the time to the first token is measured. A
server that answers a streamed request with one JSON body is read as such (and remembered); one that
refuses ``stream`` is asked again without it. Quirks of servers people run are handled and recorded
in ``Completion.quirks``: ``max_completion_tokens`` for servers refusing ``max_tokens`` (remembered),
``reasoning_content`` kept apart from the text, empty content, ``finish_reason`` ``length`` and
``content_filter``. A stream that breaks off after some text raises ``StreamBroken`` with that text
(it is not retried: the participant may have seen it).
"""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.retry import RetryPolicy, retry_after_seconds
from parlai_dialeval.tls import shared_tls_context

logger = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 60.0  # a server asking for longer than this is treated as down for this turn


class EndpointError(DialevalError):
    """The endpoint could not give a reply: the reason in one line (status, model, what it said)."""


class StreamBroken(EndpointError):
    """A streamed reply stopped before its end; ``partial`` is the text that had arrived."""

    def __init__(self, message: str, partial: str, reasoning: str = ""):
        super().__init__(message)
        self.partial = partial
        self.reasoning = reasoning


@dataclass
class EndpointSettings:
    base_url: str
    model: str
    api_key_env: str = ""
    timeout: float = 60.0
    max_retries: int = 2
    backoff: float = 1.0
    body: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, stop, extra fields
    stream: bool = True  # ask for server-sent events (falls back when the server does not stream)


@dataclass
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency: float  # seconds from the first request to the reply, retries included
    attempts: int
    model: str | None
    first_token_latency: float | None = None  # seconds to the first piece of text (streamed replies)
    streamed: bool = False
    reasoning: str | None = None  # reasoning_content: kept for the record, never shown
    quirks: list[str] = field(default_factory=list)  # what of the server was worked around or noticed

    @property
    def tokens_per_second(self) -> float | None:
        """Completion tokens over the generation time (after the first token when streamed)."""
        if not self.completion_tokens:
            return None
        span = self.latency - (self.first_token_latency or 0.0)
        return round(self.completion_tokens / span, 2) if span > 0 else None


def read_api_key(env_name: str) -> str | None:
    """The key from variable ``env_name`` ('' = no key); a named variable that is unset is an error."""
    if not env_name:
        return None
    key = os.environ.get(env_name)
    if not key:
        raise EndpointError(f"the API key variable {env_name} is not set: export {env_name}=... before "
                            "launching (the key itself never goes into a config)")
    return key


def parse_completion(payload: Any) -> tuple[str, str | None, int | None, int | None, str | None, str | None]:
    """(text, finish_reason, prompt_tokens, completion_tokens, model, reasoning) of a chat-completions reply."""
    if not isinstance(payload, dict):
        raise EndpointError(f"the reply is not a JSON object: {str(payload)[:200]}")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        raise EndpointError(f"the reply has no choices: {json.dumps(payload)[:200]}")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    text = message.get("content")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if text is None and (reasoning or choice.get("finish_reason") in ("length", "content_filter")):
        text = ""  # all budget spent on reasoning, or filtered: an empty reply, recorded as such
    if not isinstance(text, str):
        raise EndpointError(f"the reply has no text (finish_reason {choice.get('finish_reason')!r}): "
                            f"{json.dumps(choice)[:200]}")
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    return (text, choice.get("finish_reason"), usage.get("prompt_tokens"), usage.get("completion_tokens"),
            payload.get("model"), reasoning if isinstance(reasoning, str) else None)


def _refuses(detail: str, name: str) -> bool:
    """Whether a 400's message says the parameter ``name`` is unsupported (OpenAI's o-series wording,
    and the shorter ones of other servers)."""
    lowered = detail.lower()
    return name in lowered and any(word in lowered for word in ("unsupported", "not supported", "unknown",
                                                                "unrecognized", "not allowed", "instead"))


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
        self.retry = RetryPolicy(backoff=settings.backoff, max_backoff=MAX_RETRY_AFTER,
                                 max_retry_after=MAX_RETRY_AFTER)
        headers = {"Content-Type": "application/json"}
        key = read_api_key(settings.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # pool sized for many simultaneous conversations; httpx.Client is safe to share between threads
        self.client = httpx.Client(base_url=settings.base_url.rstrip("/") + "/", headers=headers,
                                   timeout=settings.timeout, verify=shared_tls_context(),
                                   limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))

    @property
    def url(self) -> str:
        return f"{self.settings.base_url.rstrip('/')}/chat/completions"

    def complete(self, messages: list[dict], extra: dict | None = None, sleep=time.sleep,
                 on_text=None) -> Completion:
        """One reply; ``on_text(text_so_far)`` is called as a streamed reply grows."""
        body = {**self.settings.body, **(extra or {}), "model": self.settings.model, "messages": messages}
        quirks: list[str] = []
        start = time.monotonic()
        attempts = 1 + max(0, self.settings.max_retries)
        attempt = 0
        while True:
            attempt += 1
            last = attempt >= attempts
            request = self._adapt(body)
            try:
                done = self._request(request, start, attempt, on_text)
            except httpx.TimeoutException as error:
                reason = f"no reply within {self.settings.timeout:g} s ({type(error).__name__})"
                retry_after = None
            except httpx.TransportError as error:  # refused or reset connections: often a busy server
                if last:
                    raise EndpointError(f"{self.url} is unreachable: {type(error).__name__}: {error} "
                                        f"(tried {attempts} times)") from error
                reason, retry_after = f"connection failed: {type(error).__name__}: {error}", None
            else:
                if isinstance(done, Completion):
                    done.quirks = quirks + done.quirks
                    return done
                response = done
                reason = f"HTTP {response.status_code}: {_error_detail(response)}"
                if response.status_code == 400 and self._learn(reason, request, quirks):
                    attempt -= 1  # asking again in the form the server takes is not a retry
                    continue
                if response.status_code == 404:
                    raise EndpointError(f"{self.url}: model {self.settings.model!r} not found ({reason})")
                if response.status_code not in RETRY_STATUS:
                    raise EndpointError(f"{self.url} refused the request ({reason})")
                retry_after = response.headers.get("Retry-After")
            if last:
                raise EndpointError(f"{self.url} failed {attempts} times, last: {reason}")
            delay = self.retry.wait(attempt, retry_after)
            if delay is None:
                asked = retry_after_seconds(retry_after)
                raise EndpointError(f"{self.url} asks to retry after {asked:.0f} s ({reason}); giving up this turn")
            logger.warning("%s: %s; retry %d/%d in %.1f s", self.url, reason, attempt, attempts - 1, delay)
            sleep(delay)

    # What this server was found to refuse, learnt from its 400s and kept for every later request.
    _no_stream = False
    _token_field = "max_tokens"

    def _adapt(self, body: dict) -> dict:
        request = dict(body)
        if self.settings.stream and not self._no_stream:
            request["stream"] = True
        if self._token_field != "max_tokens" and "max_tokens" in request:
            request[self._token_field] = request.pop("max_tokens")
        return request

    def _learn(self, reason: str, request: dict, quirks: list[str]) -> bool:
        """Whether a 400 names something this client can do differently (and now will)."""
        if "max_tokens" in request and _refuses(reason, "max_tokens"):
            self._token_field = "max_completion_tokens"
            quirks.append("max_completion_tokens")
            return True
        if request.get("stream") and _refuses(reason, "stream"):
            self._no_stream = True
            quirks.append("no streaming")
            return True
        return False

    def _request(self, body: dict, start: float, attempt: int, on_text) -> Completion | httpx.Response:
        """A Completion, or the response of a failed request (its body read)."""
        with self.client.stream("POST", "chat/completions", json=body) as response:
            if response.status_code != 200:
                response.read()
                return response
            kind = response.headers.get("content-type", "")
            if body.get("stream") and "text/event-stream" in kind:
                return self._read_stream(response, start, attempt, on_text)
            raw = response.read()
        try:
            payload = json.loads(raw)
        except ValueError as error:
            raise EndpointError(f"{self.url} returned malformed JSON: {raw[:200]!r}") from error
        text, finish, prompt_tokens, completion_tokens, model, reasoning = parse_completion(payload)
        quirks = ["answered without streaming"] if body.get("stream") else []
        if body.get("stream"):
            self._no_stream = True  # it does not stream: stop asking
        done = Completion(text, finish, prompt_tokens, completion_tokens, time.monotonic() - start, attempt, model,
                          reasoning=reasoning, quirks=quirks)
        if text and on_text:
            on_text(text)
        return _noticed(done)

    def _read_stream(self, response: httpx.Response, start: float, attempt: int, on_text=None) -> Completion:
        parts: list[str] = []
        reasoning: list[str] = []
        finish = model = first = None
        usage: dict = {}
        chunks = 0
        ended = False
        try:
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue  # comments, event names, keep-alives
                data = line[5:].strip()
                if data == "[DONE]":
                    ended = True
                    break
                try:
                    chunk = json.loads(data)
                except ValueError as error:
                    raise EndpointError(f"{self.url} sent a malformed stream event: {data[:200]!r}") from error
                if isinstance(chunk, dict) and chunk.get("error"):
                    raise EndpointError(f"{self.url} reported an error mid-stream: {str(chunk['error'])[:300]}")
                model = (chunk.get("model") if isinstance(chunk, dict) else None) or model
                if isinstance(chunk, dict) and isinstance(chunk.get("usage"), dict):
                    usage = chunk["usage"]
                for choice in (chunk.get("choices") or []) if isinstance(chunk, dict) else []:
                    delta = choice.get("delta") or {}
                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(thought, str):
                        reasoning.append(thought)
                    piece = delta.get("content")
                    if isinstance(piece, str) and piece:
                        if first is None:
                            first = time.monotonic() - start
                        parts.append(piece)
                        chunks += 1
                        if on_text:
                            on_text("".join(parts))
                    finish = choice.get("finish_reason") or finish
        except httpx.HTTPError as error:
            if not parts and isinstance(error, (httpx.TimeoutException, httpx.TransportError)):
                raise  # nothing shown yet: an ordinary failed request, retried
            if not parts:
                raise EndpointError(f"{self.url}: the stream could not be read ({type(error).__name__}: "
                                    f"{error})") from error
            raise StreamBroken(f"{self.url}: the stream broke off after {len(''.join(parts))} characters "
                               f"({type(error).__name__})", "".join(parts), "".join(reasoning)) from error
        if not ended and finish is None:
            if not parts:
                raise httpx.RemoteProtocolError("the stream ended before any text")
            raise StreamBroken(f"{self.url}: the stream ended without finishing the reply "
                               f"after {len(''.join(parts))} characters", "".join(parts), "".join(reasoning))
        done = Completion("".join(parts), finish, usage.get("prompt_tokens"),
                          usage.get("completion_tokens") or chunks or None, time.monotonic() - start, attempt, model,
                          first_token_latency=first, streamed=True, reasoning="".join(reasoning) or None)
        return _noticed(done)

    def ping(self) -> None:
        """One cheap request at launch (1 token), so a wrong URL, key or model name stops the launch
        (and the server's quirks, streaming or not, are learnt before the first participant)."""
        self.complete([{"role": "user", "content": "Hi"}], extra={"max_tokens": 1})


def _noticed(done: Completion) -> Completion:
    """Records what a participant would otherwise meet unexplained: no text, a cut or filtered reply."""
    if not done.text.strip():
        done.quirks.append("empty content")
    if done.finish_reason in ("length", "content_filter"):
        done.quirks.append(f"finish_reason {done.finish_reason}")
    if done.reasoning:
        done.quirks.append("reasoning_content")
    return done
