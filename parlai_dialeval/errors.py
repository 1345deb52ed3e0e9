"""Errors a user can act on: each names the file, the line or row, the field and what was expected."""
from __future__ import annotations


class DialevalError(Exception):
    """Base class; the command line prints these as one line and exits non-zero."""


def location(path, line: int | str | None = None) -> str:
    """``file:12`` for a line number; ``file, row 5`` / ``file, item 3`` for other positions."""
    if line is None:
        return f"{path}"
    return f"{path}:{line}" if isinstance(line, int) else f"{path}, {line}"


def record_line(value) -> int | str | None:
    """A record's ``_line`` as ``location`` takes it: a line number as an int (a frame holds it as a float
    beside missing ones), an importer's position ('row 5') as given, None when unknown."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value if isinstance(value, str) else int(value)


class DataError(DialevalError):
    def __init__(self, path, what: str, line: int | str | None = None, field: str | None = None,
                 expected: str | None = None, got=None):
        self.path, self.line, self.field, self.expected, self.got = path, line, field, expected, got
        parts = [location(path, line) + ":"]
        if field is not None:
            parts.append(f"field '{field}':")
        parts.append(what)
        if expected is not None:
            parts.append(f"(expected {expected}" + (f", got {_short(got)})" if got is not None else ")"))
        # One line on the terminal, whatever the data held.
        super().__init__(" ".join(parts).replace("\r", " ").replace("\n", " "))


def _short(value, limit: int = 60) -> str:
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()  # 5, not np.int64(5)
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
