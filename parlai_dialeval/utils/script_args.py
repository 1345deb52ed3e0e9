"""Command-line pieces shared by the analysis scripts: --data/--from/--out and loading."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from parlai_dialeval.utils.atomic import atomic_open


def add_data_args(parser, out: str | None = "DIR", formats_help: bool = False) -> None:
    """--data PATH... (any supported format, detected), --from FORMAT to force one, --out."""
    group = parser.add_argument_group("Input and output")
    group.add_argument("--data", nargs="+", required=True, metavar="PATH",
                       help="canonical JSON Lines files or any importable source (format detected)")
    group.add_argument("--from", dest="data_format", default=None, metavar="FORMAT",
                       help="force the input format; detected when omitted. "
                       + (_formats_help() if formats_help else "See `dialeval convert --help` for the list."))
    if out is not None:
        group.add_argument("--out", required=True, metavar=out, help="output " + out.lower())


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
