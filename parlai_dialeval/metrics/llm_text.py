"""How machine-written a participant's texts read, under a local causal LM on CPU: perplexity and burstiness.

A language model finds text written by a language model unsurprising (low perplexity) and evenly so (low
burstiness: the spread of its tokens' surprisal), while people chatting are surprising, and unevenly (typos, slang,
a sudden turn). Per text: ``log_perplexity`` (the mean negative log-likelihood of its tokens, nats) and
``burstiness`` (their standard deviation); its ``score`` is their sum, lower reading more machine-like. Per
worker: the mean score of their texts of ``MIN_TOKENS`` or more, weighted by tokens; the signal fires below
``THRESHOLD``.

What it cannot do (and why the evidence table never flags on it alone: analysis/evidence.py): the scores depend on
the model used; short messages say little; text an LLM wrote and a person edited, or a model unlike the scorer,
reads as human; a fluent, formal person reads as a machine. Its error rates on our own data, at ``THRESHOLD`` with
SmolLM2-135M-Instruct (the tests' real model), are measured by benchmarks/bench_rater_integrity.py and given in
benchmarks/README.md ("Votes worth trusting"): quote them with the score, never the score alone.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

MIN_TOKENS = 8  # texts shorter than this are not scored (their perplexity is mostly the first token's)
MAX_TOKENS = 256
# worker mean of log-perplexity + burstiness below which the signal fires: between the benchmark's workers pasting
# SmolLM2's replies (at most 5.7) and those typing people's messages of Ji et al. (at least 6.2); chosen on that
# run, so a fresh sample's error rates (benchmarks/README.md) are the ones to quote
THRESHOLD = 6.0
MIN_SCORED = 3  # texts a worker needs scored before the signal may fire


def text_scores(texts: list[str], model, tokenizer, batch_size: int = 16) -> pd.DataFrame:
    """Per text: tokens scored, log_perplexity, burstiness and score (NaN for texts under ``MIN_TOKENS``)."""
    import torch

    rows = []
    device = next(model.parameters()).device
    for start in range(0, len(texts), batch_size):
        chunk = texts[start:start + batch_size]
        ids = [tokenizer(text, add_special_tokens=False)["input_ids"][:MAX_TOKENS] for text in chunk]
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        ids = [[bos] + row for row in ids]  # the first token is scored too, from the start of a text
        width = max(len(row) for row in ids)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else bos
        tensor = torch.tensor([row + [pad] * (width - len(row)) for row in ids], device=device)
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in ids], device=device)
        with torch.inference_mode():
            logits = model(input_ids=tensor, attention_mask=mask).logits.float()
        losses = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), tensor[:, 1:], reduction="none")
        for row, loss in zip(ids, losses.cpu().numpy()):
            token_loss = loss[:len(row) - 1]
            if len(token_loss) < MIN_TOKENS:
                rows.append((len(token_loss), np.nan, np.nan))
            else:
                rows.append((len(token_loss), float(token_loss.mean()), float(token_loss.std())))
    frame = pd.DataFrame(rows, columns=["tokens", "log_perplexity", "burstiness"])
    return frame.assign(score=frame["log_perplexity"] + frame["burstiness"])


def worker_scores(texts: pd.DataFrame, scores: pd.DataFrame, threshold: float = THRESHOLD) -> pd.DataFrame:
    """Per worker: ``llm_texts`` scored, ``llm_score`` (token-weighted mean), ``llm_flag`` and ``why_llm``, from
    ``texts`` (worker_id per text) and ``text_scores`` of the same texts in order."""
    frame = pd.DataFrame({"worker_id": texts["worker_id"].astype(str).to_numpy(), "tokens": scores["tokens"],
                          "score": scores["score"]}).dropna()
    rows = []
    for worker, part in frame.groupby("worker_id", sort=True):
        score = float(np.average(part["score"], weights=part["tokens"]))
        fires = len(part) >= MIN_SCORED and score < threshold
        rows.append({"worker_id": worker, "llm_texts": int(len(part)), "llm_score": score, "llm_flag": fires,
                     "why_llm": (f"texts read as machine-written: log-perplexity + burstiness {score:.2f} under "
                                 f"{threshold:g} over {len(part)} texts (error rates: benchmarks/README.md)")
                     if fires else ""})
    return pd.DataFrame(rows, columns=["worker_id", "llm_texts", "llm_score", "llm_flag", "why_llm"])


def score_workers(texts: pd.DataFrame, model_path: str, threshold: float = THRESHOLD) -> pd.DataFrame:
    """``worker_scores`` with the model loaded from ``model_path`` (a Hugging Face folder or name; nothing is
    downloaded where it is a folder), on CPU unless a GPU is there."""
    from parlai_dialeval.metrics.lm_loading import free_cpu_threads, load_causal_lm, pick_device, torch_threads

    model, tokenizer = load_causal_lm(model_path)
    with torch_threads(free_cpu_threads(pick_device())):
        scores = text_scores(texts["text"].astype(str).tolist(), model, tokenizer)
    return worker_scores(texts, scores, threshold)
