"""Model surgery for fast CPU inference of a loaded causal LM, the same fp32 arithmetic: GPT-2's GELU
as one kernel (``fuse_gelu``) and linear layers with pre-packed oneDNN weights (``pack_linear_layers``,
through the private operators of ``compat/torch.py``).

Packing is tried, never trusted: the first layer of every shape is trial-called against the plain
product, and a shape whose trial fails (any error, or other numbers) keeps its plain layers, with a
warning. ``DIALEVAL_PACKING=0`` (or ``packing=False`` wherever a model is loaded) turns it off.
"""
from __future__ import annotations

import os
import warnings

import torch

from parlai_dialeval.compat import torch as compat_torch
from parlai_dialeval.compat import transformers as compat_transformers

PACKING_ENV = "DIALEVAL_PACKING"
_OFF = ("0", "false", "no", "off")


def packing_wanted(packing: bool | None = None) -> bool:
    """``packing`` when given, else what ``$DIALEVAL_PACKING`` says (on unless 0, false, no or off)."""
    if packing is not None:
        return bool(packing)
    return os.environ.get(PACKING_ENV, "1").strip().lower() not in _OFF


def fuse_gelu(model) -> None:
    """Swap GPT-2's tanh GELU, written as five tensor operations (``NewGELUActivation``), for torch's
    one-kernel version of the same formula: on CPU the five passes over the MLP's 4x-wide activations
    took about a fifth of FED's time; results agree to float rounding (about 1e-7)."""
    from transformers.activations import NewGELUActivation

    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, NewGELUActivation):
                setattr(module, name, torch.nn.GELU(approximate="tanh"))


class PackedLinear(torch.nn.Module):
    """``x @ weight.T + bias`` through oneDNN, its weight reordered once into oneDNN's blocked layout
    (compat/torch.py says why). ``gelu_tanh``: the tanh GELU is applied to the output inside the same
    kernel (one pass less over the MLP's 4x-wide activations; same formula, same rounding as
    ``torch.nn.GELU("tanh")`` to ~1e-7). ``transposed``: the layer it replaces stored its weight as
    in x out (GPT-2's ``Conv1D``); its ``state_dict`` has the replaced layer's keys and layout."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, gelu_tanh: bool = False,
                 transposed: bool = False):
        super().__init__()
        self.out_features = weight.shape[0]
        self.transposed = transposed
        self.post_op = ("gelu", [], "tanh") if gelu_tanh else ("none", [], "")
        # Non-persistent: the state_dict gets the plain weight back (_save_to_state_dict).
        self.register_buffer("weight", compat_torch.pack_weight(weight.detach()), persistent=False)
        self.register_buffer("bias", None if bias is None else bias.detach(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return compat_torch.linear(x, self.weight, self.bias, self.post_op)

    def plain_weight(self) -> torch.Tensor:
        """The weight as the replaced layer stored it (a copy out of the packed layout)."""
        weight = self.weight.to_dense()
        return weight.t().contiguous() if self.transposed else weight

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        destination[prefix + "weight"] = self.plain_weight()
        if self.bias is not None:
            destination[prefix + "bias"] = self.bias

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        if prefix + "weight" not in state_dict:
            missing_keys.append(prefix + "weight")
            return
        weight = state_dict[prefix + "weight"]
        self.weight = compat_torch.pack_weight((weight.t() if self.transposed else weight).contiguous())
        if self.bias is not None and prefix + "bias" in state_dict:
            self.bias = state_dict[prefix + "bias"].detach().clone()


def _trial(layer: PackedLinear, weight: torch.Tensor, bias: torch.Tensor | None) -> str | None:
    """None when ``layer`` computes what the plain layer computes on a few random rows, else why not."""
    x = torch.randn(3, weight.shape[1], generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        got = layer(x)
        want = torch.nn.functional.linear(x, weight, bias)
        if layer.post_op[0] == "gelu":
            want = torch.nn.functional.gelu(want, approximate="tanh")
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"gave {tuple(got.shape)} {got.dtype}, expected {tuple(want.shape)} {want.dtype}"
    # fp32 sums in another order: differences of rounding size only
    tolerance = 1e-3 * float(want.abs().max()) + 1e-6
    if not torch.allclose(got, want, rtol=1e-3, atol=tolerance):
        return f"differs from the plain product by {float((got - want).abs().max()):.3g}"
    return None


def pack_linear_layers(model, packing: bool | None = None) -> int:
    """Swap the model's fp32 CPU linear layers (torch's ``Linear``, GPT-2's ``Conv1D``, which stores its
    weight transposed) for ``PackedLinear`` where the packed operators are available and ``packing``
    (see ``packing_wanted``) is on; how many were swapped. Inference only: no gradients flow. In GPT-2's
    MLP (``c_fc``, then ``act``) a tanh GELU (see ``fuse_gelu``) moves into ``c_fc`` where
    ``compat/transformers.py`` finds that MLP as it was written for."""
    from transformers.pytorch_utils import Conv1D

    if not packing_wanted(packing) or compat_torch.unavailable() is not None:
        return 0
    # Parents and names only, so each replaced layer's weight is freed before the next is packed.
    places = [(module, name) for module in model.modules() for name, child in module.named_children()
              if isinstance(child, (torch.nn.Linear, Conv1D)) and child.weight.device.type == "cpu"
              and child.weight.dtype == torch.float32]
    failed: dict[tuple, str | None] = {}  # layer shape -> why its trial failed (None: it passed)
    mlp = compat_transformers.gpt2_mlp()  # None: this transformers' MLP does not fit the GELU move
    packed = 0
    for module, name in places:
        child = getattr(module, name)
        transposed = isinstance(child, Conv1D)
        weight = (child.weight.t() if transposed else child.weight).contiguous()
        act = getattr(module, "act", None)
        gelu = (mlp is not None and isinstance(module, mlp) and name == "c_fc" and isinstance(act, torch.nn.GELU)
                and act.approximate == "tanh")
        shape = (tuple(weight.shape), child.bias is not None, gelu)
        if failed.get(shape):
            continue
        try:
            layer = PackedLinear(weight, child.bias, gelu_tanh=gelu, transposed=transposed)
            if shape not in failed:
                failed[shape] = _trial(layer, weight, child.bias)
        except Exception as error:  # a private operator: any failure means the plain layer
            failed[shape] = f"{type(error).__name__}: {error}"
        if failed[shape]:
            warnings.warn(f"oneDNN packing of {shape[0][1]}->{shape[0][0]} linear layers failed its trial "
                          f"({failed[shape]}); they stay plain (set {PACKING_ENV}=0 to skip packing)",
                          stacklevel=2)
            continue
        setattr(module, name, layer)
        packed += 1
        if gelu:
            module.act = torch.nn.Identity()
        del child, weight, layer
    return packed
