"""Repeated prompts in an arena study. The same question asked twice is not a new item: per participant
it is one person's second vote on it, and across the study a popular prompt ("hi") would weigh as many
times as it is asked (LMArena deduplicates its most repeated prompts for that reason).

Two prompts are the same (``exact``) when they are equal after normalisation (Unicode NFKC, case folded,
punctuation dropped, white space collapsed), and near-duplicates (``near``) when the Jaccard similarity of
their character 3-grams reaches the study's threshold. Hand-written: a set comparison per earlier prompt,
which a study of thousands of battles affords (MinHash indexes pay off at millions).

Policies (``arena.dedup``), each ``refuse`` (the page asks for another prompt), ``void`` (the battle runs;
its votes are exported with ``duplicate_prompt: true`` and left out of analyses) or ``keep``.
"""
from __future__ import annotations

import threading
import unicodedata
from dataclasses import dataclass

POLICIES = ("refuse", "void", "keep")
SHINGLE = 3


def normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(c if not unicodedata.category(c).startswith(("P", "S")) else " " for c in folded)
    return " ".join(kept.split())


def shingles(text: str) -> frozenset:
    """Character 3-grams of a normalised text (the text itself when shorter)."""
    if len(text) <= SHINGLE:
        return frozenset([text])
    return frozenset(text[i:i + SHINGLE] for i in range(len(text) - SHINGLE + 1))


@dataclass(frozen=True)
class Match:
    battle: str  # the earlier battle whose prompt this one repeats
    worker: str
    kind: str  # exact | near
    similarity: float


class PromptIndex:
    """The opening prompts of a study's battles, shared by every participant's world (thread-safe)."""

    def __init__(self, threshold: float = 0.8):
        if not 0 < threshold <= 1:
            raise ValueError(f"arena.dedup.near_threshold={threshold}: expected a similarity in (0, 1]")
        self.threshold = threshold
        self._lock = threading.Lock()
        self._entries: list[tuple[str, str, str, frozenset]] = []  # battle, worker, normalised, shingles
        self._exact: dict[str, tuple[str, str]] = {}

    def find(self, text: str, worker: str) -> tuple[Match | None, Match | None]:
        """(the closest earlier battle of the same worker, of another worker) whose prompt ``text`` repeats."""
        norm = normalise(text)
        grams = shingles(norm)
        best: dict[bool, Match] = {}
        with self._lock:
            entries = list(self._entries)
        for battle, who, other, other_grams in entries:
            same = who == worker
            if other == norm:
                similarity, kind = 1.0, "exact"
            else:
                similarity = len(grams & other_grams) / len(grams | other_grams)
                kind = "near"
            if similarity >= self.threshold and (same not in best or similarity > best[same].similarity):
                best[same] = Match(battle, who, kind, similarity)
        return best.get(True), best.get(False)

    def add(self, battle: str, worker: str, text: str) -> None:
        norm = normalise(text)
        with self._lock:
            self._entries.append((battle, worker, norm, shingles(norm)))


@dataclass(frozen=True)
class DedupPolicy:
    per_participant: str = "refuse"
    across_study: str = "void"
    near_threshold: float = 0.8

    def __post_init__(self):
        for name in ("per_participant", "across_study"):
            if getattr(self, name) not in POLICIES:
                raise ValueError(f"arena.dedup.{name}={getattr(self, name)!r}: expected one of {', '.join(POLICIES)}")

    def decide(self, mine: Match | None, others: Match | None) -> tuple[str, Match | None]:
        """What to do with a new battle's prompt: (refuse | void | keep, the match that decided)."""
        for policy, match in ((self.per_participant, mine), (self.across_study, others)):
            if match is not None and policy == "refuse":
                return "refuse", match
        for policy, match in ((self.per_participant, mine), (self.across_study, others)):
            if match is not None and policy == "void":
                return "void", match
        return "keep", mine or others

    def describe(self) -> dict:
        return {"per_participant": self.per_participant, "across_study": self.across_study,
                "near_threshold": self.near_threshold,
                "method": "prompts normalised (NFKC, case folded, punctuation dropped, spaces collapsed): equal = exact "
                          f"duplicate; Jaccard similarity of character {SHINGLE}-grams >= near_threshold = near duplicate",
                "policies": "refuse: the page asks for another prompt; void: the battle runs, its votes are marked "
                            "duplicate_prompt and left out of analyses; keep: counted"}
