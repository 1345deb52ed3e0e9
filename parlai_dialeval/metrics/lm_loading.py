"""Loading a Hugging Face causal LM for scoring (FED, the local judge): eval mode on a device, then the
CPU surgery of ``lm_packing`` (the same fp32 arithmetic, faster kernels); how many CPU threads batched
work gets on a shared machine."""
from __future__ import annotations

import os
from contextlib import contextmanager

import torch

from parlai_dialeval.cores import usable_cores
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.metrics.lm_packing import fuse_gelu, pack_linear_layers

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def pick_device(device: str | torch.device | None = None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def on_device(model, device, who: str = ""):
    """``model`` moved to ``device`` (None: cuda when present) in eval mode; a device this torch cannot use (a
    torch without CUDA, a GPU that is not there, a misspelt name) is one line, ``who`` (e.g. "hf_chat: ") first."""
    try:
        return model.to(pick_device(device)).eval()
    except (RuntimeError, AssertionError) as error:
        raise DialevalError(f"{who}device {device!r} is not usable here: {str(error).splitlines()[0]}") from None


def load_causal_lm(name: str, device=None, dtype: str | None = None, packing: bool | None = None):
    """(model, tokenizer) for a Hugging Face causal LM name or local path, in eval mode on ``device``.
    ``packing``: pre-packed oneDNN linear layers on CPU; None = unless ``$DIALEVAL_PACKING`` is 0."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype not in (None, "auto") and dtype not in DTYPES:
        raise DialevalError(f"unknown dtype '{dtype}'; choose auto, {', '.join(DTYPES)}")
    kwargs = {"dtype": DTYPES[dtype]} if dtype in DTYPES else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
        model = AutoModelForCausalLM.from_pretrained(name, **kwargs)
    except OSError as error:
        raise DialevalError(f"cannot load the language model '{name}': {error}") from None
    on_device(model, device)
    fuse_gelu(model)
    pack_linear_layers(model, packing)
    return model, tokenizer


def free_cpu_threads(device) -> int | None:
    """torch's intra-op threads for batched CPU work: the cores that other processes leave free (by the
    1-minute load average, taken before the work starts), at least 1 and at most torch's default; None
    (leave torch's setting) off the CPU or where ``OMP_NUM_THREADS`` chooses. Why: torch's OpenMP team
    meets at every operator, so one of its threads waiting for a core held by another process stalls
    them all; on this project's shared 2-core machine at load 2.3 a 102-token forward of a 135M model
    took 0.49 s on one thread and 5.3-7.0 s on two (benchmarks/README.md, issue 28)."""
    if pick_device(device).type != "cpu" or os.environ.get("OMP_NUM_THREADS"):
        return None
    cores = usable_cores()
    busy = int(os.getloadavg()[0]) if hasattr(os, "getloadavg") else 0
    return max(1, min(torch.get_num_threads(), cores - busy))


def server_cpu_threads() -> int | None:
    """torch's intra-op threads for bots generating inside a live-chat server: ``free_cpu_threads`` less
    one core, left to the server itself (Mephisto's event loop and websockets, the other conversations'
    messages and page updates), at least 1; None where ``OMP_NUM_THREADS`` chooses. Why: a reply is
    seconds of compute-bound work; with every free core in its OpenMP team it holds up every other
    participant's messages meanwhile, and a team thread waiting for a core the server holds stalls the
    reply (``free_cpu_threads``). Replies of several conversations at once each get a team this size."""
    threads = free_cpu_threads("cpu")
    return None if threads is None else max(1, threads - 1)


@contextmanager
def torch_threads(count: int | None):
    """``torch.set_num_threads(count)`` inside the block, torch's previous setting after it (None: unchanged)."""
    before = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
