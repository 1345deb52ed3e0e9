"""CSV files that are safe to open in a spreadsheet: the one writer of every CSV this project writes.

A spreadsheet runs a cell as a formula when its text starts with ``= + - @``, a tab or a carriage return
(OWASP's CSV-injection rule), and worker ids, model names and texts come from strangers
(``=HYPERLINK("http://example.invalid","x")`` as a Prolific id). Some spreadsheets also trim leading white
space, and a lookalike (fullwidth ``＝``, small ``﹦``) is read as the character it looks like; so the rule
looks past leading white space (a space, a tab, a CR, a non-breaking or ideographic space) and format
characters (U+200B zero-width space, U+FEFF, ...) at the first visible character, compatibility-folded
(NFKC: ``＝`` is ``=``). Such a text cell is written with a single quote before it, which spreadsheets show
as text and never run. Numbers stay numbers: numeric columns are written as they are, and a text cell that
is a plain number (``-0.5``, ``+3``, ``1e-05``) is a number to every spreadsheet, never a formula, so it is
kept too. A text that already starts with quotes before such a character gets one more, so ``restore``
gives back exactly the text that was written (our own readers of our CSVs use it).

Bidirectional controls (U+202E right-to-left override and the others, ``BIDI``) make a cell show other
text than it holds (``gpt\u202e4-lacol`` shows as another model's name): each is written as the visible
escape ``\\u202E``. Backslashes written before such an escape, or before the control itself, are doubled,
so an odd run of them before ``u202E`` is a control and an even one literal text: ``restore`` gives back
exactly what was written.
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from parlai_dialeval.atomic import atomic_open

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CODES = r"061[cC]|200[eEfF]|202[a-eA-E]|206[6-9]"
_ESCAPE = re.compile(rf"(\\+)(u(?:{_CODES}))|(\\*)([{BIDI}])")
_UNESCAPE = re.compile(rf"(\\+)u({_CODES})")
_PLAIN = re.compile(rf"[A-Za-z0-9][^\\{BIDI}]*", re.DOTALL)  # neither neutralise nor unneutralise changes it


def _first_visible(text: str) -> str:
    """The first character that is neither white space nor a format character, compatibility-folded."""
    for char in text:
        if not char.isspace() and unicodedata.category(char) != "Cf":
            return unicodedata.normalize("NFKC", char)[:1]
    return ""


def _runs_as_formula(text: str) -> bool:
    """True when ``text`` must be quoted: it starts (after any quotes) with a tab or a CR, or its first
    visible character is a formula character, and it is not a plain number."""
    bare = text.lstrip("'")
    if bare == text and _NUMBER.fullmatch(text):
        return False
    return bare.startswith(FORMULA_START) or _first_visible(bare) in ("=", "+", "-", "@")


def _escape(match) -> str:
    """k backslashes and a literal escape: 2k and the escape; k backslashes and a control: 2k, then the
    control's escape (2k + 1 backslashes before its ``u``)."""
    if match.group(2):
        return match.group(1) * 2 + match.group(2)
    return match.group(3) * 2 + f"\\u{ord(match.group(4)):04X}"


def _unescape(match) -> str:
    backslashes = len(match.group(1))
    text = chr(int(match.group(2), 16)) if backslashes % 2 else "u" + match.group(2)
    return "\\" * (backslashes // 2) + text


def neutralise(value):
    """``value`` as a cell no spreadsheet runs and whose text shows as it is; anything but text is returned
    as it is."""
    if not isinstance(value, str):
        return value
    value = _ESCAPE.sub(_escape, value)
    return "'" + value if _runs_as_formula(value) else value


def unneutralise(value):
    """The text ``neutralise`` was given, from the cell it made."""
    if not isinstance(value, str):
        return value
    if value.startswith("'") and _runs_as_formula(value[1:]):
        value = value[1:]
    return _UNESCAPE.sub(_unescape, value)


def _map_text(frame: pd.DataFrame, function) -> pd.DataFrame:
    import pandas as pd  # every command imports this module (command_line); pandas (0.4 s) when one writes a CSV

    frame = frame.copy()
    if not isinstance(frame.columns, pd.MultiIndex):
        frame.columns = [function(c) for c in frame.columns]
    texts = [position for position, dtype in enumerate(frame.dtypes)
             if not pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)]
    if texts:  # all text columns in one pass: a report's many small tables spent 3 ms a table column by column
        block = frame.iloc[:, texts].to_numpy(dtype=object)
        mapped = _map_distinct_texts(block.ravel(order="F"), function).reshape(block.shape, order="F")
        for column, position in enumerate(texts):
            frame.isetitem(position, pd.Series(mapped[:, column], index=frame.index, dtype=object))
    return frame


def _map_distinct_texts(values, function):
    """``function`` of each text of ``values`` (an object array), called once per distinct text (a million votes
    name a hundred models); anything but text is left as it is."""
    import numpy as np
    import pandas as pd

    codes, distinct = pd.factorize(values)
    text = np.array([isinstance(v, str) for v in distinct] + [False])  # code -1 (missing): the last
    # a text that starts with a letter or digit and holds no backslash or bidi control is its own cell: only the
    # others are passed to ``function`` (a million distinct item ids are one regex pass, not a million calls)
    plain = np.zeros(len(text), dtype=bool)
    plain[:-1][text[:-1]] = pd.Series(distinct[text[:-1]], dtype=object).str.fullmatch(_PLAIN).to_numpy(dtype=bool)
    mapped = np.array([function(v) if is_text and not is_plain else v for v, is_text, is_plain
                       in zip(distinct, text, plain)] + [None], dtype=object)
    changed = text[codes] & ~plain[codes]
    out = values.copy()
    out[changed] = mapped[codes[changed]]
    return out


def write_csv(frame: pd.DataFrame, path: str | Path, **kwargs) -> Path:
    """``frame`` as CSV at ``path``, atomically, every text cell and header neutralised."""
    with atomic_open(path, newline="") as handle:
        _map_text(frame, neutralise).to_csv(handle, index=False, **kwargs)
    return Path(path)


def restore(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame read from a CSV written by ``write_csv``, with its texts as they were before."""
    return _map_text(frame, unneutralise)
