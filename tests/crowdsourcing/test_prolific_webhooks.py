"""Issue 53, item 2: Prolific's webhooks free the place of a participant who returned or timed out at once.
Against the fake Prolific, which subscribes, signs and sends events as Prolific's docs describe them (and,
asked, a bad signature, a replay, an event older than one already sent): a launch with a webhook address
subscribes and confirms; a return reaches the receiver and returns the agent before the receiver answers
Prolific's request (polling would take up to 10 s), and its unit goes to the next participant; a badly signed,
replayed or out-of-order event changes nothing; the run's stop unsubscribes. Every event the fake sent fits the
contract (the ``fake`` fixture)."""
from __future__ import annotations

import time

import httpx
import pytest

from parlai_dialeval.testing.ports import free_port

from .prolific_harness import fake  # noqa: F401,F811  (the fixture)
from .prolific_harness import ProlificMockRun, arrive, knock, register, scale_items, scale_overrides

pytestmark = pytest.mark.slow


class _Never(dict):
    """A unit's last poll, always just now: no polling (only the webhook can tell us)."""

    def get(self, key, default=None):
        return float("inf")


def _hooked_run(tmp_path, fake, monkeypatch, task_name: str, units: int):  # noqa: F811
    from parlai_dialeval.providers.prolific.models import ProlificUnit

    monkeypatch.setattr(ProlificUnit, "_last_poll", _Never())
    register(tmp_path / "mephisto", fake, monkeypatch)
    port = free_port()
    with fake.state.lock:  # a killed launch's subscription to the same address: replaced, not doubled
        ws = next(iter(fake.state.workspaces))
        fake.state.api_create_hook_secret({}, {"workspace_id": ws})
        stale = fake.state.api_create_hook_subscription({}, {
            "workspace_id": ws, "event_type": "submission.status.change",
            "target_url": f"http://127.0.0.1:{port}/prolific-hooks"}).payload
        fake.state.subscriptions[stale["id"]]["is_enabled"] = True
    run = ProlificMockRun("scale_designs", tmp_path / "mephisto", free_port(), fake, [
        *scale_overrides(scale_items(tmp_path / "i.jsonl", units), task_name),
        f"mephisto.provider.webhook_url=http://127.0.0.1:{port}/prolific-hooks", f"mephisto.provider.webhook_port={port}"])
    return run, f"http://127.0.0.1:{port}/prolific-hooks"


def _status(run, agent) -> str:
    return run.db.get_agent(agent.db_id)["status"]


def test_a_return_frees_the_place_at_once_and_forged_events_change_nothing(tmp_path, fake, monkeypatch):  # noqa: F811
    from parlai_dialeval.providers.prolific import webhooks
    from parlai_dialeval.providers.prolific.models import POLL_SECONDS

    run, url = _hooked_run(tmp_path, fake, monkeypatch, "sd_hooks", 1)
    try:
        study = run.study["study_id"]
        (hook,) = fake.state.subscriptions.values()  # the stale one deleted
        assert hook["is_enabled"] and hook["target_url"] == url and hook["event_type"] == "submission.status.change"
        ws = hook["workspace_id"]
        a = arrive(fake, study, "PID_A")
        assert knock(run, "PID_A", a["SESSION_ID"], study)["agent_id"]
        agent_a = run.unit_agent("PID_A")  # the study's one place is A's

        # a forged return of A: a bad signature, then an event out of order; neither changes anything
        forged = {"resource_id": a["SESSION_ID"], "event_type": "submission.status.change",
                  "participant_id": "PID_A", "status": "RETURNED"}
        assert fake.state.send(url, ws, forged, bad_signature=True) == 401
        started = next(d for d in fake.state.deliveries if d["event"] and d["event"]["resource_id"] == a["SESSION_ID"])
        older = int(started["headers"]["X-Timestamp"]) - 60  # sent before A's start, delivered after it
        assert fake.state.send(url, ws, forged, sent_at=older) == 200
        assert _status(run, agent_a) == "in task"

        returned_at = time.monotonic()
        fake.leave(a["SESSION_ID"])  # A returns the study on Prolific: the fake sends the event
        run.wait(lambda: _status(run, agent_a) == "returned", POLL_SECONDS, "A's agent returned by the webhook")
        assert time.monotonic() - returned_at < POLL_SECONDS  # sooner than a poll could (and polling is off)
        def answers():  # the fake records a delivery once its answer is back, which can be after the status changed
            return [d["text"] for d in fake.state.deliveries if d["event"] and d["status"] == 200
                    and d["event"] == forged and d["text"] != "older"]
        run.wait(answers, 10, "Prolific's record of the answer to A's return")
        (answer,) = answers()
        assert answer == "freed 1"  # freed while Prolific's request was answered: at once, whatever the load
        c = arrive(fake, study, "PID_C")  # Prolific gives A's place to C...
        for _ in range(40):  # ... and so do we (C reloads until Mephisto's runner has let the unit go)
            if knock(run, "PID_C", c["SESSION_ID"], study)["agent_id"] is not None:
                break
            time.sleep(0.5)
        else:
            raise AssertionError("C never got the place A left")

        # a replay of A's return, byte for byte: a duplicate, nothing done again
        event = [d for d in fake.state.deliveries if d["event"] and d["event"]["status"] == "RETURNED"
                 and d["status"] == 200 and d["event"]["resource_id"] == a["SESSION_ID"]][-1]
        assert fake.state.replay(event) == 200
        outcomes = run.store.all("SELECT outcome FROM hook_events WHERE submission_id = ?", a["SESSION_ID"])
        assert sorted(o["outcome"] for o in outcomes) == ["applied", "applied", "older"]  # ACTIVE, RETURNED, forged
        assert httpx.get(url).status_code == 405 and httpx.post(url, content=b"x" * 20000).status_code == 413

        webhooks.stop(run.db, run.live_run.task_run.db_id)  # the run's stop: unsubscribed, receiver closed
        assert fake.state.subscriptions == {}
        with pytest.raises(httpx.TransportError):
            httpx.post(url, content=b"{}", timeout=2)
    finally:
        run.shutdown()


def test_a_stale_timestamp_and_a_missing_signature_are_refused(tmp_path, fake, monkeypatch):  # noqa: F811
    """A signature is only as good as its timestamp: a request signed ten minutes ago is refused even when its
    signature holds (an eavesdropper's replay after the de-duplication window)."""
    from parlai_dialeval.providers.prolific.webhooks import signed

    run, url = _hooked_run(tmp_path, fake, monkeypatch, "sd_hooks_stale", 1)
    try:
        (hook,) = fake.state.subscriptions.values()
        secret = fake.state.secrets[hook["workspace_id"]]["value"]
        body = b'{"resource_id": "x", "event_type": "submission.status.change", "participant_id": "p", "status": "RETURNED"}'
        stale = str(int(time.time()) - 600)
        assert httpx.post(url, content=body, headers={"X-Prolific-Request-Timestamp": stale,
                                                      "X-Prolific-Request-Signature": signed(secret, stale, body)}
                          ).status_code == 401
        assert httpx.post(url, content=body).status_code == 401
        now = str(int(time.time()))
        assert httpx.post(url, content=body, headers={"X-Prolific-Request-Timestamp": now,
                                                      "X-Prolific-Request-Signature": signed(secret, now, body)}
                          ).text == "unknown"  # a submission of no run of ours: noted nowhere
    finally:
        run.shutdown()
