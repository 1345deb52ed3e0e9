"""FED (Mehri & Eskenazi 2020): dialogue quality from how likely a dialogue LM finds follow-ups.

For each quality, DialoGPT (playing the user) scores positive follow-ups ("Wow that is really
interesting.") and negative ones ("That's really boring.") after the dialogue. Two modes:

- ``reference``: the reference implementation's numbers (github Shikib/fed, fed.py): each text
  ``conversation + " <|endoftext|> " + follow-up`` scores ``model(ids, labels=ids).loss``, the mean
  token NLL over the WHOLE sequence, context included; a quality is the mean NLL of its negative
  follow-ups minus that of its positive ones (an empty list contributes 0).
- ``conditional``: the paper's equation (1): the log-likelihood of the follow-up's tokens alone given
  the dialogue, summed over positive follow-ups minus summed over negative ones.

Higher is better in both. The follow-ups (``fed_followups.json``, shipped with the package) are the
algorithm's constants, from the reference implementation; Ji et al. (2022)'s ``fun`` and ``robotic``
are there too. Conversations are strings in the reference's format: turns joined by
`` <|endoftext|> `` (a leading ``<|endoftext|> `` is added when missing, as the reference does).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from parlai_dialeval.errors import DataError, DialevalError

EOS = "<|endoftext|>"
SEPARATOR = f" {EOS} "
DEFAULT_MODEL = "microsoft/DialoGPT-large"
MODES = ("reference", "conditional")
FOLLOWUPS_FILE = Path(__file__).with_name("fed_followups.json")
# Groups of the spec file: the 18 qualities of the paper, then Ji et al.'s adapted ones.
LEVEL_KEYS = {"turn": "turn_level", "dialog": "dialog_level", "ji2022": "ji2022_adapted_criteria"}


@dataclass(frozen=True)
class Quality:
    name: str
    level: str  # turn | dialog | ji2022 | custom
    positive: tuple[str, ...]
    negative: tuple[str, ...]


def load_followups(path: str | os.PathLike | None = None) -> dict[str, Quality]:
    """Follow-up sets by quality name, from the shipped spec or a custom JSON file.

    A custom file is either laid out like the spec (``turn_level`` / ``dialog_level`` /
    ``ji2022_adapted_criteria`` groups) or a flat ``{quality: {"positive": [...], "negative": [...]}}``.
    """
    path = Path(path) if path is not None else FOLLOWUPS_FILE
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataError(path, f"not valid JSON ({error.msg})", line=error.lineno) from None
    if not isinstance(spec, dict):
        raise DataError(path, "not a JSON object", expected="{quality: {positive: [...], negative: [...]}}")
    grouped = any(key in spec for key in LEVEL_KEYS.values())
    groups = ({level: spec.get(key, {}) for level, key in LEVEL_KEYS.items()} if grouped
              else {"custom": spec})
    qualities: dict[str, Quality] = {}
    for level, group in groups.items():
        for name, sets in group.items():
            if name == "note":
                continue
            qualities[name] = _quality(path, level, name, sets)
    if not qualities:
        raise DataError(path, "no follow-up sets found", expected="{quality: {positive: [...], negative: [...]}}")
    return qualities


def _quality(path, level, name, sets) -> Quality:
    if not isinstance(sets, dict) or not {"positive", "negative"} <= set(sets):
        raise DataError(path, "follow-up set needs 'positive' and 'negative' lists", field=name, got=sets)
    for key in ("positive", "negative"):
        texts = sets[key]
        if not isinstance(texts, list) or not all(isinstance(t, str) and t.strip() for t in texts):
            raise DataError(path, "follow-ups must be a list of non-empty strings", field=f"{name}.{key}", got=texts)
        if any(EOS in t for t in texts):
            raise DataError(path, f"a follow-up may not contain {EOS}", field=f"{name}.{key}")
    if not sets["positive"] and not sets["negative"]:
        raise DataError(path, "quality has no follow-ups at all", field=name)
    return Quality(name, level, tuple(sets["positive"]), tuple(sets["negative"]))


def select_qualities(followups: Mapping[str, Quality], names: Iterable[str] | str | None = None) -> list[str]:
    """Quality names to score. ``None``/"reference": the paper's 18 (turn + dialog); "turn", "dialog",
    "ji2022" (Ji et al.'s fun and robotic) and "all" are groups; anything else is a quality name."""
    if names is None or isinstance(names, str):
        names = [names or "reference"]
    groups = {"reference": ("turn", "dialog"), "all": None, "turn": ("turn",), "dialog": ("dialog",),
              "ji2022": ("ji2022",)}
    chosen: list[str] = []
    for name in names:
        if name in groups:
            levels = groups[name]
            picked = [q.name for q in followups.values() if levels is None or q.level in levels]
            if not picked and name == "reference":
                picked = list(followups)  # a custom flat file: its own qualities are the reference set
        elif name in followups:
            picked = [name]
        else:
            raise DialevalError(f"unknown FED quality '{name}'; known: {', '.join(followups)} "
                                f"(or a group: {', '.join(groups)})")
        chosen += [p for p in picked if p not in chosen]
    return chosen


def normalise(conversation: str) -> str:
    """The reference's input: a leading ``<|endoftext|> `` is added when missing."""
    return conversation if conversation.startswith(EOS + " ") else f"{EOS} {conversation}"


def join_turns(turns: Sequence[str]) -> str:
    """A list of utterances as the reference's conversation string."""
    return normalise(SEPARATOR.join(t.strip() for t in turns))


def combine(quality: Quality, value: Mapping[str, float], mode: str) -> float:
    """One quality's score from per-follow-up values (reference: mean NLL; conditional: log-likelihood)."""
    pos = [value[m] for m in quality.positive]
    neg = [value[m] for m in quality.negative]
    if mode == "reference":
        return sum(neg) / max(len(neg), 1) - sum(pos) / max(len(pos), 1)
    return sum(pos) - sum(neg)


class FedScorer:
    """``FedScorer(model, mode).score(conversations)`` -> one ``{quality: score}`` per conversation.

    ``model``: a Hugging Face causal LM name or local path (or an already loaded model, with
    ``tokenizer``). ``batch_size``: rows of one forward pass (follow-ups of one or more dialogues).
    ``cache``: a dict (or ``ScoreCache``) of per-text values keyed by model, mode and text.
    ``packing``: oneDNN pre-packed linear layers for a model loaded here on CPU (metrics/lm_packing.py);
    None = on unless ``$DIALEVAL_PACKING`` is 0. ``packed``: whether any layer was packed.
    """

    def __init__(self, model=DEFAULT_MODEL, mode: str = "reference", device=None, batch_size: int = 16,
                 dtype: str | None = None, followups: str | os.PathLike | Mapping[str, Quality] | None = None,
                 qualities: Iterable[str] | str | None = None, tokenizer=None, cache=None,
                 progress: bool = False, max_tokens: int = 2048, packing: bool | None = None):
        from parlai_dialeval.metrics.fed_lm import PrefixLM
        from parlai_dialeval.metrics.lm_loading import load_causal_lm
        from parlai_dialeval.metrics.lm_packing import PackedLinear
        from parlai_dialeval.options import check_opt

        if mode not in MODES:
            raise DialevalError(f"unknown FED mode '{mode}'; choose {' or '.join(MODES)}")
        check_opt({"batch_size": batch_size, "max_tokens": max_tokens},
                  {"batch_size": "positive_int", "max_tokens": "positive_int"}, "FED")
        self.mode = mode
        if isinstance(model, (str, os.PathLike)):
            self.model_name = str(model)
            self.model, self.tokenizer = load_causal_lm(self.model_name, device, dtype, packing=packing)
        else:
            if tokenizer is None:
                raise DialevalError("a loaded model needs its tokenizer (tokenizer=...)")
            self.model, self.tokenizer = model, tokenizer
            self.model_name = getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.packed = any(isinstance(module, PackedLinear) for module in self.model.modules())
        self.eos_id = self.tokenizer.convert_tokens_to_ids(EOS)
        if self.eos_id is None or self.tokenizer.convert_ids_to_tokens(self.eos_id) != EOS:
            raise DialevalError(f"the tokenizer of '{self.model_name}' has no {EOS} token")
        self.followups = dict(followups) if isinstance(followups, Mapping) else load_followups(followups)
        self.qualities = select_qualities(self.followups, qualities)
        # Conditional mode reads only the follow-ups' losses (``tail``): the context's are not needed.
        self.lm = PrefixLM(self.model, batch_size=batch_size, max_tokens=max_tokens,
                           prefix_losses=mode == "reference")
        self.cache = cache if cache is not None else {}
        self.progress = progress

    def followup_texts(self) -> list[str]:
        """The distinct follow-ups of the chosen qualities (many repeat across qualities)."""
        texts: list[str] = []
        for name in self.qualities:
            quality = self.followups[name]
            texts += [m for m in quality.positive + quality.negative if m not in texts]
        return texts

    def cache_key(self, text: str) -> str:
        return hashlib.sha1(f"{self.model_name}\0{self.mode}\0{text}".encode()).hexdigest()

    def text_values(self, conversations: Sequence[str]) -> list[dict[str, float]]:
        """Per conversation, each follow-up's value: mean NLL of the whole text (reference) or the
        follow-up's log-likelihood (conditional)."""
        from tqdm.auto import tqdm

        conversations = [normalise(c) for c in conversations]
        texts = self.followup_texts()
        values: list[dict[str, float]] = [{} for _ in conversations]
        todo: list[tuple[int, list[str]]] = []
        for i, conversation in enumerate(conversations):
            missing = []
            for m in texts:
                key = self.cache_key(conversation + SEPARATOR + m)
                if key in self.cache:
                    values[i][m] = self.cache[key]
                else:
                    missing.append(m)
            if missing:
                todo.append((i, missing))
        groups, starts = [], []
        for i, missing in todo:
            encoded = self.tokenizer([conversations[i] + SEPARATOR + m for m in missing],
                                     add_special_tokens=False)["input_ids"]
            groups.append(encoded)
            starts.append([self._followup_start(ids) for ids in encoded])
        losses = []
        if groups:
            with tqdm(total=len(groups), desc="FED", unit="dialogue", disable=not self.progress) as bar:
                losses = self.lm.score(groups, starts, progress=bar)
        for (i, missing), group in zip(todo, losses):
            for m, loss in zip(missing, group):
                value = loss.total / loss.count if self.mode == "reference" else -loss.tail
                values[i][m] = value
                self.cache[self.cache_key(conversations[i] + SEPARATOR + m)] = value
        return values

    def _followup_start(self, ids: Sequence[int]) -> int:
        # Follow-ups never contain the separator token, so they start after its last occurrence.
        return len(ids) - list(reversed(ids)).index(self.eos_id)

    def score(self, conversations: Sequence[str]) -> list[dict[str, float]]:
        if isinstance(conversations, str):
            raise DialevalError("score() takes a list of conversation strings")
        return [{name: combine(self.followups[name], value, self.mode) for name in self.qualities}
                for value in self.text_values(conversations)]


class ScoreCache(dict):
    """A dict of per-text values persisted as JSON Lines ``{"key": ..., "value": ...}`` (append-only)."""

    def __init__(self, path: str | os.PathLike):
        super().__init__()
        self.path = Path(path)
        if self.path.exists():
            with open(self.path, encoding="utf-8") as handle:
                for n, line in enumerate(handle, 1):
                    if line.strip():
                        try:
                            entry = json.loads(line)
                            super().__setitem__(entry["key"], float(entry["value"]))
                        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                            raise DataError(self.path, "bad cache entry", line=n,
                                            expected='{"key": str, "value": number}', got=line.strip())
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def __setitem__(self, key, value):
        if key not in self:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"key": key, "value": value}) + "\n")
        super().__setitem__(key, value)
