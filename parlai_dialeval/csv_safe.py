"""CSV files that are safe to open in a spreadsheet: the one writer of every CSV this project writes.

A spreadsheet runs a cell as a formula when its text starts with ``= + - @``, a tab or a carriage return
(OWASP's CSV-injection rule), and worker ids, model names and texts come from strangers
(``=HYPERLINK("http://example.invalid","x")`` as a Prolific id). Such a text cell is written with a single
quote before it, which spreadsheets show as text and never run. Numbers stay numbers: numeric columns are
written as they are, and a text cell that is a plain number (``-0.5``, ``+3``, ``1e-05``) is a number to
every spreadsheet, never a formula, so it is kept too. A text that already starts with quotes before such a
character gets one more, so ``restore`` gives back exactly the text that was written (our own readers of
our CSVs use it).
"""
from __future__ import annotations

import re
from pathlib import Path

from parlai_dialeval.atomic import atomic_open

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _runs_as_formula(text: str) -> bool:
    """True when ``text`` must be quoted: it starts (after any quotes) with a formula character, and it is
    not a plain number."""
    bare = text.lstrip("'")
    return bare.startswith(FORMULA_START) and not (bare == text and _NUMBER.fullmatch(text))


def neutralise(value):
    """``value`` as a cell no spreadsheet runs; anything but text is returned as it is."""
    return "'" + value if isinstance(value, str) and _runs_as_formula(value) else value


def unneutralise(value):
    """The text ``neutralise`` was given, from the cell it made."""
    if isinstance(value, str) and value.startswith("'") and _runs_as_formula(value[1:]):
        return value[1:]
    return value


def _map_text(frame: pd.DataFrame, function) -> pd.DataFrame:
    import pandas as pd  # every command imports this module (command_line); pandas (0.4 s) when one writes a CSV

    frame = frame.copy()
    if not isinstance(frame.columns, pd.MultiIndex):
        frame.columns = [function(c) for c in frame.columns]
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        if not pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            frame.isetitem(position, column.map(function, na_action="ignore").astype(object))
    return frame


def write_csv(frame: pd.DataFrame, path: str | Path, **kwargs) -> Path:
    """``frame`` as CSV at ``path``, atomically, every text cell and header neutralised."""
    with atomic_open(path, newline="") as handle:
        _map_text(frame, neutralise).to_csv(handle, index=False, **kwargs)
    return Path(path)


def restore(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame read from a CSV written by ``write_csv``, with its texts as they were before."""
    return _map_text(frame, unneutralise)
