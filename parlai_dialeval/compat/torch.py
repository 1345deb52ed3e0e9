"""The private torch operators this project calls: oneDNN's pre-packed linear layer
(``torch.ops.mkldnn._reorder_linear_weight``, ``_linear_pointwise``), for the packed linear layers of
``metrics/lm_packing.py``.

Why: torch's CPU matrix products call MKL, which on this project's AMD EPYC (AVX-512) reached 190-200
GFLOP/s with 2 threads at DialoGPT's shapes, about the AVX2 peak; oneDNN's AVX-512 kernels reached
430-460 (benchmarks/README.md). These are the operators torch's own compiler (inductor) emits for frozen
linear layers on CPU. Private: they may change or vanish in any release, so nothing here is trusted
beyond the version it was written for, and ``lm_packing`` trial-calls every layer shape and falls back
to the plain layer on any error. Retire when torch offers packed linear weights in eager mode (or when
``torch.compile`` with freezing is as fast at start-up as eager).
"""
from __future__ import annotations

import platform

import torch

WRITTEN_FOR = "2.13"  # major.minor of torch


def unavailable() -> str | None:
    """Why the packed operators are not used here, or None where they may be (to be trial-called)."""
    version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    if version != WRITTEN_FOR:
        return f"written for torch {WRITTEN_FOR}, torch {torch.__version__} is installed"
    # Measured on x86-64 only; oneDNN on ARM runs through other kernels.
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"measured on x86-64 only, this is {platform.machine()}"
    if not torch.backends.mkldnn.is_available():
        return "torch was built without oneDNN"
    if not all(hasattr(torch.ops.mkldnn, name) for name in ("_reorder_linear_weight", "_linear_pointwise")):
        return "this torch has no oneDNN packed linear operators"
    return None


def pack_weight(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` (out x in) reordered once into oneDNN's blocked layout; ``.to_dense()`` gives it back."""
    return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None)


def linear(x: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None, post_op: tuple) -> torch.Tensor:
    """``x @ weight.T + bias`` then ``post_op`` (``("none", [], "")`` or ``("gelu", [], "tanh")``) in one
    kernel, on a weight from ``pack_weight``."""
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, *post_op)


def check() -> list[str]:
    reason = unavailable()
    return [f"torch {torch.__version__}: oneDNN packed linear layers "
            + (f"off ({reason})" if reason else "available (each layer shape is trial-called)")]
