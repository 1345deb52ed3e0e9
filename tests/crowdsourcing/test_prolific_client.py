"""The Prolific API client against the fake (no Mephisto run): money in minor units, bounded retries
that wait as Retry-After says, which calls are retried on 5xx, and errors that never show the token."""
from __future__ import annotations

import pytest

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific.api import (ProlificAuthError, ProlificClient, ProlificNotFound,
                                                    ProlificRateLimited, ProlificServerError, to_major, to_minor)

from .prolific_harness import TOKEN
from .prolific_harness import fake  # noqa: F401,F811  (the fixture)


def test_money_is_converted_explicitly():
    assert to_minor("2.50") == 250 and to_minor(2.5) == 250 and to_minor("19.99") == 1999
    assert to_minor("0.005") == 1 and to_minor("0.004") == 0  # half a penny rounds up, less rounds down
    assert to_major(250) == "2.50" and to_major(5) == "0.05"
    with pytest.raises(DialevalError, match="must not be negative"):
        to_minor("-1")


def _client(fake, sleeps, retries=3, token=TOKEN):  # noqa: F811
    return ProlificClient(fake.api_base_url, token, max_retries=retries, sleep=sleeps.append)


def test_retries_wait_as_retry_after_says_and_stop(fake):  # noqa: F811
    sleeps = []
    client = _client(fake, sleeps)
    fake.inject(429, 2, path="users/me", retry_after=7)
    fake.inject(503, 1, path="users/me")
    assert client.me()["id"] and sleeps[:2] == [7.0, 7.0] and 0 < sleeps[2] <= 4  # back-off without Retry-After
    sleeps.clear()
    fake.inject(429, 10, path="workspaces", retry_after=1)
    with pytest.raises(ProlificRateLimited, match="still rate limited after 3 retries"):
        client.workspaces()
    assert sleeps == [1.0, 1.0, 1.0]  # bounded: max_retries waits, then the error


def test_calls_that_may_have_done_their_work_are_not_retried_on_5xx(fake):  # noqa: F811
    """Paying bonuses and sending a message are not idempotent (endpoints.py: retried on 429 only); a read asked
    not to wait is not retried either."""
    sleeps = []
    client = _client(fake, sleeps)
    fake.inject(500, 2, path="bulk-bonus-payments|messages")
    with pytest.raises(ProlificServerError, match="HTTP 500"):
        client.pay_bonuses("bon0001deadbeef")
    with pytest.raises(ProlificServerError, match="HTTP 500"):
        client.send_message("PID_1", "stu0001deadbeef", "Thank you")
    fake.inject(503, 1, path="submissions/")
    with pytest.raises(ProlificServerError, match="HTTP 503"):
        client.submission("sub0001deadbeef", retry=frozenset())
    assert sleeps == []


def test_errors_name_the_call_never_the_token(fake):  # noqa: F811
    sleeps = []
    with pytest.raises(ProlificAuthError) as refused:
        _client(fake, sleeps, token="tok-wrong-5d1c").me()
    assert "HTTP 401" in str(refused.value) and "tok-wrong-5d1c" not in str(refused.value)
    assert "tok-wrong-5d1c" not in repr(_client(fake, sleeps, token="tok-wrong-5d1c"))
    with pytest.raises(ProlificNotFound, match="study stu0999deadbeef not found"):
        _client(fake, sleeps).study("stu0999deadbeef")


def test_clients_share_one_load_of_the_certificates(monkeypatch):
    """A client is made for every arrival check and unit status poll; httpx loaded the certificate bundle for
    each (38 ms of CPU), half the launch's time under a flood of made-up Prolific arrivals (issue 52). A chatbot
    conversation's endpoint client did the same for every conversation."""
    import ssl

    from parlai_dialeval.agents.openai_chat.client import ChatEndpoint, EndpointSettings
    from parlai_dialeval.tls import shared_tls_context

    shared_tls_context.cache_clear()
    loads = []
    load = ssl.SSLContext.load_verify_locations
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", lambda self, *a, **k: loads.append(1) or load(self, *a, **k))
    clients = [ProlificClient("https://api.prolific.com/api/v1/", TOKEN) for _ in range(5)]
    endpoints = [ChatEndpoint(EndpointSettings(base_url="https://api.example.org/v1", model="m")) for _ in range(5)]
    assert len(loads) == 1
    for client in clients:
        client.close()
    for endpoint in endpoints:
        endpoint.client.close()


def test_a_silent_api_is_given_up_on_saying_how_often_and_how_long_it_was_tried(capsys):
    """A server that takes the connection and never answers held `prolific register` 3.5 minutes, silent, and then
    said only 'no answer (ReadTimeout)'. Here a real socket that never answers, 0.2 s a try, three tries: each retry
    is said on stderr as it begins, so a person sees the command is not hung."""
    import re
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        client = ProlificClient(url, TOKEN, timeout=0.2, max_retries=2, sleep=lambda seconds: None)
        capsys.readouterr()
        with pytest.raises(DialevalError) as refused:
            client.call("me")
        client.close()
    message = str(refused.value)
    assert re.fullmatch(rf"Prolific GET users/me/: no answer from {re.escape(url)} \(ReadTimeout; tried 3 times over "
                        r"[01] s, waiting up to 0\.2 s for each\)", message), message
    said = capsys.readouterr()
    assert said.out == "" and len(said.err.splitlines()) == 2, said.err  # the two retries; the error is the third try
    for k, line in enumerate(said.err.splitlines(), 1):
        assert re.fullmatch(rf"Prolific GET users/me/: no answer from {re.escape(url)} \(ReadTimeout\): try {k} of 3; "
                            r"trying again in \d+\.\d s", line), line
    assert TOKEN not in message + said.err
