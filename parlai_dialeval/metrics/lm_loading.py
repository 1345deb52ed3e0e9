"""Loading a Hugging Face causal LM for scoring (FED, the local judge): eval mode on a device, then the
CPU surgery of ``lm_packing`` (the same fp32 arithmetic, faster kernels)."""
from __future__ import annotations

import torch

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.metrics.lm_packing import fuse_gelu, pack_linear_layers

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def pick_device(device: str | torch.device | None = None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


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
    model.to(pick_device(device)).eval()
    fuse_gelu(model)
    pack_linear_layers(model, packing)
    return model, tokenizer
