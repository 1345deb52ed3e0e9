"""The CPU kernels FedScorer swaps in when it loads a model (parlai_dialeval/metrics/fed_lm.py): oneDNN
linear layers with pre-packed weights must compute what torch's Linear and GPT-2's Conv1D compute,
checked against float64 products of the same weights."""
from __future__ import annotations

import platform

import pytest
import torch

from parlai_dialeval.metrics.fed_lm import PackedLinear, load_causal_lm, pack_linear_layers
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
