"""Command-line pieces shared by the analysis scripts: --data/--from/--out, loading, option values
checked once (numbers, probabilities, turn ranges, weightings) and options derived from a config
dataclass's fields and help text.

Option checks raise DialevalError (not ValueError) from argparse's ``type=`` hook on purpose: argparse
would turn a ValueError into a usage dump, while the ``dialeval`` command prints a DialevalError as one
line and exits 2.
"""
from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from pathlib import Path

import pandas as pd

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.atomic import atomic_open


def add_data_args(parser, out: str | None = "DIR", formats_help: bool = False) -> None:
    """--data PATH... (any supported format, detected), --from FORMAT to force one, --out."""
    group = parser.add_argument_group("Input and output")
    group.add_argument("--data", nargs="+", required=True, metavar="PATH",
                       help="canonical JSON Lines files or any importable source (format detected)")
    group.add_argument("--from", dest="data_format", default=None, metavar="FORMAT",
                       help="force the input format; detected when omitted. "
                       + (_formats_help() if formats_help else "See `dialeval convert --help` for the list."))
    if out is not None:
        group.add_argument("--out", required=True, metavar=out, help="output " + out.lower(),
                           type=output_folder if out == "DIR" else output_file)


def _formats_help() -> str:
    from parlai_dialeval.importers.registry import IMPORTERS, load_importer_modules

    load_importer_modules()
    return "Formats: " + "; ".join(f"{name}: {imp.help}" for name, imp in sorted(IMPORTERS.items()))


def load_data(opt, log=print):
    from parlai_dialeval.importers import load

    return load(opt["data"], fmt=opt.get("data_format"), log=log)


def write_csv(frame: pd.DataFrame, path: str | Path, **kwargs) -> Path:
    with atomic_open(path, newline="") as handle:
        frame.to_csv(handle, index=False, **kwargs)
    return Path(path)


def write_json(obj, path: str | Path) -> Path:
    """Write JSON atomically; NaN and infinities become null so the file stays valid JSON."""
    with atomic_open(path) as handle:
        json.dump(json_safe(obj), handle, indent=2, allow_nan=False)
        handle.write("\n")
    return Path(path)


def json_safe(value):
    """Plain JSON values: numpy scalars and arrays to Python, NaN/inf to None, keys to strings."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ------------------------------------------------------------------------------------------------
# Option values: each parser takes the text of one option and returns its value or raises one line.
# ------------------------------------------------------------------------------------------------

def _number(flag: str, text, kind, what: str):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise DialevalError(f"{flag} {text!r}: expected {what}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise DialevalError(f"{flag} {text!r}: expected {what}")
    return value


def checked(flag: str, kind: str):
    """An argparse ``type=`` for FLAG: kind is probability (0 < x < 1), positive_int (>= 1),
    non_negative_int (>= 0), positive (> 0), non_negative (>= 0), int or float."""
    def parse(text):
        if kind == "probability":
            value = _number(flag, text, float, "a number strictly between 0 and 1")
            if not 0 < value < 1:
                raise DialevalError(f"{flag} {text}: expected a number strictly between 0 and 1")
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


def output_folder(text: str) -> str:
    """--out DIR: a folder (created when missing); an existing file there is refused."""
    if Path(text).exists() and not Path(text).is_dir():
        raise DialevalError(f"--out {text}: is an existing file (expected a folder for the outputs)")
    return text


def output_file(text: str) -> str:
    """--out FILE: an existing folder there is refused."""
    if Path(text).is_dir():
        raise DialevalError(f"--out {text}: is a folder (expected a file name)")
    return text


def turn_range(text: str | None, flag: str = "--turns") -> tuple[int, int] | None:
    """Bot Speaker turns: 'FIRST-LAST' (1-based, inclusive), 'N' (= N-N); 'all' or empty: every turn."""
    if text is None or isinstance(text, tuple):
        return text
    text = str(text).strip()
    if not text or text == "all":
        return None
    low, _, high = text.partition("-")
    try:
        turns = (int(low), int(high or low))
    except ValueError:
        raise DialevalError(f"{flag} {text!r}: expected FIRST-LAST (e.g. 2-6), N or 'all'") from None
    if turns[0] < 1 or turns[1] < turns[0]:
        raise DialevalError(f"{flag} {text!r}: expected 1 <= FIRST <= LAST")
    return turns


def turns_text(turns: tuple[int, int] | None) -> str:
    return "all" if turns is None else f"{turns[0]}-{turns[1]}"


def weightings(text, flag: str = "--weights") -> list[tuple[float, float]]:
    """'1:0,1:5' -> [(1, 0), (1, 5)] (SM-Turn : SM-Dialog)."""
    if not isinstance(text, str):
        return [tuple(map(float, w)) for w in text]
    try:
        weights = [tuple(float(x) for x in part.split(":")) for part in text.split(",")]
    except ValueError:
        raise DialevalError(f"{flag} {text!r}: expected TURN:DIALOG pairs separated by commas") from None
    if any(len(w) != 2 or not all(map(math.isfinite, w)) or min(w) < 0 or sum(w) == 0 for w in weights):
        raise DialevalError(f"{flag} {text!r}: each pair needs two non-negative numbers, not both 0")
    return weights


def weightings_text(weights) -> str:
    return ",".join(f"{a:g}:{b:g}" for a, b in weights)


def names(text) -> list[str] | None:
    """Comma-separated names; None when not given; an empty list for ``""``."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)):
        text = ",".join(text)
    return [part.strip() for part in str(text).split(",") if part.strip()]


# ------------------------------------------------------------------------------------------------
# Options derived from a config dataclass: one spelling of each setting (name, default, help).
# ------------------------------------------------------------------------------------------------

def option(default, help: str, kind: str | None = None, choices=None, parse=None, metavar: str | None = None,
           cli: bool = True):
    """A config dataclass field that is also a command-line option ``--field-name``.

    kind: a checked() kind for numbers; parse: text -> value for structured options (turn ranges,
    comma-separated names); choices: allowed values; cli=False keeps a field off the command line."""
    meta = {"help": help, "kind": kind, "choices": choices, "parse": parse, "metavar": metavar, "cli": cli}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _base_type(annotation):
    """The type a value parses to: int for ``int | None``, list for ``list[str] | None``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return _base_type(args[0])
    return typing.get_origin(annotation) or annotation


def add_config_args(group, config_class, skip: tuple[str, ...] = ()) -> None:
    """One ``--field-name`` option per field of the dataclass, with its default and help text."""
    hints = typing.get_type_hints(config_class)
    for f in dataclasses.fields(config_class):
        meta = f.metadata
        if not meta.get("cli", False) or f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        base = _base_type(hints[f.name])
        kwargs = {"default": default, "help": meta["help"], "dest": f.name}
        if meta.get("parse"):
            kwargs["type"] = _flagged(meta["parse"], flag)
        elif base is bool:
            kwargs["type"] = "bool"
        elif meta.get("kind") or base in (int, float):
            kwargs["type"] = checked(flag, meta.get("kind") or base.__name__)
        elif base in (list, tuple):
            kwargs["type"] = names
        if meta.get("choices"):
            kwargs["choices"] = meta["choices"]
        if meta.get("metavar"):
            kwargs["metavar"] = meta["metavar"]
        if isinstance(default, (list, tuple)) and base in (list, tuple) and not meta.get("parse"):
            kwargs["default"] = ",".join(map(str, default))
        group.add_argument(flag, **kwargs)


def _flagged(parse, flag: str):
    def run(text):
        return parse(text, flag)

    run.__name__ = getattr(parse, "__name__", "value")
    return run


def config_from_opt(opt, config_class, **overrides):
    """The dataclass built from parsed options (values already checked by their ``type=``); options
    not on the command line keep their defaults."""
    values = {}
    for f in dataclasses.fields(config_class):
        if f.name in overrides:
            values[f.name] = overrides[f.name]
        elif f.metadata.get("cli", False) and f.name in opt:
            value = opt[f.name]
            parse = f.metadata.get("parse")
            if parse and isinstance(value, str):
                value = parse(value, "--" + f.name.replace("_", "-"))
            elif isinstance(value, str) and _base_type(typing.get_type_hints(config_class)[f.name]) in (list, tuple):
                value = names(value)
            values[f.name] = value
    return config_class(**values)
