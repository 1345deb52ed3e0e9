"""dialeval:hf_chat on a tiny chat model built here (tests/tiny_lm.py's GPT-2 + byte-level BPE, with a
chat template added): no download, template rendering, context trimming, sharing, errors."""
from __future__ import annotations

import pytest

import parlai_dialeval  # noqa: F401  (registers dialeval:)
from parlai_dialeval.agents.hf_chat.hf_chat import render_chat
from parlai_dialeval.errors import DialevalError

from tiny_lm import CHAT_TEMPLATE, CORPUS, EOS, build_gpt2


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    from transformers import AutoTokenizer

    path = build_gpt2(tmp_path_factory.mktemp("tiny_chat") / "model", texts=CORPUS, n_positions=128)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(path)
    return path


def make(path, **opt):
    from parlai.core.agents import create_agent

    return create_agent({"model": "dialeval:hf_chat", "hf_chat_model": str(path), "max_new_tokens": 8, **opt})


def test_render_chat_uses_the_template_with_the_generation_prompt(chat_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    text = render_chat(tokenizer, [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi!"}])
    assert text == f"<|system|>Be kind.{EOS}\n<|user|>Hi!{EOS}\n<|assistant|>"


def test_replies_are_deterministic_with_token_counts(chat_model):
    agent = make(chat_model, system_prompt="Be kind.")
    agent.observe({"text": "Hi! How are you doing today?", "episode_done": False})
    first = agent.act()
    again = make(chat_model, system_prompt="Be kind.")
    again.observe({"text": "Hi! How are you doing today?", "episode_done": False})
    assert again.act()["text"] == first["text"]  # greedy decoding
    assert first["completion_tokens"] <= 8 and first["finish_reason"] in ("stop", "length")
    assert first["finish_reason"] == "stop" or first["completion_tokens"] == 8
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    prompt = render_chat(tokenizer, [{"role": "system", "content": "Be kind."},
                                     {"role": "user", "content": "Hi! How are you doing today?"}])
    assert first["prompt_tokens"] == len(tokenizer.encode(prompt, add_special_tokens=False))
    assert first["latency"] > 0


def test_history_grows_and_is_trimmed_to_the_context(chat_model):
    from parlai.core.agents import create_agent_from_shared

    agent = make(chat_model)
    copy = create_agent_from_shared(agent.share())
    assert copy.lm["model"] is agent.lm["model"]
    sizes = []
    for i in range(10):
        agent.observe({"text": "Tell me more about your favourite movie.", "episode_done": False})
        sizes.append(agent.act()["prompt_tokens"])
    assert sizes[1] > sizes[0]
    # untrimmed, ten turns would need hundreds of tokens: n_positions minus max_new_tokens caps the prompt
    assert max(sizes) <= 128 - 8
    assert len(agent.history) == 20  # the agent keeps every turn; only the prompt is trimmed


def test_a_task_bot_pool_serves_it_with_costs_in_the_turn_meta(chat_model):
    from parlai_dialeval.crowdsourcing.platform.bots import BotPool, turn_meta

    pool = BotPool({"tiny": {"opt": {"model": "dialeval:hf_chat", "hf_chat_model": str(chat_model),
                                     "max_new_tokens": 4, "dtype": "float32"}}})
    bot = pool.new_bot("tiny")
    bot.observe({"id": "human", "text": "Hi!", "episode_done": False, "context": "Topic: movies"})
    meta = turn_meta(bot.act())
    # nobody watched this reply (no on_text): not streamed, so no first-token time; tokens/s over the whole
    assert set(meta) == {"latency", "prompt_tokens", "completion_tokens", "finish_reason", "attempts", "streamed",
                         "tokens_per_second"} and meta["streamed"] is False
    assert bot.messages()[0] == {"role": "system", "content": "Topic: movies"}


def test_sampling_with_a_seed_is_reproducible(chat_model):
    replies = []
    for _ in range(2):
        agent = make(chat_model, temperature=1.0, top_p=0.9, generation_seed=3)
        agent.observe({"text": "Let's change the topic.", "episode_done": False})
        replies.append(agent.act()["text"])
    assert replies[0] == replies[1]


@pytest.mark.parametrize("key, value, expected", [
    ("max_new_tokens", -5, "an integer >= 1"), ("temperature", -1.0, "a number >= 0"),
    ("top_p", 2.0, "a number > 0 and <= 1"), ("repetition_penalty", 0.0, "a number > 0"),
    ("cpu_threads", -2, "an integer >= 0"),
])
def test_generation_settings_out_of_range_are_refused_when_the_bot_is_made(chat_model, key, value, expected):
    """From a command line or a task's YAML (which skips argparse's types): one line naming the option, not
    transformers' or torch's error at the first reply (a live study's participant would meet that)."""
    flag = "--" + key.replace("_", "-")
    with pytest.raises(DialevalError, match=f"^hf_chat: {flag} {value}: expected {expected}$"):
        make(chat_model, **{key: value})


def test_dtype_and_device_options(chat_model):
    agent = make(chat_model, dtype="bfloat16", device="cpu")
    import torch

    assert agent.lm["model"].dtype == torch.bfloat16
    agent.observe({"text": "Hi!", "episode_done": False})
    assert isinstance(agent.act()["text"], str)


def test_no_template_no_model_and_unknown_hub_id_are_one_line_errors(chat_model, tmp_path):
    plain = build_gpt2(tmp_path / "plain", n_positions=64)
    with pytest.raises(DialevalError, match="has no chat template: give --chat-template"):
        make(plain)
    agent = make(plain, chat_template=CHAT_TEMPLATE)  # ... which --chat-template fixes
    agent.observe({"text": "Hi!", "episode_done": False})
    assert isinstance(agent.act()["text"], str)
    with pytest.raises(DialevalError, match="no local model 'nobody/no-such-chat-model'"):
        make("nobody/no-such-chat-model")


def test_hf_lm_streams_the_reply_it_gives_whole(chat_model):
    """dialeval:hf_lm (any causal LM, no chat template) streams like hf_chat when someone watches."""
    from parlai.core.agents import create_agent

    def hf_lm():
        return create_agent({"model": "dialeval:hf_lm", "hf_model_path": str(chat_model), "hf_max_new_tokens": 12})

    whole = hf_lm()
    whole.observe({"text": "Tell me more about your favourite movie.", "episode_done": False})
    expected = whole.act()["text"]
    watched, seen = hf_lm(), []
    watched.on_text = seen.append
    watched.observe({"text": "Tell me more about your favourite movie.", "episode_done": False})
    assert watched.act()["text"] == expected and expected
    assert len(seen) > 1 and seen[-1] == expected  # several growing pieces, ending with the reply
    assert all(later.startswith(earlier) for earlier, later in zip(seen, seen[1:]))


@pytest.fixture
def torch_threads_kept():
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _threads_while_generating(agent) -> set[int]:
    """torch's thread count seen by each forward pass of the agent's model during one reply."""
    import torch

    seen = set()
    handle = agent.lm["model"].register_forward_pre_hook(lambda *_: seen.add(torch.get_num_threads()))
    try:
        agent.observe({"text": "Hi! How are you doing today?", "episode_done": False})
        agent.act()
    finally:
        handle.remove()
    return seen


def test_a_bot_generates_on_the_cpu_threads_it_was_given_or_that_the_load_leaves(chat_model, monkeypatch,
                                                                                 torch_threads_kept):
    import torch

    from parlai_dialeval.metrics import lm_loading

    torch.set_num_threads(2)
    assert _threads_while_generating(make(chat_model, cpu_threads=1)) == {1}
    assert torch.get_num_threads() == 2  # restored after the reply
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(lm_loading.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(lm_loading.os, "getloadavg", lambda: (1.2, 0.0, 0.0))  # one core busy when it loads
    agent = make(chat_model)
    monkeypatch.setattr(lm_loading.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # later load changes nothing
    assert _threads_while_generating(agent) == {1} and torch.get_num_threads() == 2


def test_a_live_chat_server_leaves_a_core_to_itself_and_sets_the_bots_threads_once(chat_model, monkeypatch,
                                                                                  torch_threads_kept):
    """Four cores, one busy elsewhere: the server's bots get two threads (one core left to the server),
    set once for the process; a reply does not change it (per-reply changes would race between
    conversations). An endpoint-only pool leaves torch's setting alone; ``--cpu-threads`` overrides."""
    import torch

    from parlai_dialeval.crowdsourcing.platform.bots import BotPool, server_threads
    from parlai_dialeval.metrics import lm_loading

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(lm_loading.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(lm_loading.os, "getloadavg", lambda: (1.0, 0.0, 0.0))
    torch.set_num_threads(4)
    assert lm_loading.server_cpu_threads() == 2
    opt = {"model": "dialeval:hf_chat", "hf_chat_model": str(chat_model), "max_new_tokens": 4}
    pool = BotPool({"tiny": {"opt": opt}})
    assert pool.cpu_threads == 2 and torch.get_num_threads() == 2
    bot = pool.new_bot("tiny")
    assert _threads_while_generating(bot) == {2} and torch.get_num_threads() == 2
    monkeypatch.setattr(lm_loading.os, "getloadavg", lambda: (3.5, 0.0, 0.0))  # every core busy: still one
    assert lm_loading.server_cpu_threads() == 1
    assert BotPool({"tiny": {"opt": {**opt, "cpu_threads": 3}}}).cpu_threads == 3 and torch.get_num_threads() == 3
    assert server_threads([object()]) is None and torch.get_num_threads() == 3  # no model runs here
