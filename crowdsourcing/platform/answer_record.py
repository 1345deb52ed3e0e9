"""What a worker's page reports about how an answer was made, checked before it is stored.

Every page records, per free text (a chat message, a justification, the feedback) and per judgment screen (a
rating, a choice), counts and times only (frontend/src/components/answerRecord.js: characters typed, pasted and
dropped, pauses, time to send, time on the screen, rereading, leaving the page); the canonical shape is
``parlai_dialeval.data.schema.PROVENANCE_FIELDS`` (docs/data_model.md, "How an answer was made").

The page is ours, but anyone with the task's URL can send anything: ``clean_record`` keeps only known keys of
the right types within plausible ranges, and writes what it could not believe into ``doubts`` (the server's own
clock against the times the page claims; the text's length against the characters the page saw arrive), which
the evidence table reads (analysis/answer_signals.py). A missing record stays missing (None): an honest page
always sends one, so its absence is itself evidence.
"""
from __future__ import annotations

import math

from parlai_dialeval.data.schema import BOOL, INT, LIST, PROVENANCE_FIELDS, PROVENANCE_TEXTS

MAX_KEYS = 40  # a record with more keys than this is not from our page (it sends about twenty)
MAX_LIST = 20  # paste and drop sizes kept per text
MAX_COUNT = 1_000_000  # characters or events in one answer: more is not a person's
MAX_SECONDS = 7 * 24 * 3600.0
CLOCK_SLACK = 5.0  # seconds a page's clock and the network may add to what the server saw pass
UNACCOUNTED_SLACK = 10  # characters a text may hold beyond those seen typed, pasted or dropped (an IME, a fill-in)
UNREADABLE = "the page's record was unreadable"
KINDS = {f.name: f.kind for f in PROVENANCE_FIELDS if f.name not in ("doubts", "pasted_share")}  # the server writes these


def _number(value, kind: str):
    """``value`` as a non-negative int / float within bounds, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    if kind == INT:
        return int(value) if float(value).is_integer() and value <= MAX_COUNT else None
    return float(value) if value <= MAX_SECONDS * 1000 else None


def _value(key: str, value):
    kind = KINDS[key]
    if kind == BOOL:
        return value if isinstance(value, bool) else None
    if kind == LIST:
        if not isinstance(value, list):
            return None
        sizes = [_number(v, INT) for v in value[:MAX_LIST]]
        return None if any(v is None for v in sizes) else sizes
    return _number(value, kind)


def clean_record(raw, *, text: str | None = None, elapsed: float | None = None, nested: bool = True) -> dict | None:
    """The page's record ``raw`` in canonical form (None when the page sent none). ``text``: the answer's text,
    whose length the characters typed, pasted and dropped must account for; ``elapsed``: seconds the server saw
    pass while the page could have been working on it (since its previous act), which no claimed time may
    exceed by more than ``CLOCK_SLACK``."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or len(raw) > MAX_KEYS:
        return {"doubts": [UNREADABLE]}
    out, doubts = {}, []
    for key, value in raw.items():
        if nested and key in PROVENANCE_TEXTS:
            continue
        if key not in KINDS or value is None:
            continue  # an unknown key is dropped: a newer page's, or noise
        checked = _value(key, value)
        if checked is None:
            doubts.append(f"{key} was unreadable")
        else:
            out[key] = checked
    if text is not None and "typed" in out:
        seen = out["typed"] + out.get("pasted", 0) + out.get("dropped", 0)
        if len(text) > seen + max(UNACCOUNTED_SLACK, 0.2 * len(text)):
            doubts.append(f"the text holds {len(text)} characters but the page saw {seen} typed, pasted or dropped")
    if elapsed is not None:
        for key in ("compose_seconds", "seconds"):
            if out.get(key, 0) > elapsed + CLOCK_SLACK:
                doubts.append(f"{key} claims {out[key]:.0f} s but {elapsed:.0f} s passed on the server")
    if doubts:
        out["doubts"] = doubts
    return out


def clean_judgment(raw, *, justification: str | None = None, elapsed: float | None = None,
                   feedback: str | None = None) -> dict | None:
    """A judgment's record (a rating screen, a choice) with the record of its free text nested under
    ``justification`` (or a conversation's under ``feedback``), each checked by ``clean_record``."""
    if raw is None:
        return None
    out = clean_record(raw, elapsed=elapsed)
    if isinstance(raw, dict) and len(raw) <= MAX_KEYS:
        for name, text in (("justification", justification), ("feedback", feedback)):
            if name in raw:
                inner = clean_record(raw[name], text=text, elapsed=elapsed, nested=False)
                if inner is not None:
                    out[name] = inner
    return out


def doubt_totals(records: list[dict | None], elapsed: float | None) -> None:
    """A static task's records arrive at once: their screen times together cannot exceed what passed between
    the page's start and its submission (``elapsed``, the server's clock); each gets the doubt if they do."""
    if elapsed is None:
        return
    total = sum(r.get("seconds", 0) for r in records if r)
    if total > elapsed + CLOCK_SLACK:
        for record in records:
            if record:
                record.setdefault("doubts", []).append(
                    f"the screens claim {total:.0f} s together but {elapsed:.0f} s passed on the server")
