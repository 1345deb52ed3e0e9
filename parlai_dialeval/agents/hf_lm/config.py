"""Settings of the tiny offline LM and its prompt tokens, apart from the training code so that
commands which only need the defaults (``dialeval build_offline_bots --help``) do not load transformers."""
from __future__ import annotations

from dataclasses import dataclass

SEP, EOS = "<|sep|>", "<|endoftext|>"


@dataclass(frozen=True)
class TrainConfig:
    vocab_size: int = 2000
    n_embd: int = 128
    n_layer: int = 2
    n_head: int = 4
    max_len: int = 96
    epochs: int = 15
    batch_size: int = 32
    lr: float = 3e-3
    seed: int = 0
    max_steps: int | None = None  # stop early (tests)
    # One thread: measured 4x faster than two on the shared 2-core build machine (tiny matrices).
    threads: int = 1
