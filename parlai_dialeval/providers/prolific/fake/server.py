"""The fake Prolific's HTTP side: a stdlib server on 127.0.0.1 that answers the API (``/api/v1/``, logging
every call for the contract tests, with injectable faults) and the pages and hooks people and tests use.

It is a stdlib server, not a framework app, so that it starts in milliseconds inside tests and needs nothing
beyond Python.
"""
from __future__ import annotations

import argparse
import json
import re
import threading
import time
from html import escape
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

from parlai_dialeval.providers.prolific.fake.core import API, ApiError, FakeProlificBase
from parlai_dialeval.providers.prolific.fake.hooks import HooksMixin
from parlai_dialeval.providers.prolific.fake.people import PeopleMixin
from parlai_dialeval.providers.prolific.fake.studies import StudiesMixin


class FakeProlificState(StudiesMixin, PeopleMixin, HooksMixin, FakeProlificBase):
    """The whole fake Prolific's state (core.py), with the handlers of every endpoint (the mixins)."""


def _retry_after(fault: dict) -> dict:
    return {"Retry-After": fault["retry_after"]} if fault.get("retry_after") is not None else {}


class _Handler(BaseHTTPRequestHandler):
    state: "FakeProlificState"  # set by FakeProlific
    server_version = "FakeProlific/1"

    def log_message(self, fmt, *args):  # quiet: the call log is in the state
        return

    def _send(self, status: int, payload, headers: dict | None = None, content_type="application/json"):
        headers = dict(headers or {})
        content_type = headers.pop("Content-Type", content_type)
        if payload is None:
            data = b""
        elif isinstance(payload, str) and content_type != "application/json":
            data = payload.encode()
        else:
            data = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, str(value))
        if data:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return {}
        try:
            return json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            return {}

    def _dispatch(self, method: str):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        body = self._body()
        st = self.state
        delay = 0.0
        with st.lock:
            try:
                if not url.path.startswith(API):
                    return self._hook(method, url.path, query, body)
                status, payload, headers, delay = self._api(method, url.path, query, body)
            except ApiError as error:
                status, payload, headers = error.status, {"error": {"status": error.status, "detail": error.detail}}, \
                    error.headers
        if delay:  # outside the lock: only this answer is late
            time.sleep(delay)
        try:
            self._send(status, payload, headers)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (its timeout)
            pass

    def _api(self, method, path, query, body) -> tuple[int, object, dict, float]:
        st = self.state
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Token "):] if auth.startswith("Token ") else None
        fault = st.take_fault(method, path)
        call = {"method": method, "path": path, "query": {k: v[0] for k, v in query.items()}, "body": body,
                "time": time.time()}
        st.calls.append(call)
        delay = float(fault.get("delay") or 0) if fault else 0.0
        if fault and not fault.get("after"):
            call["status"] = fault["status"]
            raise ApiError(fault["status"], f"injected fault {fault['status']}", _retry_after(fault))
        try:
            result = st.handle(method, path, query, body, token)
        except ApiError as error:
            call["status"] = error.status
            raise
        status, payload, headers = result
        call["answer"] = json.loads(json.dumps(payload))  # a copy: later changes to the state do not show
        if fault:  # the work is done, but the answer is lost: what makes a 5xx on a payment ambiguous
            call["status"] = fault["status"]
            detail = f"injected fault {fault['status']} (after doing the work)"
            error = {"error": {"status": fault["status"], "detail": detail}}
            return fault["status"], error, _retry_after(fault), delay
        call["status"] = status
        return status, payload, headers, delay

    def _hook(self, method, path, query, body):
        st = self.state
        start = re.fullmatch(r"/studies/([^/]+)/start/?", path)
        if method == "GET" and start:
            url, sub = st.start(start[1], (query.get("PROLIFIC_PID") or [""])[0] or st.new_id("pid"))
            cookie = SimpleCookie()
            cookie["fake_prolific_session"] = sub["id"]
            cookie["fake_prolific_session"]["path"] = "/"
            cookie["fake_prolific_session"]["max-age"] = 86400  # signed in to Prolific across browser restarts
            self._send(302, None, {"Location": url, "Set-Cookie": cookie.output(header="").strip()})
        elif method == "GET" and path.rstrip("/") == "/submissions/complete":
            cookie = SimpleCookie(self.headers.get("Cookie") or "")
            session = cookie["fake_prolific_session"].value if "fake_prolific_session" in cookie else None
            code, pid = (query.get("cc") or [""])[0], (query.get("participant") or [None])[0]
            try:
                sub = st.complete(code, session, pid) if code else st.own_submission(session, pid)
            except ApiError as error:  # a page for people: what went wrong, in words, never raw JSON
                self._send(error.status, f"<html><body><h1 id='no-submission'>Prolific</h1><p>{escape(error.detail)}"
                                         "</p></body></html>", content_type="text/html")
                return
            if sub["status"] == "ACTIVE":
                self._send(200, "<html><head><meta http-equiv='refresh' content='1'></head><body><h1 id='waiting'>"
                                "Waiting for the study to confirm your submission</h1></body></html>",
                           content_type="text/html")
                return
            self._send(200, f"<html><body><h1 id='complete'>Submission complete</h1><p>Study {sub['study_id']}: "
                            f"{sub['status'].lower()}.</p></body></html>", content_type="text/html")
        elif method == "GET" and path == "/__fake__/state":
            self._send(200, st.state())
        elif method == "POST" and path == "/__fake__/faults":
            st.faults.append({"status": int(body["status"]), "count": int(body.get("count", 1)),
                              "path": body.get("path", ""), "retry_after": body.get("retry_after"),
                              "after": bool(body.get("after")), "delay": float(body.get("delay") or 0),
                              **({"method": body["method"].upper()} if body.get("method") else {})})
            self._send(200, {"faults": st.faults})
        elif method == "POST" and path == "/__fake__/balance":
            for balance in st.balances.values():
                balance["available_balance"] = int(body["available_balance"])
            st.held_in_total()
            self._send(200, {"balances": st.balances})
        elif method == "POST" and path == "/__fake__/return":
            sub = st.get(st.submissions, body.get("submission_id", ""), "submission")
            status = body.get("status") or "RETURNED"
            if status not in ("RETURNED", "TIMED-OUT", "SCREENED OUT"):
                raise ApiError(400, "status: RETURNED, TIMED-OUT or SCREENED OUT")
            self._send(200, st.set_status(sub, status))
        else:
            raise ApiError(404, f"no such page: {method} {path}")

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")


class FakeProlific:
    """``with FakeProlific() as fake:`` serves on 127.0.0.1 in a thread; ``fake.api_base_url`` etc."""

    def __init__(self, port: int = 0, **state_kwargs):
        self.state = FakeProlificState(**state_kwargs)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def api_base_url(self) -> str:
        return self.base_url + API

    @property
    def completion_url(self) -> str:
        return self.base_url + "/submissions/complete"

    def study_url(self, study_id: str, participant_id: str) -> str:
        """The address a participant opens on Prolific to take part (``/studies/<id>/start``)."""
        return f"{self.base_url}/studies/{study_id}/start?{urlencode({'PROLIFIC_PID': participant_id})}"

    def inject(self, status: int, count: int = 1, path: str = "", method: str | None = None,
               retry_after: float | None = None, after: bool = False, delay: float = 0.0) -> None:
        """The next ``count`` API calls matching ``path`` (a regex) and ``method`` answer ``status``;
        ``after``: only once the work is done (a lost answer); ``delay``: that many seconds late."""
        with self.state.lock:
            self.state.faults.append({"status": status, "count": count, "path": path, "retry_after": retry_after,
                                      "after": after, "delay": delay, **({"method": method.upper()} if method else {})})

    def leave(self, submission_id: str, status: str = "RETURNED") -> dict:
        """The participant returns the study (or times out, or is screened out): subscribers are told."""
        with self.state.lock:
            return self.state.set_status(self.state.get(self.state.submissions, submission_id, "submission"), status)

    def start(self) -> "FakeProlific":
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fake-prolific", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "FakeProlific":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A fake Prolific API on 127.0.0.1, to rehearse a study without money")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    parser.add_argument("--token", default="rehearsal-token", help="the API token the fake accepts")
    parser.add_argument("--balance", type=float, default=500.0, help="workspace balance in major units (default 500)")
    parser.add_argument("--currency", default="GBP", help="workspace currency (default GBP)")
    args = parser.parse_args(argv)
    fake = FakeProlific(args.port, token=args.token, balance=round(args.balance * 100), currency=args.currency)
    print(f"Fake Prolific on {fake.base_url} (token {args.token!r}, balance {args.balance:.2f} {args.currency})\n"
          f"  mephisto.provider.api_base_url={fake.api_base_url}\n"
          f"  mephisto.provider.completion_url={fake.completion_url}\n"
          f"  studies and submissions: {fake.base_url}/__fake__/state\n"
          f"  take part: {fake.base_url}/studies/<STUDY_ID>/start?PROLIFIC_PID=<any id>\n"
          "Ctrl-C stops it (its state is kept in memory only).", flush=True)
    try:
        fake.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        fake.httpd.server_close()
