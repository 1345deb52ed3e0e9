"""What the scrubber's detectors read: a text as one canonical form, with a map back to the original.

Participants hide what they type (``ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ``, ``john&#64;example.com``, ``Al\u200bice``,
``+٤٤ ٧٧٠٠ ٩٠٠١٢٣``, a name with a non-breaking or double space). The detectors see one canonical form
instead: HTML character references decoded, Unicode compatibility forms folded (NFKC's mappings:
fullwidth letters and digits, ligatures, non-breaking spaces), accents and other combining marks removed,
format characters (zero-width spaces and joiners, soft hyphens, bidi controls: category Cf) removed, the
decimal digits of every script written as ASCII digits, and every run of white space one space. Each
character of that view remembers the span of the original it came from, so a finding in the view replaces
the ORIGINAL span, hidden characters and all. Hand-written: no library maps normalised offsets back.
"""
from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_PLAIN = re.compile(r"[\t\n\r\f\v&]")  # what can change an ASCII text, with a double space
_UNCHANGED = re.compile(r"[!-%'-~]+(?: [!-%'-~]+)*")  # printable ASCII words, single spaces, no "&": kept as they are


@dataclass(frozen=True)
class TextView:
    """``text``: the canonical form; ``starts[i]``/``ends[i]``: the original span of its i-th character
    (both None when the view is the original itself)."""

    original: str
    text: str
    starts: tuple[int, ...] | None = None
    ends: tuple[int, ...] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the view's characters ``start:end`` (end > start)."""
        if self.starts is None:
            return start, end
        return self.starts[start], self.ends[end - 1]


def _units(text: str):
    """(start, end, what the unit reads as): a stretch the view keeps as it is, a character reference, or
    a character with its combining marks."""
    position, length = 0, len(text)
    while position < length:
        unchanged = _UNCHANGED.match(text, position)
        if unchanged:
            yield position, unchanged.end(), None
            position = unchanged.end()
            continue
        if text[position] == "&":
            reference = _REFERENCE.match(text, position)
            if reference:
                yield position, reference.end(), html.unescape(reference.group())
                position = reference.end()
                continue
        end = position + 1
        while end < length and unicodedata.combining(text[end]):
            end += 1
        yield position, end, text[position:end]
        position = end


def _canonical(unit: str) -> str:
    out = []
    for char in unicodedata.normalize("NFKD", unit):
        category = unicodedata.category(char)
        if category in ("Mn", "Me", "Cf"):
            continue
        digit = unicodedata.decimal(char, None)
        out.append(str(digit) if digit is not None else " " if char.isspace() else char)
    return "".join(out)


def view(text: str) -> TextView:
    """``text``'s canonical form and its map back (an ASCII text without references, tabs, line breaks
    or double spaces is its own view: most chat turns)."""
    if text.isascii() and "  " not in text and not _PLAIN.search(text):
        return TextView(text, text)
    chars, starts, ends = [], [], []
    for start, end, unit in _units(text):
        if unit is None:
            chars.extend(text[start:end])
            starts.extend(range(start, end))
            ends.extend(range(start + 1, end + 1))
            continue
        for char in _canonical(unit):
            if char == " " and chars and chars[-1] == " ":
                ends[-1] = end  # one space stands for the whole run
                continue
            chars.append(char)
            starts.append(start)
            ends.append(end)
    return TextView(text, "".join(chars), tuple(starts), tuple(ends))


def canonical(text: str) -> str:
    """The view's text alone (for names and ids the researcher lists, compared in the same form)."""
    return view(text).text
