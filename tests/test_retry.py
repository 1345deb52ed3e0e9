"""The one retry policy of outgoing HTTP (parlai_dialeval/retry.py), with an injected clock and random
draw: Retry-After as seconds or an HTTP date (RFC 9110 10.2.3), the cap beyond which a client gives up,
and the capped, jittered exponential back-off; then both clients waiting as it says (no real sleeps)."""
from __future__ import annotations

import email.utils
import time

import pytest
from crowdsourcing.prolific_harness import TOKEN  # tests/crowdsourcing (pytest puts tests/ first on the path)
from crowdsourcing.prolific_harness import fake  # noqa: F401  (the fixture)

from parlai_dialeval.retry import RetryPolicy, retry_after_seconds

NOW = 1_800_000_000.0  # an arbitrary fixed "now"


def http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(NOW + seconds_from_now, usegmt=True)


def test_retry_after_in_seconds_and_as_an_http_date():
    assert retry_after_seconds("7", now=lambda: NOW) == 7.0
    assert retry_after_seconds(http_date(90), now=lambda: NOW) == 90.0
    assert retry_after_seconds(http_date(-30), now=lambda: NOW) == 0.0  # a date gone by: at once
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=lambda: 1445412480.0 - 5) == 5.0  # RFC 9110's own
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None


def test_retry_after_wins_up_to_the_cap_then_the_client_gives_up():
    policy = RetryPolicy(backoff=30, max_retry_after=60)
    assert policy.wait(1, "12", rng=lambda: 0.9) == 12.0  # no jitter on what the server asked
    assert policy.wait(1, http_date(45), now=lambda: NOW) == 45.0
    assert policy.wait(1, "61") is None
    assert policy.wait(1, http_date(3600), now=lambda: NOW) is None


@pytest.mark.parametrize("draw, waits", [(0.0, [1, 2, 4, 8, 10, 10]), (1.0, [0.5, 1, 2, 4, 5, 5])])
def test_backoff_doubles_up_to_its_cap_jittered_down_by_at_most_half(draw, waits):
    policy = RetryPolicy(backoff=1, max_backoff=10, jitter=0.5)
    assert [policy.wait(n, "not a number", rng=lambda: draw) for n in range(1, 7)] == waits


def test_the_chat_client_waits_as_the_policy_says():
    from parlai_dialeval.agents.openai_chat.client import ChatEndpoint, EndpointError, EndpointSettings
    from parlai_dialeval.testing.fake_openai import FakeOpenAI

    with FakeOpenAI({"m": {"faults": ["500", "500"]}}) as fake:
        endpoint = ChatEndpoint(EndpointSettings(base_url=fake.base_url, model="m", backoff=2, max_retries=2))
        endpoint.retry = RetryPolicy(backoff=2, jitter=0.5, max_retry_after=60)
        sleeps = []
        endpoint.complete([{"role": "user", "content": "hi"}], sleep=sleeps.append)
    assert 1 <= sleeps[0] <= 2 and 2 <= sleeps[1] <= 4  # jittered doubling
    with FakeOpenAI({"m": {"faults": ["429"], "retry_after": 3600}}) as fake:
        endpoint = ChatEndpoint(EndpointSettings(base_url=fake.base_url, model="m", max_retries=3))
        sleeps = []
        with pytest.raises(EndpointError, match="asks to retry after 3600 s"):
            endpoint.complete([{"role": "user", "content": "hi"}], sleep=sleeps.append)
    assert sleeps == []


def test_the_prolific_client_gives_up_on_a_retry_after_date_beyond_the_cap(fake):  # noqa: F811
    from parlai_dialeval.providers.prolific.api import ProlificClient, ProlificRateLimited

    sleeps = []
    client = ProlificClient(fake.api_base_url, TOKEN, max_retries=3, sleep=sleeps.append)
    fake.inject(429, 1, path="users/me", retry_after=email.utils.formatdate(time.time() + 3600, usegmt=True))
    with pytest.raises(ProlificRateLimited):
        client.me()
    assert sleeps == []
    fake.inject(429, 1, path="users/me", retry_after=email.utils.formatdate(time.time() + 30, usegmt=True))
    assert client.me()["id"] and len(sleeps) == 1 and 20 <= sleeps[0] <= 31
