"""What ``metrics/lm_packing.py`` relies on in transformers' GPT-2 (written for transformers 5.17.0): it moves
the MLP's tanh GELU into a packed ``c_fc`` (one oneDNN kernel), which is the same arithmetic only while
``GPT2MLP.forward`` applies ``act`` straight to ``c_fc``'s output. ``gpt2_mlp()`` gives the class where that
holds, None otherwise (the layers are then packed without the GELU moved: slower, never wrong); ``check()``
(install.sh) says so loudly. Retire when transformers fuses the MLP's GELU itself.
"""
from __future__ import annotations

from parlai_dialeval.compat.patching import CompatError, require_call, require_version

WRITTEN_FOR = "5.17.0"
MLP_STEPS = "hidden_states = self.c_fc(hidden_states)\n        hidden_states = self.act(hidden_states)"


def mlp_unfit() -> str | None:
    """Why GPT-2's MLP does not fit the GELU move (None: it fits)."""
    try:
        require_version("transformers", WRITTEN_FOR, "the GPT-2 MLP's GELU in c_fc")
        from transformers.models.gpt2.modeling_gpt2 import GPT2MLP

        require_call(GPT2MLP.forward, MLP_STEPS, "the GPT-2 MLP's GELU in c_fc")
    except (CompatError, ImportError) as error:
        return str(error)
    return None


def gpt2_mlp():
    """transformers' ``GPT2MLP`` class where the GELU move fits, else None."""
    if mlp_unfit() is not None:
        return None
    from transformers.models.gpt2.modeling_gpt2 import GPT2MLP

    return GPT2MLP


def check() -> list[str]:
    reason = mlp_unfit()
    if reason is not None:
        raise CompatError(reason)
    return [f"transformers {WRITTEN_FOR}: GPT-2's MLP applies act to c_fc's output (its GELU is fused when packed)"]
