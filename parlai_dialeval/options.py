"""Values of options, checked once, and config dataclass fields that are also command-line options.

Ground level (imports only errors): analyses declare their settings with ``option`` and the commands
derive their command-line options from those fields (scripts/command_line.py). Parsers raise
DialevalError (not ValueError) on purpose: argparse would turn a ValueError from a ``type=`` hook into a
usage dump, while the ``dialeval`` command prints a DialevalError as one line and exits 2.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import re

from parlai_dialeval.errors import DialevalError


def _number(flag: str, text, kind, what: str):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise DialevalError(f"{flag} {text!r}: expected {what}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise DialevalError(f"{flag} {text!r}: expected {what}")
    return value


def checked(flag: str, kind: str):
    """An argparse ``type=`` for FLAG: kind is probability (0 < x < 1), fraction (0 < x <= 1), share (0 <= x <= 1),
    positive_int (>= 1), non_negative_int (>= 0), positive (> 0), non_negative (>= 0), int or float."""
    def parse(text):
        if kind in ("probability", "fraction", "share"):
            what = {"probability": "a number strictly between 0 and 1", "fraction": "a number > 0 and <= 1",
                    "share": "a number between 0 and 1"}[kind]
            value = _number(flag, text, float, what)
            if not (0 < value < 1 or (kind != "probability" and value == 1) or (kind == "share" and value == 0)):
                raise DialevalError(f"{flag} {text}: expected {what}")
        elif kind in ("positive_int", "non_negative_int", "int"):
            low = {"positive_int": 1, "non_negative_int": 0}.get(kind)
            what = "an integer" + (f" >= {low}" if low is not None else "")
            value = _number(flag, text, int, what)
            if low is not None and value < low:
                raise DialevalError(f"{flag} {text}: expected {what}")
        else:
            what = {"positive": "a number > 0", "non_negative": "a number >= 0"}.get(kind, "a number")
            value = _number(flag, text, float, what)
            if (kind == "positive" and value <= 0) or (kind == "non_negative" and value < 0):
                raise DialevalError(f"{flag} {text}: expected {what}")
        return value

    parse.__name__ = kind  # argparse names the type in its own messages
    return parse


def check_opt(opt, limits: dict, who: str) -> None:
    """Each option of ``limits`` (opt key: ``checked``'s kind) that ``opt`` sets, from a command line or a task's
    YAML (which reaches an agent without argparse's types): out of range, one line naming ``who`` and the option."""
    for key, kind in limits.items():
        if opt.get(key) is not None:
            checked(f"{who}: --{key.replace('_', '-')}", kind)(opt[key])


def turn_range(text, flag: str = "--turns") -> tuple[int, int] | None:
    """Bot Speaker turns: 'FIRST-LAST' (1-based, inclusive), 'N' (= N-N); 'all' or empty: every turn. A library
    call's (FIRST, LAST) (a tuple or list of two integers) is checked as its text is: (5, 2) as '5-2'."""
    if text is None:
        return None
    if isinstance(text, (tuple, list)):
        if len(text) != 2 or any(isinstance(t, bool) or not isinstance(t, numbers.Integral) for t in text):
            raise DialevalError(f"{flag} {text!r}: expected (FIRST, LAST), two integers (or the text FIRST-LAST, "
                                "e.g. 2-6)")
        turns = (int(text[0]), int(text[1]))
    else:
        text = str(text).strip()
        if not text or text == "all":
            return None
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", text)
        if match is None:
            raise DialevalError(f"{flag} {text!r}: expected FIRST-LAST (e.g. 2-6), N or 'all'")
        turns = (int(match[1]), int(match[2] or match[1]))
    if turns[0] < 1 or turns[1] < turns[0]:
        raise DialevalError(f"{flag} {text!r}: expected 1 <= FIRST <= LAST")
    return turns


def turns_text(turns: tuple[int, int] | None) -> str:
    return "all" if turns is None else f"{turns[0]}-{turns[1]}"


def weightings(text, flag: str = "--weights") -> list[tuple[float, float]]:
    """'1:0,1:5' -> [(1, 0), (1, 5)] (SM-Turn : SM-Dialog); a library call's list of (TURN, DIALOG) pairs is
    checked as the text is (two real numbers each, not text, non-negative, not both 0)."""
    if isinstance(text, str):
        try:
            weights = [tuple(float(x) for x in part.split(":")) for part in text.split(",")]
        except ValueError:
            raise DialevalError(f"{flag} {text!r}: expected TURN:DIALOG pairs separated by commas") from None
    else:
        pairs = list(text) if isinstance(text, (list, tuple)) else None
        if not pairs or not all(isinstance(w, (list, tuple)) and all(
                isinstance(x, numbers.Real) and not isinstance(x, bool) for x in w) for w in pairs):
            raise DialevalError(f"{flag} {text!r}: expected TURN:DIALOG pairs separated by commas, or a list of "
                                "(TURN, DIALOG) number pairs")
        weights = [tuple(float(x) for x in w) for w in pairs]
    if any(len(w) != 2 or not all(map(math.isfinite, w)) or min(w) < 0 or sum(w) == 0 for w in weights):
        raise DialevalError(f"{flag} {text!r}: each pair needs two non-negative numbers, not both 0")
    return weights


def weightings_text(weights) -> str:
    return ",".join(f"{a:g}:{b:g}" for a, b in weights)


def names(text) -> list[str] | None:
    """Comma-separated names; None when not given; an empty list for ``""``. A list or tuple of names keeps each
    name whole, as given (a model may be called "a,b"), leaving out only blank ones."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)):
        return [name for name in text if str(name).strip()]
    return [part.strip() for part in str(text).split(",") if part.strip()]


def option(default, help: str, kind: str | None = None, choices=None, parse=None, metavar: str | None = None,
           cli: bool = True, shown: str | None = None):
    """A config dataclass field that is also a command-line option ``--field-name``.

    kind: a checked() kind for numbers; parse: text -> value for structured options (turn ranges,
    comma-separated names); shown: the default as one would type it (a parsed option's help then says
    "default: 2-6", not "(2, 6)"); choices: allowed values; cli=False keeps a field off the command line."""
    meta = {"help": help, "kind": kind, "choices": choices, "parse": parse, "metavar": metavar, "cli": cli,
            "shown": shown}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)
