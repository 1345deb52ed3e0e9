"""The CPU kernels FedScorer swaps in when it loads a model (parlai_dialeval/metrics/fed_lm.py): oneDNN
linear layers with pre-packed weights must compute what torch's Linear and GPT-2's Conv1D compute,
checked against float64 products of the same weights."""
from __future__ import annotations

import pytest
import torch

from parlai_dialeval.metrics.fed_lm import PackedLinear, load_causal_lm, pack_linear_layers
from tiny_lm import build_gpt2

needs_onednn = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")


@needs_onednn
@pytest.mark.parametrize("bias", [True, False])
def test_packed_linear_equals_a_float64_product(bias):
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 200, bias=bias)
    x = torch.randn(3, 7, 96)
    expected = x.double() @ linear.weight.double().T + (linear.bias.double() if bias else 0)
    with torch.inference_mode():
        got = PackedLinear(linear.weight, linear.bias)(x)
        plain = linear(x)
    assert got.shape == (3, 7, 200) and got.dtype == torch.float32
    # fp32 sums in another order than MKL's: the same size of rounding error, nothing more
    assert (got.double() - expected).abs().max() <= 2 * (plain.double() - expected).abs().max() + 1e-6


@needs_onednn
def test_gpt2_layers_are_packed_and_give_the_same_logits(tmp_path):
    from transformers import AutoModelForCausalLM

    path = build_gpt2(tmp_path / "gpt2", n_layer=2, n_embd=64, n_head=2)
    packed, _ = load_causal_lm(str(path), device="cpu")
    plain = AutoModelForCausalLM.from_pretrained(path).eval()
    kinds = [type(m).__name__ for m in packed.modules()]
    # per block: attention's c_attn and c_proj, the MLP's c_fc and c_proj; then the output layer
    assert kinds.count("PackedLinear") == 2 * 4 + 1
    assert "Conv1D" not in kinds and "Linear" not in kinds
    ids = torch.randint(0, packed.config.vocab_size, (2, 30))
    with torch.inference_mode():
        got, expected = packed(ids).logits, plain(ids).logits
    assert torch.allclose(got, expected, atol=1e-5, rtol=0)


def test_only_float32_cpu_layers_are_packed():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8).to(torch.bfloat16), torch.nn.Linear(8, 4))
    pack_linear_layers(model)
    assert type(model[0]) is torch.nn.Linear
    assert type(model[1]) is (PackedLinear if torch.backends.mkldnn.is_available() else torch.nn.Linear)
