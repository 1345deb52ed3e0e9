"""A GPT-2 built locally (no downloads): byte-level BPE trained on a few sentences, random weights,
saved with ``save_pretrained`` so that tests and benchmarks load it back by path like a real model."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

EOS = "<|endoftext|>"
# a chat template for these models (a tokenizer trained here has none), ChatML-like as many chat models ship it
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")

CORPUS = [
    "Hi! How are you doing today?", "I'm good, thanks. What about you?", "That's really interesting!",
    "Tell me more about your favourite movie.", "I don't understand what you're saying.",
    "Let's change the topic.", "You're not very nice.", "Stop repeating yourself!",
    "Wow that is really interesting.", "That makes sense!", "I like you!", "What does that even mean?",
]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 400):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(texts), vocab_size=vocab_size, min_frequency=1, special_tokens=[EOS])
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token=EOS, eos_token=EOS,
                                   pad_token=EOS)


def build_gpt2(path: str | Path, texts: Iterable[str] = CORPUS, n_layer: int = 2, n_embd: int = 32,
               n_head: int = 2, n_positions: int = 256, vocab_size: int | None = None,
               tokenizer_vocab: int = 400, seed: int = 0) -> Path:
    """Save a GPT-2 and its tokenizer under ``path``; ``vocab_size`` defaults to the tokenizer's."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    path = Path(path)
    tokenizer = train_tokenizer(texts, tokenizer_vocab)
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab_size or len(tokenizer), n_positions=n_positions, n_embd=n_embd,
                        n_layer=n_layer, n_head=n_head, bos_token_id=tokenizer.eos_token_id,
                        eos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
