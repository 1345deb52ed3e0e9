"""Launch-time checks of endpoint bots: each is pinged once when the task loads its bots, and a wrong
base URL, a missing key variable or an unknown model name stops the launch with one line."""
from __future__ import annotations

import subprocess

import pytest

from parlai_dialeval.crowdsourcing.platform.bots import BotPool
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing.fake_openai import FakeOpenAI
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import DIALEVAL


def endpoint(base_url, model="model-a", **opt):
    return {"opt": {"model": "dialeval:openai_chat", "base_url": base_url, "endpoint_model": model,
                    "retry_backoff": 0.01, **opt}}


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def test_each_endpoint_is_pinged_once_at_load():
    with FakeOpenAI({"model-a": {}, "model-b": {}}) as fake:
        pool = BotPool({"a": endpoint(fake.base_url), "b": endpoint(fake.base_url, "model-b")})
        for _ in range(3):
            pool.new_bot("a")
        assert sorted(r["model"] for r in fake.requests) == ["model-a", "model-b"]
        assert all(r["body"]["max_tokens"] == 1 for r in fake.requests)


@pytest.mark.parametrize("case,expected", [
    ("unreachable", "bot 'a': http://127.0.0.1:{port}/v1/chat/completions is unreachable: ConnectError"),
    ("missing key", "bot 'a': the API key variable DIALEVAL_UNSET_KEY_VAR is not set: export DIALEVAL_UNSET_KEY_VAR=..."),
    ("unknown model", "bot 'a': {url}/chat/completions: model 'no-such-model' not found (HTTP 404: "
                      "The model `no-such-model` does not exist)"),
])
def test_bad_endpoints_stop_the_load_with_one_line(case, expected, monkeypatch):
    monkeypatch.delenv("DIALEVAL_UNSET_KEY_VAR", raising=False)
    with FakeOpenAI() as fake:
        url = dead_url() if case == "unreachable" else fake.base_url
        spec = {"unreachable": endpoint(url), "missing key": endpoint(url, api_key_env="DIALEVAL_UNSET_KEY_VAR"),
                "unknown model": endpoint(url, "no-such-model")}[case]
        with pytest.raises(DialevalError) as error:
            BotPool({"a": spec})
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(expected.format(url=url, port=url.split(":")[-1].split("/")[0]))


@pytest.mark.slow
def test_dialeval_launch_with_an_unreachable_endpoint_exits_2_with_one_line(tmp_path):
    url, port = dead_url(), free_port()
    done = subprocess.run(DIALEVAL + ["launch", "live_chat_da", "conf=endpoints", f"mephisto.architect.port={port}",
                                      "--mephisto-data", str(tmp_path / "mephisto")], capture_output=True, text=True,
                          timeout=240,
                          env={**__import__("os").environ, "DIALEVAL_BASE_URL": url})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"dialeval: error: bot 'model_a': {url}/chat/completions is unreachable: ConnectError: [Errno 111] "
        "Connection refused (tried 3 times)")
    assert "Traceback" not in done.stderr
