"""The fake's webhooks, as Prolific's docs describe them ("Webhooks": Subscribing, Receiving, Idempotency and
the X-Event-ID header, Handling event order with X-Timestamp, Verifying): one secret per workspace; a
subscription is created disabled, with an ``X-Hook-Secret`` header the researcher sends back to confirm it;
then every status change of a submission in the workspace is POSTed to its ``target_url`` as
``{"resource_id", "event_type": "submission.status.change", "participant_id", "status"}``, signed:
``X-Prolific-Request-Signature`` = base64(HMAC-SHA256(secret, X-Prolific-Request-Timestamp + body)), with
``X-Event-ID`` (the same on a redelivery) and ``X-Timestamp`` (when the event was sent). Delivery is at least
once: a failed one is sent again. ``send`` lets a test send what Prolific would not: a bad signature, a replay,
an event older than one already sent.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import queue
import secrets
import threading
import time
from urllib.parse import urlparse

from parlai_dialeval.providers.prolific.fake.core import ApiError, Reply

EVENT_TYPES = ("submission.status.change", "study.status.change")
SUBMISSION_EVENT = "submission.status.change"
REDELIVERIES = 3  # tries of a delivery that failed (Prolific: "delivered at least once")


def signature(secret: str, timestamp: str, body: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()).decode()


class HooksMixin:
    _outbox: queue.Queue | None = None

    # ------------------------------------------------------------------ API
    def api_hook_secrets(self, query, body):
        ws = (query.get("workspace_id") or [""])[0]
        self.get(self.workspaces, ws, "workspace")
        return {"results": [dict(self.secrets[ws])] if ws in self.secrets else []}

    def api_create_hook_secret(self, query, body):
        ws = body.get("workspace_id") or ""
        self.get(self.workspaces, ws, "workspace")
        self.secrets[ws] = {"id": self.new_id("sec"), "value": secrets.token_urlsafe(32), "workspace_id": ws}
        return dict(self.secrets[ws])  # replaces the workspace's secret: one active secret per workspace

    def api_hook_subscriptions(self, query, body):
        ws = (query.get("workspace_id") or [None])[0]
        return [self._public(s) for s in self.subscriptions.values() if ws is None or s["workspace_id"] == ws]

    @staticmethod
    def _public(sub: dict) -> dict:
        return {k: sub[k] for k in ("id", "event_type", "target_url", "is_enabled", "workspace_id")}

    def api_create_hook_subscription(self, query, body):
        ws = body.get("workspace_id") or ""
        self.get(self.workspaces, ws, "workspace")
        if body.get("event_type") not in EVENT_TYPES:
            raise ApiError(400, f"event_type: one of {list(EVENT_TYPES)}")
        target = urlparse(str(body.get("target_url") or ""))
        loopback = target.scheme == "http" and target.hostname in ("127.0.0.1", "localhost")
        if not (target.scheme == "https" or loopback) or not target.hostname:
            raise ApiError(400, "target_url must use https:// and be publicly accessible")
        if ws not in self.secrets:
            raise ApiError(400, "create a secret for the workspace before subscribing")
        sid = self.new_id("hook")
        self.subscriptions[sid] = {"id": sid, "event_type": body["event_type"], "target_url": body["target_url"],
                                   "is_enabled": False, "workspace_id": ws, "hook_secret": secrets.token_hex(16)}
        return Reply(self._public(self.subscriptions[sid]), {"X-Hook-Secret": self.subscriptions[sid]["hook_secret"]})

    def api_confirm_hook_subscription(self, sid, query, body):
        sub = self.get(self.subscriptions, sid, "subscription")
        if not hmac.compare_digest(str(body.get("secret") or ""), sub["hook_secret"]):
            raise ApiError(400, "secret: not this subscription's X-Hook-Secret")
        sub["is_enabled"] = True
        return self._public(sub)

    def api_delete_hook_subscription(self, sid, query, body):
        self.get(self.subscriptions, sid, "subscription")
        del self.subscriptions[sid]

    # ------------------------------------------------------------------ events
    def status_changed(self, sub: dict) -> None:
        """Queue ``submission.status.change`` for every enabled subscription of the submission's workspace."""
        study = self.studies.get(sub["study_id"])
        if study is None or study.get("project") not in self.projects:
            return
        ws = self.projects[study["project"]]["workspace"]
        event = {"resource_id": sub["id"], "event_type": SUBMISSION_EVENT, "participant_id": sub["participant_id"],
                 "status": sub["status"]}
        for hook in self.subscriptions.values():
            if hook["workspace_id"] == ws and hook["event_type"] == SUBMISSION_EVENT and hook["is_enabled"]:
                self._queue(hook["target_url"], ws, event)

    def _queue(self, url: str, ws: str, event: dict) -> None:
        if self._outbox is None:
            self._outbox = queue.Queue()
            threading.Thread(target=self._deliver_queued, name="fake-prolific-hooks", daemon=True).start()
        self._outbox.put((url, ws, event, self.new_id("evt"), time.time()))

    def _deliver_queued(self) -> None:
        while True:
            url, ws, event, event_id, sent_at = self._outbox.get()
            for attempt in range(REDELIVERIES):
                if self.send(url, ws, event, event_id=event_id, sent_at=sent_at) in (200, 201, 202, 204):
                    break
                time.sleep(0.2 * (attempt + 1))

    def send(self, url: str, ws: str, event: dict, event_id: str | None = None, sent_at: float | None = None,
             bad_signature: bool = False, raw: bytes | None = None) -> int:
        """POST one event to ``url``, signed with the workspace's secret (``bad_signature``: with another);
        ``raw``: these exact bytes (a replay of a delivery). Returns the answer's status (0: no answer)."""
        import httpx

        with self.lock:
            secret = (self.secrets.get(ws) or {}).get("value", "")
        body = raw if raw is not None else json.dumps(event).encode()
        stamp = str(int(time.time()))
        headers = {"Content-Type": "application/json", "X-Event-ID": event_id or self.new_id("evt"),
                   "X-Timestamp": str(int(sent_at if sent_at is not None else time.time())),
                   "X-Prolific-Request-Timestamp": stamp,
                   "X-Prolific-Request-Signature": signature("not-" + secret if bad_signature else secret, stamp, body)}
        try:
            answer = httpx.post(url, content=body, headers=headers, timeout=10)
            status, text = answer.status_code, answer.text[:200]
        except httpx.HTTPError:
            status, text = 0, ""
        with self.lock:
            self.deliveries.append({"url": url, "headers": headers, "body": body.decode(errors="replace"),
                                    "event": json.loads(body) if raw is None else None, "status": status,
                                    "text": text})
        return status

    def replay(self, delivery: dict) -> int:
        """Send a recorded delivery again byte for byte, its headers included (what an eavesdropper could)."""
        import httpx

        try:
            return httpx.post(delivery["url"], content=delivery["body"].encode(), headers=delivery["headers"],
                              timeout=10).status_code
        except httpx.HTTPError:
            return 0
