"""Prolific's webhooks: a return or a time-out frees its place the moment Prolific says so.

When the study has a public address for them (``mephisto.provider.webhook_url``, forwarded by the researcher's
reverse proxy to ``webhook_port`` on this machine), the launch subscribes the workspace's
``submission.status.change`` events (Prolific's docs, "Monitoring study progress": the workspace's secret, read
or created once; the subscription, confirmed with its ``X-Hook-Secret``, after deleting one a killed launch left
for the same address; Prolific's CLI client.go CreateHookSubscription, ConfirmHookSubscription) and serves them
here; the run's stop unsubscribes. Polling
(``ProlificUnit.get_status``) stays, for whatever an event missed and for rehearsals without an address.

Each event is trusted only as Prolific's docs say to ("Verifying", "Idempotency and the X-Event-ID header",
"Handling event order with X-Timestamp"): the body and ``X-Prolific-Request-Timestamp`` must carry the
``X-Prolific-Request-Signature`` made with the workspace's secret (HMAC-SHA256, base64), the timestamp within
``MAX_SKEW`` seconds of ours; an event id seen before changes nothing (a redelivery, a replay); an event sent
before the last one applied to its submission changes nothing (out of order). (Two events may carry the same
signature: the body names no time, and two changes within one second sign alike. What an eavesdropper could
resend within the five minutes under another event id is Prolific's own news again: freeing a place twice
frees it once.) Then a submission
that was returned, timed out or screened out gives its unit back at once: its agent is returned, as the poll
would after up to 10 s. The receiver is waitress (bounded headers and body, idle connections dropped), on
127.0.0.1: only the researcher's proxy reaches it.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass

from mephisto.utils.logger_core import get_logger

from parlai_dialeval.providers.prolific import common, verify
from parlai_dialeval.providers.prolific.api import ProlificError

logger = get_logger(name=__name__)
EVENT = "submission.status.change"
MAX_SKEW = 300  # seconds between a request's signed timestamp and ours: older (or later) is refused
MAX_BODY = 16 * 1024  # bytes: an event is a few hundred
CHANNEL_TIMEOUT = 20  # seconds a connection may sit idle before it is closed
TABLE = """CREATE TABLE IF NOT EXISTS hook_events (
    event_id TEXT PRIMARY KEY, signature TEXT, submission_id TEXT, status TEXT, sent_at INTEGER,
    received REAL, outcome TEXT)"""
HOOKS = """CREATE TABLE IF NOT EXISTS hooks (
    task_run_id TEXT PRIMARY KEY, workspace_id TEXT, subscription_id TEXT, target_url TEXT, port INTEGER)"""


def signed(secret: str, timestamp: str, body: bytes) -> str:
    """Prolific's signature of a request: base64(HMAC-SHA256(secret, timestamp + body)) (docs "Verifying")."""
    return base64.b64encode(hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()).decode()


@dataclass
class Receiver:
    db: object
    task_run_id: str
    secret: str
    server: object = None
    thread: threading.Thread | None = None

    def __call__(self, environ, start_response):
        """The WSGI app: one event per POST."""
        status, text = self.receive(environ)
        start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
        return [text.encode()]

    def receive(self, environ) -> tuple[str, str]:
        if environ.get("REQUEST_METHOD") != "POST":
            return "405 Method Not Allowed", "events are POSTed"
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return "400 Bad Request", "no length"
        if not 0 < length <= MAX_BODY:
            return "413 Payload Too Large", f"an event is at most {MAX_BODY} bytes"
        body = environ["wsgi.input"].read(length)
        stamp = environ.get("HTTP_X_PROLIFIC_REQUEST_TIMESTAMP", "")
        signature = environ.get("HTTP_X_PROLIFIC_REQUEST_SIGNATURE", "")
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > MAX_SKEW:
            logger.warning("refused a webhook request: no timestamp, or signed more than 5 minutes away from now")
            return "401 Unauthorized", "stale or missing timestamp"
        if not hmac.compare_digest(signed(self.secret, stamp, body).encode(), signature.encode()):
            logger.warning("refused a webhook request: its signature is not Prolific's")
            return "401 Unauthorized", "bad signature"
        try:
            event = json.loads(body)
            submission, status = str(event["resource_id"]), str(event["status"])
        except (ValueError, KeyError, TypeError):
            return "400 Bad Request", "not an event"
        if event.get("event_type") != EVENT:
            return "200 OK", "ignored"
        event_id = environ.get("HTTP_X_EVENT_ID", "")[:100] or signature
        sent = environ.get("HTTP_X_TIMESTAMP", "")
        return "200 OK", apply(self.db, self.task_run_id, event_id, signature, submission, status,
                               int(sent) if sent.isdigit() else int(stamp))

    def stop(self) -> None:
        from waitress import wasyncore

        try:  # closed on the server's own loop (its sockets are not thread-safe); an empty map ends it
            self.server.trigger.pull_trigger(lambda: wasyncore.close_all(self.server._map))
        except OSError:
            pass
        self.thread.join(10)
        self.server.task_dispatcher.shutdown()


def _events(db):
    store = common.datastore(db)
    store.run(TABLE)
    store.run(HOOKS)
    return store


def apply(db, task_run_id: str, event_id: str, signature: str, submission: str, status: str, sent_at: int) -> str:
    """Act on one verified event once; returns what became of it (``duplicate``, ``older``, ``unknown``,
    ``freed N``, ``noted``)."""
    store = _events(db)
    with store.connect() as con:  # one transaction: two deliveries of one event cannot both pass
        seen = con.execute("SELECT 1 FROM hook_events WHERE event_id = ?", (event_id,)).fetchone()
        if seen:
            return "duplicate"
        last = con.execute("SELECT MAX(sent_at) AS at FROM hook_events WHERE submission_id = ? AND outcome != "
                           "'older'", (submission,)).fetchone()["at"]
        outcome = "older" if last is not None and sent_at < last else "applied"
        con.execute("INSERT INTO hook_events VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (event_id, signature, submission, status, sent_at, time.time(), outcome))
    if outcome == "older":
        return "older"
    if store.one("SELECT 1 AS known FROM agents WHERE submission_id = ? AND task_run_id = ?", submission,
                 str(task_run_id)) is None:
        return "unknown"
    freed = verify.changed(db, task_run_id, submission, status)
    return f"freed {freed}" if status in verify.GONE else "noted"


# ---------------------------------------------------------------- a run's subscription
_receivers: dict[str, Receiver] = {}


def start(db, task_run_id: str, client, workspace_id: str, target_url: str, port: int = 0) -> str:
    """Serve the receiver, subscribe ``target_url`` to the workspace's submission events and confirm it;
    returns the line to print. A failure leaves polling alone to do the work (said in the line)."""
    from waitress.server import create_server

    try:
        found = client.hook_secrets(workspace_id)
        secret = found[0]["value"] if found else client.create_hook_secret(workspace_id)["value"]
    except ProlificError as error:
        return f"Prolific webhooks are off (no secret: {error}); returns are noticed by polling every 10 s"
    receiver = Receiver(db, str(task_run_id), secret)
    receiver.server = create_server(receiver, host="127.0.0.1", port=port, threads=2, channel_timeout=CHANNEL_TIMEOUT,
                                    cleanup_interval=5, connection_limit=100, max_request_header_size=8192,
                                    max_request_body_size=MAX_BODY, ident="", expose_tracebacks=False)
    receiver.thread = threading.Thread(target=receiver.server.run, name="dialeval-prolific-hooks", daemon=True)
    receiver.thread.start()
    try:
        for stale in client.hook_subscriptions(workspace_id):  # a killed launch's, to the same address
            if stale.get("target_url") == target_url and stale.get("event_type") == EVENT:
                client.delete_hook_subscription(stale["id"])
        hook, hook_secret = client.create_hook_subscription(workspace_id, EVENT, target_url)
        client.confirm_hook_subscription(hook["id"], hook_secret)
    except ProlificError as error:
        receiver.stop()
        return f"Prolific webhooks are off ({error}); returns are noticed by polling every 10 s"
    _events(db).run("INSERT OR REPLACE INTO hooks VALUES (?, ?, ?, ?, ?)", str(task_run_id), workspace_id, hook["id"],
                    target_url, receiver.server.effective_port)
    _receivers[str(task_run_id)] = receiver
    return (f"Prolific sends returns and time-outs to {target_url} (forward it to 127.0.0.1:"
            f"{receiver.server.effective_port}); polling stays as the fallback")


def port(task_run_id: str) -> int | None:
    """The local port of a run's receiver (None: no webhooks)."""
    receiver = _receivers.get(str(task_run_id))
    return receiver.server.effective_port if receiver else None


def stop(db, task_run_id: str) -> None:
    """Unsubscribe the run's webhook (if any) and stop its receiver; a failure is logged (Prolific disables a
    subscription whose address keeps failing)."""
    receiver = _receivers.pop(str(task_run_id), None)
    store = _events(db)
    row = store.one("SELECT * FROM hooks WHERE task_run_id = ?", str(task_run_id))
    if row is not None and row["subscription_id"]:
        try:
            client, _ = common.client_for_run(db, task_run_id)
            try:
                client.delete_hook_subscription(row["subscription_id"])
            finally:
                client.close()
            store.run("DELETE FROM hooks WHERE task_run_id = ?", str(task_run_id))
        except Exception as error:  # noqa: BLE001  (stopping: say it, go on)
            logger.warning(f"could not unsubscribe Prolific webhook {row['subscription_id']}: {error}")
    if receiver is not None:
        receiver.stop()
