"""Errors a user can act on: each names the file, the line or row, the field and what was expected."""
from __future__ import annotations


class DialevalError(Exception):
    """Base class; the command line prints these as one line and exits non-zero."""


class DataError(DialevalError):
    def __init__(self, path, what: str, line: int | None = None, field: str | None = None,
                 expected: str | None = None, got=None):
        self.path, self.line, self.field, self.expected, self.got = path, line, field, expected, got
        where = f"{path}" + (f":{line}" if line is not None else "")
        parts = [where + ":"]
        if field is not None:
            parts.append(f"field '{field}':")
        parts.append(what)
        if expected is not None:
            parts.append(f"(expected {expected}" + (f", got {_short(got)})" if got is not None else ")"))
        super().__init__(" ".join(parts))


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
