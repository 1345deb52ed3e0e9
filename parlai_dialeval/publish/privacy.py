"""Participants' privacy before a study leaves the machine: keyed pseudonyms for worker and assignment
ids, and free text scrubbed of e-mail addresses, phone numbers, URLs and known names, with an account of
every replacement that never repeats the replaced value.

Pseudonyms are HMAC-SHA256 of the id under the study's secret key (``worker-`` + 16 hex digits): the same
key maps the same id to the same pseudonym on every run, and without the key nobody can test a guessed id.
The key is a file the researcher keeps (default ``$DIALEVAL_HOME/publish_keys/<study>.key``, created
owner-only on first use); it is never written into a published folder.

Text is scrubbed with scrubadub (pattern detectors only: nothing is downloaded or loaded from the network).
It has no offline name recogniser (its TextBlob and spaCy detectors need tagger data or a model fetched
at run time), so names are those the researcher lists (``names``), matched case-insensitively as words.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from parlai_dialeval.errors import DialevalError

KEY_BYTES = 32
PSEUDONYM_PREFIX = {"worker_id": "worker-", "assignment_id": "assignment-"}


def read_or_create_key(path: Path, log=print) -> bytes:
    """The study's secret: read from ``path``, or made there (owner-only) when the file does not exist."""
    path = Path(path)
    if path.exists():
        key = path.read_bytes().strip()
        if len(key) < 32:
            raise DialevalError(f"{path}: the pseudonym key is shorter than 32 characters (expected the file "
                                "dialeval publish created; delete it only if no published pseudonyms depend on it)")
        return key
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(KEY_BYTES).encode()
    with open(path, "xb", opener=lambda p, flags: os.open(p, flags, 0o600)) as handle:
        handle.write(key + b"\n")
    if log:
        log(f"created the pseudonym key {path} (keep it private and keep it: re-runs with it map every id the "
            "same way; it is never published)")
    return key


class Pseudonymiser:
    """Stable keyed pseudonyms; ``mapped`` counts how many distinct ids of each field were replaced."""

    def __init__(self, key: bytes):
        self._key = key
        self._memo: dict[tuple[str, str], str] = {}

    def __call__(self, field_name: str, value: str) -> str:
        memo = self._memo.get((field_name, value))
        if memo is None:
            digest = hmac.new(self._key, f"{field_name}\0{value}".encode(), hashlib.sha256).hexdigest()[:16]
            memo = self._memo[(field_name, value)] = PSEUDONYM_PREFIX.get(field_name, "id-") + digest
        return memo

    def mapped(self) -> dict[str, int]:
        return dict(Counter(name for name, _ in self._memo))


def _email_detector():
    import scrubadub.detectors

    class PlainEmailDetector(scrubadub.detectors.EmailDetector):
        # scrubadub's default also reads spelled-out forms ("me at jo dot com"), which match ordinary prose
        # and cut real addresses short ("Mail me at jo.smith@x.org" -> "Mail {{EMAIL}}@x.org")
        name = "email"
        regex = re.compile(r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+", re.UNICODE)

    return PlainEmailDetector


@dataclass
class ScrubReport:
    """What was replaced: counts per kind, and one entry per replacement (where and what kind, no value)."""

    counts: Counter = field(default_factory=Counter)
    entries: list[dict] = field(default_factory=list)

    def add(self, where: dict, kinds: list[str]) -> None:
        for kind in kinds:
            self.counts[kind] += 1
            self.entries.append({**where, "kind": kind})


class Scrubber:
    """Replaces e-mail addresses, phone numbers (``region``'s numbering plan and international ones), URLs
    and the listed ``names`` in text with ``{{KIND}}`` placeholders."""

    def __init__(self, names: list[str] = (), region: str = "US"):
        import scrubadub
        from scrubadub.detectors import PhoneDetector, UrlDetector, UserSuppliedFilthDetector

        self._scrubber = scrubadub.Scrubber(detector_list=[_email_detector(), PhoneDetector, UrlDetector],
                                            locale=f"en_{region}")
        names = sorted({n.strip() for n in names if n.strip()})
        if names:
            self._scrubber.add_detector(UserSuppliedFilthDetector(
                [{"match": n, "filth_type": "name", "ignore_case": True, "ignore_partial_word_matches": True}
                 for n in names], name="names"))
        # What each detector needs before it can match ("@"; http or www., as scrubadub's URL pattern begins;
        # five digits, fewer than any valid number with its country code; a listed name): texts without any
        # (most chat turns) skip the detectors, which cost about 0.3 ms a text (a million votes' texts: minutes).
        self._gate = re.compile("|".join([r"@", r"(?i:https?:|www\.)", r"(?:\d\D{0,3}){5}"]
                                         + [r"(?i:" + re.escape(n) + ")" for n in names]))
        self._memo: dict[str, tuple[str, tuple[str, ...]]] = {}

    def scrub(self, text: str) -> tuple[str, tuple[str, ...]]:
        """(text with each finding replaced, the kinds found in order); the same text is scrubbed once."""
        if not self._gate.search(text):
            return text, ()
        known = self._memo.get(text)
        if known is not None:
            return known
        found = list(self._scrubber.iter_filth(text))
        if not found:
            result = (text, ())
        else:
            pieces, kinds, end = [], [], 0
            for filth in found:  # merged overlaps (a name inside an address) arrive as one finding
                if filth.beg < end:
                    continue
                parts = getattr(filth, "filths", None) or [filth]
                kind = parts[0].type
                pieces += [text[end:filth.beg], "{{" + kind.upper() + "}}"]
                kinds.append(kind)
                end = filth.end
            result = ("".join(pieces) + text[end:], tuple(kinds))
        self._memo[text] = result
        return result
