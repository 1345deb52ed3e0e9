"""dialeval:openai_chat against the stdlib fake OpenAI-compatible server (parlai_dialeval.testing.fake_openai)."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time

import pytest

import parlai_dialeval  # noqa: F401  (registers dialeval:)
from parlai_dialeval.agents.chat_history import build_messages
from parlai_dialeval.agents.openai_chat.client import EndpointError
from parlai_dialeval.retry import retry_after_seconds
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing.fake_openai import FakeOpenAI, ModelScript
from parlai_dialeval.testing.ports import free_port

KEY = "sk-test-7f3a9c1e"


def make_agent(fake, model="m", **opt):
    from parlai.core.agents import create_agent

    return create_agent({"model": "dialeval:openai_chat", "base_url": fake.base_url, "endpoint_model": model,
                         "retry_backoff": 0.01, **opt})


def say(agent, text, **extra):
    agent.observe({"id": "human", "text": text, "episode_done": False, **extra})
    return agent.act()


def test_reply_carries_text_tokens_latency_and_finish_reason():
    with FakeOpenAI({"m": {"replies": ["Hello there, I am a bot."], "latency": 0.05}}) as fake:
        reply = say(make_agent(fake), "Hi how are you")
    assert reply["text"] == "Hello there, I am a bot."
    assert reply["prompt_tokens"] == 4 and reply["completion_tokens"] == 6  # the fake counts words
    assert reply["finish_reason"] == "stop" and reply["attempts"] == 1
    assert reply["latency"] >= 0.05


def test_request_body_has_the_generation_settings_and_the_history():
    with FakeOpenAI() as fake:
        agent = make_agent(fake, "fake-model", temperature=0.2, max_tokens=2, stop='["\\n", "User:"]',
                           extra_body='{"top_p": 0.9, "seed": 7}', system_prompt="You are friendly.")
        first = say(agent, "one two three")
        say(agent, "four")
    body = fake.requests[-1]["body"]
    assert body["temperature"] == 0.2 and body["max_tokens"] == 2 and body["stop"] == ["\n", "User:"]
    assert body["top_p"] == 0.9 and body["seed"] == 7 and body["model"] == "fake-model"
    assert first["text"] == "You said:" and first["finish_reason"] == "length"  # cut at max_tokens words
    assert body["messages"] == [{"role": "system", "content": "You are friendly."},
                                {"role": "user", "content": "one two three"},
                                {"role": "assistant", "content": "You said:"},
                                {"role": "user", "content": "four"}]


@pytest.mark.parametrize("placement,expected", [
    ("system", [{"role": "system", "content": "Be brief.\nTopic: jazz\nyour persona: I love cats."},
                {"role": "user", "content": "hello"}]),
    ("first_user", [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Topic: jazz\nyour persona: I love cats.\nhello"}]),
    ("none", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]),
])
def test_persona_and_topic_go_where_the_placement_says(placement, expected):
    with FakeOpenAI() as fake:
        agent = make_agent(fake, "fake-model", system_prompt="Be brief.", context_placement=placement)
        say(agent, "your persona: I love cats.\nhello", context="Topic: jazz")
    assert fake.requests[0]["messages"] == expected


def test_build_messages_rejects_an_unknown_placement():
    with pytest.raises(DialevalError, match="context-placement .top."):
        build_messages("", ["x"], "top", [])


def test_episode_done_clears_the_history_and_copies_keep_their_own():
    from parlai.core.agents import create_agent_from_shared

    with FakeOpenAI() as fake:
        agent = make_agent(fake, "fake-model")
        copy = create_agent_from_shared(agent.share())
        say(agent, "a")
        say(copy, "b")
        agent.observe({"text": "c", "episode_done": True})
        agent.act()
        say(agent, "d")
    assert copy.endpoint.client is agent.endpoint.client  # one pooled client for every copy
    assert [len(r["messages"]) for r in fake.requests] == [1, 1, 3, 1]


def test_the_key_is_sent_but_never_kept_in_opts_replies_logs_or_saved_opts(monkeypatch, caplog, tmp_path):
    monkeypatch.setenv("DIALEVAL_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    with FakeOpenAI({"m": {"faults": ["500"]}}, api_key=KEY) as fake:
        agent = make_agent(fake, api_key_env="DIALEVAL_TEST_KEY")
        reply = say(agent, "hello")
        agent.opt.save(str(tmp_path / "model.opt"))
        shared = agent.share()
    assert fake.requests[-1]["headers"]["authorization"] == f"Bearer {KEY}"
    assert reply["attempts"] == 2 and "500" in caplog.text  # the retry was logged ...
    for where in (caplog.text, json.dumps(dict(agent.opt)), json.dumps(dict(reply)),
                  (tmp_path / "model.opt").read_text(), repr(shared["opt"])):
        assert KEY not in where  # ... without the key


def test_a_wrong_key_is_refused_with_the_status(monkeypatch):
    monkeypatch.setenv("DIALEVAL_TEST_KEY", "wrong")
    with FakeOpenAI(api_key=KEY) as fake:
        with pytest.raises(EndpointError, match="HTTP 401"):
            say(make_agent(fake, "fake-model", api_key_env="DIALEVAL_TEST_KEY"), "hi")


def test_a_missing_key_variable_is_one_clear_line(monkeypatch):
    monkeypatch.delenv("DIALEVAL_NO_SUCH_KEY", raising=False)
    with FakeOpenAI() as fake:
        with pytest.raises(EndpointError, match="DIALEVAL_NO_SUCH_KEY is not set"):
            make_agent(fake, api_key_env="DIALEVAL_NO_SUCH_KEY")


def test_429_is_retried_after_the_retry_after_delay():
    with FakeOpenAI({"m": {"faults": ["429"], "retry_after": 0.4}}) as fake:
        reply = say(make_agent(fake, retry_backoff=30), "hi")  # Retry-After wins over the back-off
    assert reply["attempts"] == 2 and reply["text"] == "You said: hi"
    first, second = fake.requests
    assert second["time"] - first["time"] >= 0.4


def test_retry_after_accepts_seconds_and_http_dates():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 100))
    assert 95 <= retry_after_seconds(date) <= 101


def test_500_twice_then_success_but_three_times_fails_the_turn():
    with FakeOpenAI({"m": {"faults": ["500", "500"]}, "n": {"faults": ["500"] * 3}}) as fake:
        assert say(make_agent(fake, "m"), "hi")["attempts"] == 3
        with pytest.raises(EndpointError, match=r"failed 3 times, last: HTTP 500: The server had an error"):
            say(make_agent(fake, "n"), "hi")
        assert len(fake.requests_for("n")) == 3  # bounded: max_retries 2


def test_a_dropped_connection_is_retried():
    with FakeOpenAI({"m": {"faults": ["disconnect"]}}) as fake:
        reply = say(make_agent(fake), "hi")
    assert reply["attempts"] == 2 and reply["text"] == "You said: hi" and len(fake.requests) == 2


def test_a_retry_after_beyond_the_cap_gives_up_at_once():
    with FakeOpenAI({"m": {"faults": ["429"], "retry_after": 3600}}) as fake:
        with pytest.raises(EndpointError, match="retry after 3600 s"):
            say(make_agent(fake), "hi")
        assert len(fake.requests) == 1


def test_a_timeout_fails_the_turn_after_the_retries():
    with FakeOpenAI({"m": {"faults": ["timeout", "timeout"], "hang": 2.0}}) as fake:
        with pytest.raises(EndpointError, match=r"failed 2 times, last: no reply within 0.3 s"):
            say(make_agent(fake, request_timeout=0.3, max_retries=1), "hi")


@pytest.mark.parametrize("fault,message", [
    ("malformed", "malformed JSON"), ("empty", "the reply has no choices"),
    ("notext", "the reply has no text"), ("context", r"refused the request \(HTTP 400: This model's maximum context"),
])
def test_bad_replies_fail_at_once_with_the_reason(fault, message):
    with FakeOpenAI({"m": {"faults": [fault]}}) as fake:
        with pytest.raises(EndpointError, match=message):
            say(make_agent(fake), "hi")
        assert len(fake.requests) == 1  # not retried


def test_a_conversation_longer_than_the_context_gets_the_400():
    with FakeOpenAI({"m": {"max_context_chars": 40}}) as fake:
        agent = make_agent(fake)
        say(agent, "short")
        with pytest.raises(EndpointError, match="maximum context length is 40"):
            say(agent, "this message makes the conversation too long")


@pytest.mark.parametrize("key, value", [("temperature", -0.5), ("max_tokens", 0), ("request_timeout", 0.0),
                                        ("max_retries", -1), ("retry_backoff", -1.0)])
def test_request_settings_out_of_range_are_refused_when_the_bot_is_made(key, value):
    with FakeOpenAI() as fake, pytest.raises(DialevalError, match=f"^openai_chat: --{key.replace('_', '-')} {value}: "):
        make_agent(fake, **{key: value})


def test_unknown_model_and_unreachable_url():
    with FakeOpenAI() as fake:
        with pytest.raises(EndpointError, match="model 'nope' not found"):
            make_agent(fake, "nope").endpoint.ping()
    from parlai.core.agents import create_agent

    dead = create_agent({"model": "dialeval:openai_chat", "base_url": f"http://127.0.0.1:{free_port()}/v1",
                         "endpoint_model": "m", "retry_backoff": 0.01})
    with pytest.raises(EndpointError, match="is unreachable: ConnectError.*tried 3 times"):
        dead.endpoint.ping()


def test_copies_talk_to_the_endpoint_at_the_same_time():
    from parlai.core.agents import create_agent_from_shared

    with FakeOpenAI({"m": {"latency": 1.0}}) as fake:
        shared = make_agent(fake).share()
        copies = [create_agent_from_shared(shared) for _ in range(10)]
        threads = [threading.Thread(target=say, args=(c, f"hi {i}")) for i, c in enumerate(copies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(fake.requests) == 10
    assert fake.max_in_flight >= 8  # no lock: the requests overlapped at the server


def test_fake_rejects_unknown_faults():
    with pytest.raises(ValueError, match="unknown faults"):
        ModelScript(faults=["503"])


def test_fake_runs_by_hand():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "parlai_dialeval.testing.fake_openai", "--port", str(port),
                             "--model", "rehearsal", "--reply", "Scripted hello."],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert f"http://127.0.0.1:{port}/v1 serving rehearsal" in proc.stdout.readline()
        import httpx

        answer = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                            json={"model": "rehearsal", "messages": [{"role": "user", "content": "hi"}]}).json()
        assert answer["choices"][0]["message"]["content"] == "Scripted hello."
    finally:
        proc.terminate()
        proc.wait(10)


# ----------------------------------------------------------------------------- streaming and endpoint quirks
def test_a_streamed_reply_arrives_in_pieces_with_its_timing():
    seen = []
    with FakeOpenAI({"m": {"replies": ["one two three four five six"], "chunk_delay": 0.05}}) as fake:
        agent = make_agent(fake)
        agent.on_text = seen.append
        reply = say(agent, "Hi")
    assert fake.requests[0]["body"]["stream"] is True
    assert seen == ["one", "one two", "one two three", "one two three four", "one two three four five",
                    "one two three four five six"]
    assert reply["text"] == "one two three four five six" and reply["streamed"] is True
    assert reply["finish_reason"] == "stop" and reply["completion_tokens"] == 6
    # six events 0.05 s apart: the first token comes before the rest, the total after all of them
    assert reply["first_token_latency"] < reply["latency"] and reply["latency"] >= 0.25
    assert 6 / reply["latency"] < reply["tokens_per_second"] < 6 / 0.2


def test_a_server_that_does_not_stream_is_read_whole_and_not_asked_again():
    seen = []
    with FakeOpenAI({"m": {"replies": ["whole reply"], "stream": False}}) as fake:
        agent = make_agent(fake)
        agent.on_text = seen.append
        first, second = say(agent, "Hi"), say(agent, "again")
    assert first["text"] == "whole reply" and first["streamed"] is False
    assert first["quirks"] == ["answered without streaming"] and seen == ["whole reply", "whole reply"]
    assert "stream" not in fake.requests[1]["body"] and "quirks" not in second


def test_a_server_refusing_stream_is_asked_without_it():
    with FakeOpenAI({"m": {"replies": ["fine"], "refuse": ["stream"]}}) as fake:
        reply = say(make_agent(fake), "Hi")
    assert reply["text"] == "fine" and reply["quirks"] == ["no streaming"] and reply["attempts"] == 1
    assert [("stream" in r["body"]) for r in fake.requests] == [True, False]


def test_stream_false_never_asks_to_stream():
    with FakeOpenAI({"m": {"replies": ["fine"]}}) as fake:
        reply = say(make_agent(fake, stream=False), "Hi")
    assert "stream" not in fake.requests[0]["body"] and reply["streamed"] is False


def test_max_completion_tokens_for_a_server_refusing_max_tokens():
    with FakeOpenAI({"m": {"replies": ["a b c d e"], "refuse": ["max_tokens"]}}) as fake:
        agent = make_agent(fake, max_tokens=3)
        first, second = say(agent, "Hi"), say(agent, "more")
    assert first["text"] == "a b c" and first["finish_reason"] == "length"
    assert first["quirks"] == ["max_completion_tokens", "finish_reason length"]
    bodies = [r["body"] for r in fake.requests]
    assert "max_tokens" in bodies[0] and bodies[1]["max_completion_tokens"] == 3 and "max_tokens" not in bodies[1]
    assert bodies[2]["max_completion_tokens"] == 3 and second["quirks"] == ["finish_reason length"]  # learnt once


@pytest.mark.parametrize("stream", [True, False])
def test_reasoning_content_is_kept_in_meta_not_shown(stream):
    with FakeOpenAI({"m": {"replies": ["The answer is 4."], "reasoning": "2 plus 2 is 4"}}) as fake:
        reply = say(make_agent(fake, stream=stream), "2+2?")
    assert reply["text"] == "The answer is 4." and reply["reasoning"] == "2 plus 2 is 4"
    assert "reasoning_content" in reply["quirks"]


@pytest.mark.parametrize("stream", [True, False])
def test_empty_content_fails_the_turn_with_the_reason(stream):
    with FakeOpenAI({"m": {"replies": [""], "reasoning": "thinking only", "finish_reason": "length"}}) as fake:
        with pytest.raises(EndpointError, match="no text to show .*'length', only reasoning_content"):
            say(make_agent(fake, stream=stream), "Hi")


def test_content_filter_is_recorded():
    with FakeOpenAI({"m": {"replies": ["I cannot"], "finish_reason": "content_filter"}}) as fake:
        reply = say(make_agent(fake), "Hi")
    assert reply["finish_reason"] == "content_filter" and reply["quirks"] == ["finish_reason content_filter"]


def test_a_stream_breaking_mid_reply_fails_the_turn_with_the_partial_text():
    from parlai_dialeval.agents.openai_chat.client import StreamBroken

    seen = []
    with FakeOpenAI({"m": {"replies": ["one two three four five six"], "faults": ["break"]}}) as fake:
        agent = make_agent(fake)
        agent.on_text = seen.append
        with pytest.raises(StreamBroken, match="partial text: 'one two three'") as error:
            say(agent, "Hi")
    assert error.value.partial == "one two three" and seen[-1] == "one two three"
    assert len(fake.requests) == 1  # not retried: the participant has seen part of it


def test_the_bot_turn_meta_keeps_the_streaming_fields():
    from parlai_dialeval.crowdsourcing.platform.bots import turn_meta

    with FakeOpenAI({"m": {"replies": ["a b"], "reasoning": "hm"}}) as fake:
        meta = turn_meta(say(make_agent(fake), "Hi"))
    assert {"latency", "first_token_latency", "tokens_per_second", "streamed", "quirks", "reasoning"} <= set(meta)


def test_a_page_gets_the_typing_indicator_then_throttled_partial_text():
    from parlai_dialeval.crowdsourcing.platform.bots import StreamToPage

    sent = []
    with FakeOpenAI({"m": {"replies": ["a b c d e f"]}}) as fake:
        agent = make_agent(fake)
        clock = iter([0.0, 0.05, 0.1, 0.25, 0.3, 0.4])  # one reading per piece of text
        with StreamToPage(sent.append, agent, interval=0.2, clock=lambda: next(clock)):
            assert agent.on_text is not None
            reply = say(agent, "Hi")
        assert agent.on_text is None  # nobody watches the next reply
    # "" first (typing), then at most one update per 0.2 s (at 0.0 and 0.25), and the held-back rest at the end
    assert sent == [{"streaming": ""}, {"streaming": "a"}, {"streaming": "a b c d"}, {"streaming": "a b c d e f"}]
    assert reply["text"] == "a b c d e f"


def test_a_bot_that_cannot_stream_shows_the_typing_indicator_then_its_reply_once():
    """Any other ParlAI agent (here ParlAI's own fixed_response): no on_text is given to it, the page gets
    the typing indicator only, and the reply arrives whole from act() (the world sends it as a message)."""
    from parlai.core.agents import create_agent

    from parlai_dialeval.crowdsourcing.platform.bots import StreamToPage

    bot = create_agent({"model": "fixed_response", "fixed_response": "hello there"})
    sent = []
    with StreamToPage(sent.append, bot):
        bot.observe({"id": "human", "text": "Hi", "episode_done": False})
        reply = bot.act()
    assert sent == [{"streaming": ""}] and not hasattr(bot, "on_text")
    assert reply["text"] == "hello there"
