"""FED scorer: reference mode against a literal per-utterance implementation of the reference's
algorithm (../shared/specs/fed_followups.json, from github Shikib/fed fed.py), conditional mode
against log-likelihoods read off full-sequence logits, batching, truncation, caching, CLI, agent."""
from __future__ import annotations

import json
import warnings

import pytest
from needs import needs
import torch

from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.metrics.fed import (FOLLOWUPS_FILE, SEPARATOR, FedScorer, ScoreCache, join_turns,
                                         load_followups, normalise, select_qualities)
from tiny_lm import build_gpt2

CONVERSATIONS = [
    "Hi! How are you doing today? <|endoftext|> I'm good, thanks. What about you?",
    "<|endoftext|> Tell me more about your favourite movie. <|endoftext|> Wow that is really interesting.",
    # ends in spaces and digits: BPE pieces next to the separator must split exactly as in the full text
    "Let's change the topic.  <|endoftext|> 1234  ",
]


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return build_gpt2(tmp_path_factory.mktemp("tiny-gpt2"), n_positions=96)


@pytest.fixture(scope="module")
def tiny(tiny_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_path).eval(), AutoTokenizer.from_pretrained(tiny_path)


def _ids(tokenizer, text):
    return torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])


def naive_reference(model, tokenizer, conversation, followups, qualities):
    """The reference's evaluate(): one model(ids, labels=ids).loss per follow-up, per quality."""
    conversation = normalise(conversation)
    out = {}
    with torch.no_grad():
        for name in qualities:
            q = followups[name]
            loss = [model(ids, labels=ids).loss.item()
                     for ids in (_ids(tokenizer, conversation + SEPARATOR + m) for m in q.positive + q.negative)]
            pos, neg = loss[: len(q.positive)], loss[len(q.positive):]
            out[name] = sum(neg) / max(len(neg), 1) - sum(pos) / max(len(pos), 1)
    return out


def naive_conditional(model, tokenizer, conversation, followups, qualities):
    """Paper eq. (1): summed log P(follow-up tokens | dialogue), positives minus negatives."""
    conversation = normalise(conversation)

    def loglik(m):
        context = tokenizer(conversation + SEPARATOR.rstrip(), add_special_tokens=False)["input_ids"]
        ids = _ids(tokenizer, conversation + SEPARATOR + m)
        assert ids[0, : len(context)].tolist() == context  # the separator token ends every context
        logp = torch.log_softmax(model(ids).logits[0, :-1], dim=-1)
        targets = ids[0, 1:]
        return logp[torch.arange(len(targets)), targets][len(context) - 1:].sum().item()

    with torch.no_grad():
        return {name: sum(map(loglik, followups[name].positive)) - sum(map(loglik, followups[name].negative))
                for name in qualities}


def test_shipped_followups_equal_the_spec(shared_data):
    spec = shared_data.parent / "specs" / "fed_followups.json"
    if not spec.is_file():
        needs(f"spec not found at {spec}")
    assert json.loads(FOLLOWUPS_FILE.read_text()) == json.loads(spec.read_text())


def test_followup_sets_match_the_paper():
    followups = load_followups()
    reference = select_qualities(followups)
    assert len(reference) == 18  # Mehri & Eskenazi: eighteen fine-grained qualities
    # spec: 73 forward passes per call of the reference's evaluate()
    assert sum(len(followups[q].positive) + len(followups[q].negative) for q in reference) == 73
    assert select_qualities(followups, "ji2022") == ["fun", "robotic"]
    assert len(select_qualities(followups, "all")) == 20
    with pytest.raises(DialevalError, match="unknown FED quality 'nope'"):
        select_qualities(followups, ["nope"])


@pytest.mark.parametrize("size", [{"batch_size": 0}, {"max_tokens": -1}])
def test_sizes_out_of_range_are_refused(tiny_path, size):
    """The scorer's (dialeval fed, the fed agent's --fed-batch-size, a notebook): one line naming the size."""
    with pytest.raises(DialevalError, match=f"^FED: --{next(iter(size)).replace('_', '-')} -?[0-9]+: expected an "):
        FedScorer(tiny_path, **size)


def test_reference_mode_equals_the_naive_loop(tiny, tiny_path):
    model, tokenizer = tiny
    scorer = FedScorer(tiny_path, mode="reference", qualities="all", batch_size=4)
    got = scorer.score(CONVERSATIONS)
    for conversation, scores in zip(CONVERSATIONS, got):
        expected = naive_reference(model, tokenizer, conversation, scorer.followups, scorer.qualities)
        assert set(scores) == set(expected)
        for q in expected:
            assert scores[q] == pytest.approx(expected[q], abs=1e-5), q


def test_conditional_mode_equals_follow_up_log_likelihoods(tiny, tiny_path):
    model, tokenizer = tiny
    scorer = FedScorer(tiny_path, mode="conditional", qualities="all", batch_size=3)
    for conversation, scores in zip(CONVERSATIONS[1:], scorer.score(CONVERSATIONS[1:])):
        expected = naive_conditional(model, tokenizer, conversation, scorer.followups, scorer.qualities)
        for q in expected:
            assert scores[q] == pytest.approx(expected[q], abs=1e-4), q


@pytest.mark.parametrize("mode", ["reference", "conditional"])
def test_batched_equals_unbatched(tiny_path, mode):
    one = FedScorer(tiny_path, mode=mode, batch_size=1).score(CONVERSATIONS)
    many = FedScorer(tiny_path, mode=mode, batch_size=8).score(CONVERSATIONS)
    tight = FedScorer(tiny_path, mode=mode, batch_size=8, max_tokens=64).score(CONVERSATIONS)
    for a, b, c in zip(one, many, tight):
        for q in a:
            assert b[q] == pytest.approx(a[q], abs=1e-4)
            assert c[q] == pytest.approx(a[q], abs=1e-4)


def test_long_context_is_truncated_with_a_warning(tiny_path):
    scorer = FedScorer(tiny_path, qualities=["interesting"])
    long = join_turns(["Tell me more about your favourite movie."] * 40)  # far beyond 96 positions
    with pytest.warns(UserWarning, match="maximum length"):
        scores = scorer.score([long, CONVERSATIONS[0]])
    assert all(torch.isfinite(torch.tensor(s["interesting"])) for s in scores)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FedScorer(tiny_path, qualities=["interesting"]).score([CONVERSATIONS[0]])


def test_custom_followups_from_a_file(tmp_path, tiny, tiny_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"polite": {"positive": ["Thank you!"], "negative": ["How rude."]}}))
    scorer = FedScorer(tiny_path, followups=path)
    assert scorer.qualities == ["polite"]
    expected = naive_reference(*tiny, CONVERSATIONS[0], scorer.followups, ["polite"])
    assert scorer.score([CONVERSATIONS[0]])[0]["polite"] == pytest.approx(expected["polite"], abs=1e-5)
    path.write_text(json.dumps({"polite": {"positive": "Thank you!"}}))
    with pytest.raises(DataError, match="'positive' and 'negative'"):
        load_followups(path)


def test_cache_serves_repeated_texts(tmp_path, tiny_path, monkeypatch):
    cache_file = tmp_path / "cache.jsonl"
    first = FedScorer(tiny_path, cache=ScoreCache(cache_file)).score(CONVERSATIONS[:2])
    again = FedScorer(tiny_path, cache=ScoreCache(cache_file))
    monkeypatch.setattr(again.lm, "score", lambda *a, **k: pytest.fail("cached texts were recomputed"))
    assert again.score(CONVERSATIONS[:2]) == first
    conditional = FedScorer(tiny_path, mode="conditional", cache=ScoreCache(cache_file))
    assert conditional.score(CONVERSATIONS[:1])[0] != first[0]  # the key includes the mode


def test_cli_scores_text_and_canonical_data(tmp_path, tiny_path):
    from parlai_dialeval.cli import main
    from parlai_dialeval.data import write_jsonl

    text = tmp_path / "convs.txt"
    text.write_text("\n".join(CONVERSATIONS[:2]) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["fed", "--data", str(text), "--data-format", "fed-text", "--out", str(out),
                 "--lm", str(tiny_path), "--device", "cpu"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    expected = FedScorer(tiny_path).score(CONVERSATIONS[:2])
    assert [r["id"] for r in rows] == ["convs.txt:1", "convs.txt:2"]
    for row, scores in zip(rows, expected):
        assert row["scores"] == pytest.approx(scores, abs=1e-6)

    canonical = tmp_path / "data.jsonl"
    turns = [{"speaker": "human", "text": "Hi! How are you doing today?"},
             {"speaker": "bot", "text": "I'm good, thanks. What about you?"},
             {"speaker": "human", "text": "Tell me more."}, {"speaker": "bot", "text": "That makes sense!"}]
    write_jsonl([{"type": "conversation", "id": "c1", "models": ["bot"], "turns": turns}], canonical)
    out = tmp_path / "turns.jsonl"
    assert main(["fed", "--data", str(canonical), "--out", str(out), "--lm", str(tiny_path),
                 "--per-turn", "true", "--qualities", "turn,fun"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["turn_index"] for r in rows] == [1, 3]
    assert rows[0]["input"] == normalise(CONVERSATIONS[0])
    assert set(rows[1]["scores"]) == set(select_qualities(load_followups(), ["turn", "fun"]))


def test_cli_reports_a_blank_line(tmp_path, tiny_path, capsys):
    from parlai_dialeval.cli import main

    text = tmp_path / "convs.txt"
    text.write_text("Hi!\n\nHello\n")
    assert main(["fed", "--data", str(text), "--data-format", "fed-text", "--out", str(tmp_path / "o.jsonl"),
                 "--lm", str(tiny_path)]) == 2
    assert "convs.txt:2: empty line" in capsys.readouterr().err


def test_cli_skips_a_conversation_without_turns(tmp_path, tiny_path, capsys):
    # it was scored as the empty text; now it is left out with its reason, and alone it is nothing to score
    from parlai_dialeval.cli import main
    from parlai_dialeval.data import write_jsonl

    canonical = tmp_path / "data.jsonl"
    write_jsonl([{"type": "conversation", "id": "empty", "models": ["bot"], "turns": []},
                 {"type": "conversation", "id": "c1", "models": ["bot"], "turns": [
                     {"speaker": "human", "text": "Hi!"}, {"speaker": "bot", "text": "Hello there."}]}], canonical)
    out = tmp_path / "out.jsonl"
    assert main(["fed", "--data", str(canonical), "--out", str(out), "--lm", str(tiny_path), "--device", "cpu",
                 "--qualities", "fluent"]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["c1"]
    assert "skipped conversation empty: no turns to score" in capsys.readouterr().out
    write_jsonl([{"type": "conversation", "id": "empty", "models": ["bot"], "turns": []}], canonical)
    assert main(["fed", "--data", str(canonical), "--out", str(tmp_path / "none.jsonl"), "--lm", str(tiny_path),
                 "--device", "cpu"]) == 2
    assert "no conversations to score" in capsys.readouterr().err


def test_agent_scores_observed_episodes(tiny_path):
    from parlai.core.loader import load_agent_module
    from parlai.core.params import ParlaiParser

    FedAgent = load_agent_module("dialeval:fed")  # what -m dialeval:fed resolves to
    parser = ParlaiParser(False, False)
    FedAgent.add_cmdline_args(parser)
    opt = parser.parse_args(["--fed-lm", str(tiny_path), "--fed-qualities", "turn"])
    agent = FedAgent(opt)
    agent.observe({"text": "Hi! How are you doing today?", "eval_labels": ["I'm good, thanks. What about you?"],
                   "episode_done": True})
    reply = agent.act()
    expected = FedScorer(tiny_path, qualities="turn").score([CONVERSATIONS[0]])[0]
    assert reply["fed_scores"] == pytest.approx(expected, abs=1e-6)
    assert agent.report()["fed_interesting"].value() == pytest.approx(expected["interesting"], abs=1e-6)
    agent.observe({"text": "Tell me more.", "episode_done": False})
    assert "fed_scores" not in agent.act()


# One dialogue scored turn by turn, as FED's turn-level items and per-turn scores of a chat are: each
# item's context + response starts the next. The last item ends in digits that the next string
# extends ("1234" -> "12345"), so its text is a string prefix but not a token prefix of the next.
DIALOGUE = ["Hi! How are you doing today?", "I'm good, thanks. What about you?", "That's really interesting!",
            "Tell me more about your favourite movie.", "I don't understand what you're saying. 1234"]
GROWING = [join_turns(DIALOGUE[:k]) for k in range(1, len(DIALOGUE) + 1)] + [join_turns(DIALOGUE) + "5 ok"]


def _count_tokens(model):
    """Tokens fed to the model, counted by a forward hook (independent of the scorer's bookkeeping)."""
    seen = []

    def hook(module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        seen.append(ids.numel())

    return seen, model.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("mode", ["reference", "conditional"])
def test_growing_conversations_reuse_their_shared_prefix(tiny, tiny_path, mode):
    model, tokenizer = tiny
    together = FedScorer(model, tokenizer=tokenizer, mode=mode, qualities="turn", batch_size=4)
    seen, handle = _count_tokens(model)
    try:
        got = together.score(GROWING[::-1])[::-1]  # order of the call does not matter
        with_reuse = sum(seen)
        seen.clear()
        alone = [FedScorer(model, tokenizer=tokenizer, mode=mode, qualities="turn").score([c])[0]
                 for c in GROWING]
        without = sum(seen)
    finally:
        handle.remove()
    for a, b in zip(got, alone):
        for q in a:
            assert a[q] == pytest.approx(b[q], abs=1e-5), q
    if mode == "reference":
        for conversation, scores in zip(GROWING, got):
            expected = naive_reference(model, tokenizer, conversation, together.followups, together.qualities)
            for q in expected:
                assert scores[q] == pytest.approx(expected[q], abs=1e-5), q
    # Each item's prefix (context + separator) shares its first tokens with the previous one; all but
    # the last shared token (rerun for its logits) and the first are saved.
    prefixes = [tokenizer(normalise(c) + SEPARATOR.rstrip(), add_special_tokens=False)["input_ids"]
                for c in GROWING]
    shared = [next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
              for a, b in zip(prefixes, prefixes[1:])]
    assert shared[-1] < len(prefixes[-2])  # "1234" -> "12345": the BPE boundary moved
    assert with_reuse <= without - sum(n - 2 for n in shared)


def test_truncated_conversations_do_not_reuse_a_shifted_window(tiny_path):
    # Beyond 96 positions the window slides: the longer items share a string prefix with the others
    # but not a token window from position 0 (the first three fit, 31 to 70 tokens; the rest do not).
    turns = DIALOGUE * 2
    items = [join_turns(turns[:k]) for k in range(3, 11)]
    with pytest.warns(UserWarning, match="maximum length"):
        got = FedScorer(tiny_path, qualities=["interesting", "engaging"], batch_size=4).score(items)
    for conversation, scores in zip(items, got):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # only the longer items are truncated
            alone = FedScorer(tiny_path, qualities=["interesting", "engaging"]).score([conversation])[0]
        for q in alone:
            assert scores[q] == pytest.approx(alone[q], abs=1e-5), q


def test_follow_ups_of_one_token_each(tiny):
    from parlai_dialeval.metrics.fed_lm import PrefixLM

    model, _ = tiny
    # After the shared [0, 5] only leaves remain: nothing past the prefix runs through the model.
    group = [[0, 5, 6], [0, 5, 7], [0, 5, 6, 8]]
    got = PrefixLM(model).score([group], [[2, 2, 2]])[0]
    with torch.no_grad():
        for ids, loss in zip(group, got):
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, :-1], dim=-1)
            nll = -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
            assert loss.count == len(ids) - 1
            assert loss.total == pytest.approx(nll.sum().item(), abs=1e-5)
            assert loss.tail == pytest.approx(nll[1:].sum().item(), abs=1e-5)
    assert PrefixLM(model).score([group[:2]], [[2, 2]])[0][1].total == pytest.approx(got[1].total, abs=1e-5)


def test_conditional_mode_runs_the_output_layer_on_each_prefix_end_only(tiny):
    model, tokenizer = tiny
    rows = {}
    for mode in ("reference", "conditional"):
        seen = rows[mode] = []
        handle = model.lm_head.register_forward_pre_hook(lambda module, args: seen.append(args[0].shape[:-1]))
        scorer = FedScorer(model, tokenizer=tokenizer, mode=mode, qualities="turn", batch_size=8)
        try:
            scores = scorer.score(CONVERSATIONS)
        finally:
            handle.remove()
        if mode == "conditional":
            for conversation, got in zip(CONVERSATIONS[1:], scores[1:]):
                expected = naive_conditional(model, tokenizer, conversation, scorer.followups, scorer.qualities)
                assert got == pytest.approx(expected, abs=1e-4)
    # One batched prefix pass (3 unrelated dialogues), then the tries: the tries' rows are the same;
    # the prefix pass keeps the 3 dialogues' last positions instead of all of them.
    assert rows["reference"][1:] == rows["conditional"][1:]
    assert rows["reference"][0][0] == rows["conditional"][0][0] == 3
    assert rows["conditional"][0][1] <= 3 < rows["reference"][0][1]


def test_tails_only_run_the_output_layer_where_a_tail_needs_it(tiny):
    """``prefix_losses=False`` (the lm: judge's prompts): one group of several prompts sharing their first
    tokens, each followed by options; the tails equal a plain forward pass per text, and the trie's output
    layer runs only for the prompts' last tokens (the options' parents), not for every trie node."""
    from parlai_dialeval.metrics.fed_lm import PrefixLM

    model, _ = tiny
    prompts = [[0, 5, 9, 11, 12], [0, 5, 9, 13], [0, 5, 14, 15, 16, 17]]
    options = [[6], [7, 8]]  # a two-token option: its second token needs the first's logits too
    group = [p + o for p in prompts for o in options]
    starts = [len(p) for p in prompts for _ in options]
    seen = []
    handle = model.lm_head.register_forward_pre_hook(lambda module, args: seen.append(args[0].shape[:-1]))
    try:
        got = PrefixLM(model, prefix_losses=False).score([group], [starts])[0]
    finally:
        handle.remove()
    with torch.no_grad():
        for ids, start, loss in zip(group, starts, got):
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, :-1], dim=-1)
            nll = -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
            assert loss.tail == pytest.approx(nll[start - 1:].sum().item(), abs=1e-5)
    # prefix [0, 5] (its last position), then the trie: 3 prompt ends + 3 first option tokens of its 11 inner nodes
    assert [tuple(shape) for shape in seen] == [(1, 1), (1, 6)]
