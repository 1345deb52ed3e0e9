"""Train a tiny GPT-2 on (message, response) pairs on CPU: byte-level BPE tokenizer and model both
built locally from the corpus, nothing downloaded.

Each example is ``message <|sep|> response <|endoftext|>``; the loss covers the response only.
"""
from __future__ import annotations

import random
from pathlib import Path

import torch
from tokenizers import ByteLevelBPETokenizer
from tqdm import tqdm
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from parlai_dialeval.agents.hf_lm.config import EOS, SEP, TrainConfig


def build_tokenizer(texts: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS, SEP],
                            show_progress=False)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=EOS, bos_token=EOS, unk_token=EOS,
                                   pad_token=EOS, sep_token=SEP)


def encode_pair(tokenizer, message: str, response: str, max_len: int) -> tuple[list[int], list[int]]:
    """Token ids and labels (-100 over the prompt, so only the response is learned)."""
    prompt = tokenizer.encode(message + SEP)[-(max_len // 2):]
    reply = tokenizer.encode(response + EOS)[: max_len - len(prompt)]
    return prompt + reply, [-100] * len(prompt) + reply


def train(pairs: list[tuple[str, str]], out_dir: Path, config: TrainConfig = TrainConfig()) -> dict:
    """Train and save model + tokenizer to ``out_dir``; returns {"steps", "last_epoch_loss"} (the
    mean training loss over the last epoch's worth of steps)."""
    torch.manual_seed(config.seed)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        return _train(pairs, out_dir, config)
    finally:
        torch.set_num_threads(previous_threads)


def _train(pairs: list[tuple[str, str]], out_dir: Path, config: TrainConfig) -> dict:
    rng = random.Random(config.seed)
    tokenizer = build_tokenizer([m for m, _ in pairs] + [r for _, r in pairs], config.vocab_size)
    model = GPT2LMHeadModel(GPT2Config(
        vocab_size=len(tokenizer), n_positions=config.max_len, n_embd=config.n_embd,
        n_layer=config.n_layer, n_head=config.n_head, bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id))
    examples = [encode_pair(tokenizer, m, r, config.max_len) for m, r in pairs]
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    batches_per_epoch = (len(examples) + config.batch_size - 1) // config.batch_size
    total = batches_per_epoch * config.epochs
    if config.max_steps is not None:
        total = min(total, config.max_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / max(total, 1))
    model.train()
    step, losses = 0, []
    with tqdm(total=total, desc="training hf_lm", unit="step") as bar:
        while step < total:
            for batch in _batches(examples, config.batch_size, rng):
                if step >= total:
                    break
                ids, labels, mask = _pad(batch, tokenizer.pad_token_id)
                loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                step += 1
                losses.append(loss.item())
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    last_epoch = losses[-batches_per_epoch:]
    return {"steps": step, "last_epoch_loss": round(sum(last_epoch) / max(len(last_epoch), 1), 4)}


def _batches(examples: list, size: int, rng: random.Random) -> list[list]:
    """Shuffled batches of similar length: sorting within pools of 20 batches cuts padding, and so
    CPU time, while keeping batches random."""
    examples = examples[:]
    rng.shuffle(examples)
    pool = size * 20
    batches = []
    for start in range(0, len(examples), pool):
        chunk = sorted(examples[start:start + pool], key=lambda example: len(example[0]))
        batches += [chunk[i:i + size] for i in range(0, len(chunk), size)]
    rng.shuffle(batches)
    return batches


def _pad(batch, pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max(len(ids) for ids, _ in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, (x, y) in enumerate(batch):
        ids[row, :len(x)] = torch.tensor(x)
        labels[row, :len(y)] = torch.tensor(y)
        mask[row, :len(x)] = 1
    return ids, labels, mask
