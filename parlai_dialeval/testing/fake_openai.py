"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, standard library only.

For tests, benchmarks and rehearsing an evaluation before paying for a real endpoint:

    python -m parlai_dialeval.testing.fake_openai --port 8011 --model fake-a --model fake-b --latency 0.3
    python -m parlai_dialeval.testing.fake_openai --port 8011 --script script.json --api-key-env FAKE_KEY

Serves ``POST /v1/chat/completions`` and ``GET /v1/models``. Each model follows a script (JSON, one
object per model name): ``replies`` (cycled; default: an echo of the last user message), ``latency``
(seconds per reply), ``faults`` (a list consumed one per request, after ``faults_after`` normal
replies): ``429`` (with ``Retry-After: retry_after``), ``500``, ``timeout`` (answers after ``hang``
seconds), ``malformed`` (invalid JSON), ``empty`` (no choices), ``notext`` (a choice without text),
``context`` (400 context too long), ``disconnect`` (the connection closed without an answer),
``break`` (a streamed reply stops half-way, the connection closed); and ``max_context_chars``
(longer conversations get that 400).
A request with ``stream: true`` gets server-sent events, one word per event, event i ``i x chunk_delay``
seconds after the first, unless the script says ``stream: false`` (then one JSON body, as servers that do
not stream).
Endpoint quirks on demand: ``refuse`` (parameters answered with a 400 "unsupported parameter", e.g.
``["max_tokens"]`` as OpenAI's reasoning models, or ``["stream"]``), ``reasoning`` (text sent as
``reasoning_content`` before the reply) and ``finish_reason`` (e.g. ``content_filter``).
Unknown model names get 404, a missing or wrong key 401 (when a key is required). Token counts are
words; ``max_tokens`` / ``max_completion_tokens`` cut the reply (``finish_reason: length``).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("429", "500", "timeout", "malformed", "empty", "notext", "context", "disconnect", "break")
DISCONNECT = object()  # a completion() answer: close the connection without a response


@dataclass
class ModelScript:
    replies: list[str] = field(default_factory=list)
    latency: float = 0.0
    faults: list[str] = field(default_factory=list)
    faults_after: int = 0
    retry_after: float = 1.0
    hang: float = 5.0
    max_context_chars: int | None = None
    stream: bool = True
    chunk_delay: float = 0.0
    refuse: list[str] = field(default_factory=list)
    reasoning: str | None = None
    finish_reason: str | None = None

    def __post_init__(self):
        unknown = [f for f in self.faults if f not in FAULTS]
        if unknown:
            raise ValueError(f"unknown faults {unknown}: expected some of {', '.join(FAULTS)}")
        self._lock = threading.Lock()
        self._served = 0
        self._faults = list(self.faults)
        self._replies = itertools.cycle(self.replies) if self.replies else None

    def next_step(self) -> tuple[str | None, str | None]:
        """(fault or None, scripted reply or None) for the next request, thread-safely."""
        with self._lock:
            self._served += 1
            fault = self._faults.pop(0) if self._faults and self._served > self.faults_after else None
            # a reply that comes late ("timeout") or breaks off is still the script's reply
            reply = next(self._replies) if self._replies is not None and fault in (None, "break", "timeout") else None
            return fault, reply


@dataclass
class Stream:
    """A reply to send as server-sent events: ``events`` (JSON objects), ``delay`` between them, and
    ``cut`` (events sent before the connection is closed without the end; None: all, then [DONE])."""
    events: list[dict]
    delay: float
    cut: int | None = None


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default 5 resets connections when many workers call at once


def _words(text: str) -> int:
    return len(str(text).split())


class FakeOpenAI:
    """The server in a background thread: ``with FakeOpenAI({...}) as fake: fake.base_url``."""

    def __init__(self, models: dict[str, ModelScript | dict] | None = None, port: int = 0, api_key: str | None = None):
        self.models = {name: s if isinstance(s, ModelScript) else ModelScript(**s)
                       for name, s in (models or {"fake-model": ModelScript()}).items()}
        self.api_key = api_key
        self.requests: list[dict] = []  # every request: model, messages, body, headers (for tests)
        self._requests_lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0  # requests being answered at once (concurrency checks)
        self.server = _Server(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAI":
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="fake-openai")
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def requests_for(self, model: str) -> list[dict]:
        with self._requests_lock:
            return [r for r in self.requests if r["model"] == model]

    # ------------------------------------------------------------ request handling
    def _record(self, entry: dict) -> None:
        with self._requests_lock:
            self.requests.append(entry)

    def completion(self, body: dict, headers: dict) -> tuple[int, dict[str, str], Any]:
        """(status, headers, payload; a str payload is sent as it is) for one request body."""
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {}, _error("invalid or missing API key", "invalid_api_key")
        model = body.get("model")
        messages = body.get("messages")
        self._record({"model": model, "messages": messages, "body": body, "headers": headers, "time": time.time()})
        script = self.models.get(model)
        if script is None:
            return 404, {}, _error(f"The model `{model}` does not exist", "model_not_found")
        if not isinstance(messages, list) or not messages:
            return 400, {}, _error("messages must be a non-empty list", "invalid_request_error")
        for name in script.refuse:
            if name in body:
                hint = " Use 'max_completion_tokens' instead." if name == "max_tokens" else ""
                return 400, {}, _error(f"Unsupported parameter: '{name}' is not supported with this model.{hint}",
                                       "unsupported_parameter")
        fault, scripted = script.next_step()
        with self._requests_lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(script.hang if fault == "timeout" else script.latency)
        finally:
            with self._requests_lock:
                self.in_flight -= 1
        size = sum(len(str(m.get("content", ""))) for m in messages)
        if fault == "context" or (script.max_context_chars is not None and size > script.max_context_chars):
            return 400, {}, _error(f"This model's maximum context length is {script.max_context_chars} "
                                   f"characters; your messages have {size}", "context_length_exceeded")
        if fault == "429":
            return 429, {"Retry-After": f"{script.retry_after:g}"}, _error("Rate limit reached", "rate_limit_exceeded")
        if fault == "500":
            return 500, {}, _error("The server had an error while processing your request", "server_error")
        if fault == "disconnect":
            return 0, {}, DISCONNECT
        if fault == "malformed":
            return 200, {}, '{"id": "chatcmpl-fake", "choices": [{"message": '
        last_user = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
        text = scripted if scripted is not None else f"You said: {last_user}"
        finish = script.finish_reason or "stop"
        limit = body.get("max_tokens", body.get("max_completion_tokens"))
        if isinstance(limit, int) and _words(text) > limit:
            text, finish = " ".join(text.split()[:limit]), "length"
        usage = {"prompt_tokens": sum(_words(m.get("content", "")) for m in messages),
                 "completion_tokens": _words(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        head = {"id": f"chatcmpl-fake-{len(self.requests)}", "created": int(time.time()), "model": model}
        if body.get("stream") and script.stream and fault not in ("empty", "notext"):
            words = text.split(" ")
            events = ([{**head, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                    "reasoning_content": script.reasoning}}]}]
                      if script.reasoning else [])
            events += [{**head, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {"content": word if i == 0 else " " + word}, "finish_reason": None}]}
                for i, word in enumerate(words) if word or len(words) == 1]
            events.append({**head, "object": "chat.completion.chunk",
                           "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage})
            return 200, {}, Stream(events, script.chunk_delay, cut=max(1, len(words) // 2) if fault == "break" else None)
        message = {"role": "assistant", "content": None if fault == "notext" else text}
        if script.reasoning:
            message["reasoning_content"] = script.reasoning
        choices = [] if fault == "empty" else [{"index": 0, "finish_reason": finish, "message": message}]
        return 200, {}, {**head, "object": "chat.completion", "choices": choices, "usage": usage}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet: tests and benchmarks print their own summaries
                pass

            def _send(self, status: int, headers: dict, payload) -> None:
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def do_GET(self):
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    self._send(200, {}, {"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]})
                else:
                    self._send(404, {}, _error(f"no route {self.path}", "not_found"))

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    self._send(404, {}, _error(f"no route {self.path}", "not_found"))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, {}, _error("the body is not JSON", "invalid_request_error"))
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra_headers, payload = fake.completion(body if isinstance(body, dict) else {}, headers)
                if payload is DISCONNECT:
                    self.close_connection = True
                    return
                if isinstance(payload, Stream):
                    self._stream(payload)
                    return
                self._send(status, extra_headers, payload)

            def _stream(self, stream: Stream) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")  # no length: the end of the body is the close
                self.end_headers()
                self.close_connection = True
                start = time.monotonic()
                try:
                    for i, event in enumerate(stream.events):
                        if stream.cut is not None and i >= stream.cut:
                            return  # closed mid-reply, without the final event or [DONE]
                        if i and stream.delay:
                            # on a schedule from the first event, as a server generating at a steady rate: one sleep
                            # after each write let a loaded machine's lag add up (0.1 s a word ran at 7.3 a second)
                            time.sleep(max(0.0, start + i * stream.delay - time.monotonic()))
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler


def _error(message: str, code: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--port", type=int, default=8011, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--model", action="append", default=[], help="a model name to serve (repeatable)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per reply for --model models")
    parser.add_argument("--reply", action="append", default=[], help="scripted reply, cycled (default: echo)")
    parser.add_argument("--script", help="JSON file: {model name: {replies, latency, faults, ...}}")
    parser.add_argument("--api-key-env", default="", help="require the key held in this environment variable")
    args = parser.parse_args(argv)
    models: dict[str, Any] = {}
    if args.script:
        with open(args.script, encoding="utf-8") as handle:
            models.update(json.load(handle))
    for name in args.model:
        models[name] = {"latency": args.latency, "replies": list(args.reply)}
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    if args.api_key_env and not key:
        parser.error(f"the variable {args.api_key_env} is not set")
    try:
        fake = FakeOpenAI(models or None, port=args.port, api_key=key)
    except (ValueError, TypeError, OSError) as error:
        print(f"fake_openai: {error}", file=sys.stderr)
        return 2
    print(f"fake OpenAI-compatible server at {fake.base_url} serving {', '.join(fake.models)} (Ctrl-C stops)",
          flush=True)
    try:
        fake.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        fake.server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
