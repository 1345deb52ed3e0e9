"""Command-line glue shared by the commands: --data/--from/--out, loading, atomic CSV/JSON writers, and
options derived from a config dataclass's fields (declared with parlai_dialeval.options.option)."""
from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from pathlib import Path

from parlai_dialeval.atomic import atomic_open
from parlai_dialeval.csv_safe import write_csv  # noqa: F401  (the commands' CSV writer, safe in spreadsheets)
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.options import checked, names


def add_mephisto_data_arg(parser) -> None:
    """--mephisto-data, the one option every crowdsourcing command shares."""
    parser.add_argument("--mephisto-data", default=None, metavar="DIR",
                        help="Mephisto data directory (database, agent data); default $DIALEVAL_MEPHISTO_DATA, "
                             "else mephisto/ in $DIALEVAL_HOME")


def add_task_type_arg(parser) -> None:
    """--task-type, for the commands that read a Mephisto task (export, qc_workers, dashboard)."""
    parser.add_argument("--task-type", default=None, metavar="TASK",
                        help="override: the crowdsourcing task that produced TASK_NAME (default: the one "
                             "recorded in the run at launch)")


def add_data_args(parser, out: str | None = "DIR", formats_help: bool = False, data_required: bool = True) -> None:
    """--data PATH... (any supported format, detected), --from FORMAT to force one, --out."""
    group = parser.add_argument_group("Input and output")
    group.add_argument("--data", nargs="+", required=data_required, metavar="PATH",
                       help="canonical JSON Lines files or any importable source (format detected)")
    group.add_argument("--from", dest="data_format", default=None, metavar="FORMAT",
                       help="force the input format; detected when omitted. "
                       + (_formats_help() if formats_help else "See `dialeval convert --help` for the list."))
    add_unverified_arg(group)
    if out is not None:
        group.add_argument("--out", required=True, metavar=out, type=output_folder if out == "DIR" else output_file,
                           help="output folder (created when missing; an existing file is refused)" if out == "DIR"
                           else "output " + out.lower())


def add_unverified_arg(group) -> None:
    """--include-unverified, read by ``load_data``."""
    group.add_argument("--include-unverified", action="store_true",
                       help="keep records marked unverified (work of identities the crowd platform never confirmed, "
                            "docs/data_model.md); left out by default")


def _formats_help() -> str:
    from parlai_dialeval.importers.registry import IMPORTERS, load_importer_modules

    load_importer_modules()
    return "Formats: " + "; ".join(f"{name}: {imp.help}" for name, imp in sorted(IMPORTERS.items()))


def load_data(opt, log=print, key: str = "data", set_aside_checks: bool = True):
    """The data of ``--data`` (or the option ``key``), without records marked unverified unless
    ``--include-unverified`` (said so), and without answers to check items (attention and gold: they judge no
    model), which stay readable as ``data.checks`` for the evidence about participants (analysis/evidence.py).
    ``set_aside_checks=False`` keeps them in (convert, validate)."""
    from parlai_dialeval.importers import load

    data = load(opt[key], fmt=opt.get("data_format"), log=log)
    if not opt.get("include_unverified"):
        data, left_out = data.without_unverified()
        if left_out and log is not None:
            log("left out the work of unverified identities: " + ", ".join(f"{n} {t}(s)" for t, n in left_out.items())
                + " (--include-unverified keeps it)")
    if set_aside_checks:
        data, checks, counts = data.without_checks()
        data.checks = checks
        if counts and log is not None:
            log("set aside the answers to attention and gold items: " + ", ".join(
                f"{n} {t}(s)" for t, n in counts.items()) + " (they judge no model; the evidence table reads them)")
    return data


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


def _folders_above_can_be_made(text: str) -> None:
    """The missing folders above --out can be made only under a folder: refused now, not after the analysis."""
    above = next(p for p in Path(text).parents if p.exists())  # the last, '.' or '/', always does
    if not above.is_dir():
        raise DialevalError(f"--out {text}: {above} is an existing file (expected a folder above the outputs)")


def output_folder(text: str) -> str:
    """--out DIR: a folder (created when missing); an existing file there or above it is refused."""
    if Path(text).exists() and not Path(text).is_dir():
        raise DialevalError(f"--out {text}: is an existing file (expected a folder for the outputs)")
    _folders_above_can_be_made(text)
    return text


def output_file(text: str) -> str:
    """--out FILE: an existing folder there, or a file where a folder above it must be, is refused."""
    if Path(text).is_dir():
        raise DialevalError(f"--out {text}: is a folder (expected a file name)")
    _folders_above_can_be_made(text)
    return text


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
            if meta.get("shown") is not None:  # argparse parses a text default with the option's type
                kwargs["default"] = meta["shown"]
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
