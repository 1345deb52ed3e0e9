"""The CPU kernels FedScorer swaps in when it loads a model (parlai_dialeval/metrics/lm_packing.py): oneDNN
linear layers with pre-packed weights must compute what torch's Linear and GPT-2's Conv1D compute,
checked against float64 products of the same weights."""
from __future__ import annotations

import platform

import pytest
import torch

from parlai_dialeval.metrics.lm_loading import load_causal_lm
from parlai_dialeval.metrics.lm_packing import PackedLinear, pack_linear_layers
from tiny_lm import build_gpt2

needs_onednn = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")
# Models are packed only where it was measured to pay: x86-64 with oneDNN.
PACKS = torch.backends.mkldnn.is_available() and platform.machine().lower() in ("x86_64", "amd64")


@needs_onednn
@pytest.mark.parametrize("bias, gelu", [(True, False), (False, False), (True, True)])
def test_packed_linear_equals_a_float64_product(bias, gelu):
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 200, bias=bias)
    x = torch.randn(3, 7, 96)
    expected = x.double() @ linear.weight.double().T + (linear.bias.double() if bias else 0)
    act = torch.nn.GELU(approximate="tanh") if gelu else torch.nn.Identity()
    expected = act(expected)
    with torch.inference_mode():
        got = PackedLinear(linear.weight, linear.bias, gelu_tanh=gelu)(x)
        plain = act(linear(x))
    assert got.shape == (3, 7, 200) and got.dtype == torch.float32
    # fp32 sums in another order than MKL's: the same size of rounding error, nothing more
    assert (got.double() - expected).abs().max() <= 2 * (plain.double() - expected).abs().max() + 1e-6


@pytest.mark.skipif(not PACKS, reason="models are packed on x86-64 CPUs with oneDNN only")
def test_gpt2_layers_are_packed_and_give_the_same_logits(tmp_path):
    from transformers import AutoModelForCausalLM

    path = build_gpt2(tmp_path / "gpt2", n_layer=2, n_embd=64, n_head=2)
    packed, _ = load_causal_lm(str(path), device="cpu")
    plain = AutoModelForCausalLM.from_pretrained(path).eval()
    kinds = [type(m).__name__ for m in packed.modules()]
    # per block: attention's c_attn and c_proj, the MLP's c_fc and c_proj; then the output layer
    assert kinds.count("PackedLinear") == 2 * 4 + 1
    assert "Conv1D" not in kinds and "Linear" not in kinds
    # GPT-2's tanh GELU runs inside the kernel of the MLP's first layer
    assert [m.c_fc.post_op[0] for m in packed.modules() if type(m).__name__ == "GPT2MLP"] == ["gelu"] * 2
    assert kinds.count("Identity") == 2 and "NewGELUActivation" not in kinds and "GELU" not in kinds
    ids = torch.randint(0, packed.config.vocab_size, (2, 30))
    with torch.inference_mode():
        got, expected = packed(ids).logits, plain(ids).logits
    assert torch.allclose(got, expected, atol=1e-5, rtol=0)


def test_only_float32_cpu_layers_are_packed():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8).to(torch.bfloat16), torch.nn.Linear(8, 4))
    pack_linear_layers(model)
    assert type(model[0]) is torch.nn.Linear
    assert type(model[1]) is (PackedLinear if PACKS else torch.nn.Linear)


@pytest.mark.parametrize("rows", [1, 5, 16, 200])
def test_logsumexp_rows_equals_torch_logsumexp(rows):
    from parlai_dialeval.metrics.fed_lm import logsumexp_rows

    torch.manual_seed(1)
    x = torch.randn(3, 37, 5000) * 20  # logits far from 0: the shift by the row's maximum matters
    expected = torch.logsumexp(x.double(), dim=-1)
    got = logsumexp_rows(x, rows=rows)
    assert got.shape == (3, 37) and got.dtype == torch.float32
    assert torch.allclose(got.double(), expected, atol=1e-5, rtol=0)
    assert torch.allclose(got, torch.logsumexp(x, dim=-1), atol=1e-5, rtol=0)


# ------------------------------------------------------------------ the switch and the fallback
CONVERSATIONS = ["Hi! How are you doing today? <|endoftext|> I'm good, thanks. What about you?",
                 "Tell me more about your favourite movie. <|endoftext|> Wow that is really interesting."]


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return build_gpt2(tmp_path_factory.mktemp("tiny-gpt2"), n_positions=96)


def fed_scores(path, **kwargs):
    from parlai_dialeval.metrics.fed import FedScorer

    scorer = FedScorer(str(path), device="cpu", **kwargs)
    kinds = {type(m).__name__ for m in scorer.model.modules()}
    return scorer.score(CONVERSATIONS), kinds


@pytest.mark.parametrize("failure", ["raises", "wrong numbers"])
def test_fed_with_packing_failing_its_trial_equals_fed_with_packing_off(tiny_path, monkeypatch, failure):
    from parlai_dialeval.compat import torch as compat_torch

    off, off_kinds = fed_scores(tiny_path, packing=False)
    assert "PackedLinear" not in off_kinds

    def broken(x, packed, bias, post_op):
        if failure == "raises":
            raise RuntimeError("oneDNN: unsupported")  # what a changed private operator may do
        return torch.zeros(*x.shape[:-1], packed.shape[0])

    monkeypatch.setattr(compat_torch, "linear", broken)
    monkeypatch.setattr(compat_torch, "unavailable", lambda: None)  # tried wherever the test runs
    with pytest.warns(UserWarning, match="failed its trial"):
        failed, failed_kinds = fed_scores(tiny_path, packing=True)
    assert "PackedLinear" not in failed_kinds  # every layer fell back to the plain one
    assert failed == off  # identical, not merely close: the very same plain layers ran


def test_the_environment_variable_turns_packing_off(tiny_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_PACKING", "0")
    _, kinds = fed_scores(tiny_path)
    assert "PackedLinear" not in kinds
    monkeypatch.setenv("DIALEVAL_PACKING", "1")
    _, kinds = fed_scores(tiny_path)
    assert ("PackedLinear" in kinds) == PACKS
    _, kinds = fed_scores(tiny_path, packing=False)  # the option wins over the variable
    assert "PackedLinear" not in kinds


@pytest.mark.skipif(not PACKS, reason="models are packed on x86-64 CPUs with oneDNN only")
def test_packed_scores_equal_plain_scores_to_rounding(tiny_path):
    packed, kinds = fed_scores(tiny_path, packing=True)
    plain, _ = fed_scores(tiny_path, packing=False)
    assert "PackedLinear" in kinds
    for a, b in zip(packed, plain):
        assert a.keys() == b.keys()
        assert all(abs(a[q] - b[q]) < 1e-4 for q in a)


@pytest.mark.skipif(not PACKS, reason="models are packed on x86-64 CPUs with oneDNN only")
def test_state_dict_keeps_the_linear_weights(tiny_path):
    from transformers import AutoModelForCausalLM

    packed, _ = load_causal_lm(str(tiny_path), device="cpu", packing=True)
    plain = AutoModelForCausalLM.from_pretrained(tiny_path).eval()
    got, expected = packed.state_dict(), plain.state_dict()
    assert got.keys() == expected.keys()
    assert all(torch.equal(got[key], expected[key]) for key in expected)
    # and a packed model takes a state dict back: other weights, other logits, as the plain model
    torch.manual_seed(2)
    other = {key: value + 0.01 * torch.randn_like(value) for key, value in expected.items()}
    other["lm_head.weight"] = other["transformer.wte.weight"]  # GPT-2 ties them
    packed.load_state_dict(other)
    plain.load_state_dict(other)
    ids = torch.randint(0, plain.config.vocab_size, (1, 12))
    with torch.inference_mode():
        assert torch.allclose(packed(ids).logits, plain(ids).logits, atol=1e-5, rtol=0)
