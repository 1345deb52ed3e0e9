"""Participants' privacy before a study leaves the machine: keyed pseudonyms for worker, assignment and HIT
ids, and free text scrubbed of e-mail addresses, phone numbers, URLs, listed names and the study's ids, with
an account of every replacement (and of every high-risk pattern left) that never repeats the text.

Pseudonyms are HMAC-SHA256 of the id under the study's secret key (``worker-`` + 16 hex digits): the same
key maps the same id to the same pseudonym on every run, and without the key nobody can test a guessed id.
The key is a file the researcher keeps (default ``$DIALEVAL_HOME/publish_keys/<study>.key``, created
owner-only on first use); it is never written into a published folder.

Text is scrubbed by the detectors of publish/detectors.py on its canonical view (publish/textview.py):
nothing is downloaded or loaded from the network. No name recogniser runs offline, so names are those
the researcher lists (``names``).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.publish.detectors import KnownIds, Names, Phones, emails, high_risk, urls
from parlai_dialeval.publish.textview import TextView, view

KEY_BYTES = 32
# Ids' fields, and what the detectors find in names (speakers, models, record ids, dict keys): publish/fields.py
# replaces a finding there by a pseudonym of its kind, so that names stay distinct and references still join.
PSEUDONYM_PREFIX = {"worker_id": "worker-", "assignment_id": "assignment-", "hit_id": "hit-", "name": "name-",
                    "email": "email-", "phone": "phone-"}


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


@dataclass
class ScrubReport:
    """What was replaced (``counts`` per kind) and what high-risk patterns were left (``left`` per kind), with
    one entry per finding (where, kind, replaced or left; never the text)."""

    counts: Counter = field(default_factory=Counter)
    left: Counter = field(default_factory=Counter)
    entries: list[dict] = field(default_factory=list)

    def add(self, where: dict, scrubbed: Scrubbed) -> None:
        """Count what ``scrubbed`` replaced and left at ``where`` (configuration, row, id, field)."""
        for kind in scrubbed.kinds:
            self.counts[kind] += 1
            self.entries.append({**where, "kind": kind, "action": "replaced"})
        for kind in scrubbed.left:
            self.left[kind] += 1
            self.entries.append({**where, "kind": kind, "action": "left"})


@dataclass(frozen=True)
class Scrubbed:
    text: str
    kinds: tuple[str, ...] = ()    # what was replaced, in order
    left: tuple[str, ...] = ()     # high-risk patterns still in ``text``


class Scrubber:
    """Replaces e-mail addresses, phone numbers, URLs, the listed ``names`` and the study's ``ids`` (with
    Prolific- and MTurk-style ids) in text with ``{{KIND}}`` placeholders: each detector reads the text's
    canonical view (publish/textview.py), and the ORIGINAL span behind each finding is replaced."""

    def __init__(self, names=(), region: str = "US", ids: KnownIds | None = None):
        self.names, self.ids = Names(names), ids or KnownIds({})
        phones = Phones(region)
        self._detectors = (("email", emails), ("url", urls), ("phone", phones), ("name", self.names),
                           ("id", self.ids))
        # In a name (speaker, model, record id, dict key): no URL detector, and a phone number only where it
        # stands alone (a model's date, claude-3-5-sonnet-20241022, is a valid number in some regions)
        self._name_detectors = (("email", emails), ("phone", lambda text: _standalone(text, phones(text))),
                                ("name", self.names), ("id", self.ids))
        self._memo: dict[str, Scrubbed] = {}

    def _findings(self, seen: TextView, detectors=None) -> list[tuple[int, int, str, int, int]]:
        """Original spans and kinds (with the view's span), overlaps merged into the earliest-starting (then
        longest) finding."""
        spans = sorted(((*seen.span(start, end), kind, start, end) for kind, detect in detectors or self._detectors
                        for start, end in detect(seen.text)), key=lambda s: (s[0], -s[1]))
        merged: list[list] = []
        for start, end, kind, view_start, view_end in spans:
            if merged and start < merged[-1][1]:
                merged[-1][1], merged[-1][4] = max(merged[-1][1], end), max(merged[-1][4], view_end)
            else:
                merged.append([start, end, kind, view_start, view_end])
        return [tuple(m) for m in merged]

    def name_findings(self, seen: TextView) -> list[tuple[int, int, str, int, int]]:
        """What the e-mail, phone, name and id detectors find in a name (publish/fields.py pseudonymises it):
        (original start, end, kind, view start, view end)."""
        return self._findings(seen, self._name_detectors)

    def scrub(self, text: str) -> Scrubbed:
        """``text`` with each finding replaced, what was replaced, and what high-risk pattern is left; the
        same text is scrubbed once."""
        known = self._memo.get(text)
        if known is not None:
            return known
        seen = view(text)
        findings = self._findings(seen)
        if not findings:
            result = Scrubbed(text, (), tuple(high_risk(seen.text)))
        else:
            pieces, end = [], 0
            for start, stop, kind, *_ in findings:
                pieces += [text[end:start], "{{" + kind.upper() + "}}"]
                end = stop
            clean = "".join(pieces) + text[end:]
            result = Scrubbed(clean, tuple(kind for _, _, kind, *_ in findings), tuple(high_risk(view(clean).text)))
        self._memo[text] = result
        return result


_GLUE = "-_:./"


def _standalone(text: str, spans):
    """The phone numbers of ``spans`` that begin with + or are not joined to a word by - _ : . / (a model's date
    or a conversation id's time stamp, not a number someone typed)."""
    for start, end in spans:
        before = text[start - 2:start] if start >= 2 else ""
        after = text[end:end + 2]
        joined = (len(before) == 2 and before[1] in _GLUE and before[0].isalnum()) or before[-1:].isalnum() or \
            (len(after) == 2 and after[0] in _GLUE and after[1].isalnum()) or after[:1].isalnum()
        if text[start] == "+" or not joined:
            yield start, end
