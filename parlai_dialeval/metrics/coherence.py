"""Penalised semantic similarity coherence (Dziri et al. 2019, as used by Santhanam & Shaikh 2020).

SS(u_j, r) = P x (1 - cos(e(u_j), e(r))) for each context utterance u_j and response r, averaged
over the context; lower means the response is closer to the dialogue (more coherent). The penalty
P = 1 + log((2 + L') / (2 + L'')) inflates the distance of dull, generic responses: L' is the
response's length without stop words and punctuation, L'' the length of its non-dull part without
stop words. The sentence encoder is pluggable: any callable ``texts -> 2-D array``; the default,
TF-IDF (scikit-learn), needs no download; ``HFMeanPoolEncoder`` mean-pools a local Transformer.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Iterable, Sequence

import numpy as np

Encoder = Callable[[Sequence[str]], np.ndarray]

# Generic replies whose words do not count as content (THRED's own list is not published with the
# paper; pass ``dull_phrases`` to use another).
DULL_PHRASES = ("i don't know", "i do not know", "i'm not sure", "i am not sure", "i have no idea",
                "i don't think so", "what do you mean", "i'm sorry", "thank you", "thanks", "okay", "ok",
                "yes", "no", "me too", "i see", "oh")
WORD = re.compile(r"[a-z0-9']+")


class TfidfEncoder:
    """TF-IDF vectors fitted on the texts of each call (context and responses together); no columns
    when no text holds a word (emoji or punctuation only), where scikit-learn refuses to fit."""

    TOKEN = r"(?u)\b\w+\b"

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not any(re.search(self.TOKEN, text) for text in texts):
            return np.zeros((len(texts), 0))
        return TfidfVectorizer(token_pattern=self.TOKEN).fit_transform(texts).toarray()


class HFMeanPoolEncoder:
    """Mean of a Hugging Face encoder's last hidden states over the tokens (local name or path)."""

    def __init__(self, name_or_path: str, device: str | None = None, batch_size: int = 32):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = AutoModel.from_pretrained(name_or_path).to(self.device).eval()
        self.batch_size = batch_size

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        with self.torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(list(texts[start: start + self.batch_size]), padding=True,
                                       truncation=True, return_tensors="pt").to(self.device)
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                out.append(((hidden * mask).sum(1) / mask.sum(1).clamp(min=1)).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0))


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return ENGLISH_STOP_WORDS


def penalty(response: str, dull_phrases: Iterable[str] = DULL_PHRASES) -> float:
    """P = 1 + log((2 + L') / (2 + L'')); 1 for a response without dull parts."""
    stop = _stop_words()
    text = response.lower()
    content = [w for w in WORD.findall(text) if w not in stop]
    for phrase in sorted(dull_phrases, key=len, reverse=True):
        text = re.sub(r"(?<![a-z0-9'])" + re.escape(phrase) + r"(?![a-z0-9'])", " ", text)
    non_dull = [w for w in WORD.findall(text) if w not in stop]
    return 1 + math.log((2 + len(content)) / (2 + len(non_dull)))


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.divide((a * b).sum(-1), norms, out=np.zeros(len(a)), where=norms > 0)


def semantic_similarity(dialogues: Sequence[tuple[Sequence[str], str]], encoder: Encoder | None = None,
                        dull_phrases: Iterable[str] = DULL_PHRASES) -> list[float]:
    """SS of each (context utterances, response) pair, averaged over its context (nan if empty, or if
    the encoder found nothing to encode in any text: no distance can be measured then)."""
    encoder = encoder or TfidfEncoder()
    texts, spans = [], []
    for context, response in dialogues:
        start = len(texts)
        texts += list(context) + [response]
        spans.append((start, len(texts) - 1))
    vectors = np.asarray(encoder(texts), dtype=float) if texts else np.zeros((0, 0))
    scores = []
    for (start, end), (_, response) in zip(spans, dialogues):
        if end == start or vectors.shape[1] == 0:
            scores.append(float("nan"))
            continue
        distance = 1 - _cosine(vectors[start:end], np.repeat(vectors[end][None], end - start, axis=0))
        scores.append(float(penalty(response, dull_phrases) * distance.mean()))
    return scores
