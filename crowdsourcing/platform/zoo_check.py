"""ParlAI ``zoo:`` / ``models:`` paths that resolve locally, or a refusal that says how to build them.

ParlAI resolves such a path by calling the zoo module's ``download(datapath)``, which downloads from
parl.ai whenever the model is not built yet. ``resolve_zoo_paths`` runs that resolution with
ParlAI's download entry points replaced by a refusal (``downloads_refused`` in compat/parlai.py), so
a model already built under the datapath resolves as ParlAI would, and one that is not stops the
launch naming where it goes and the command that builds it. Every string option is checked
(``model_file``, ``init_model``, ``dict_file``, BPE files and any other), and so are the options saved
in a local model's ``.opt`` file.
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

from parlai_dialeval.compat.parlai import WouldDownload, downloads_refused
from parlai_dialeval.errors import DialevalError

ZOO_PREFIXES = ("zoo:", "models:", "izoo:")


class ZooDownloadRefused(DialevalError):
    pass


def default_datapath() -> str:
    from parlai.core.params import ParlaiParser

    return ParlaiParser(False, False).parse_args([])["datapath"]


def resolve_zoo_path(datapath: str, path: str, option: str, bot: str) -> str:
    """The local path ParlAI would use for ``path``; ZooDownloadRefused when it would download."""
    from parlai.core.build_data import modelzoo_path

    try:
        with downloads_refused():
            return modelzoo_path(datapath, path)
    except WouldDownload as would:
        command = ("python -c \"from parlai.core.build_data import modelzoo_path; "
                   f"modelzoo_path('{datapath}', '{path}')\"")
        raise ZooDownloadRefused(
            f"bot {bot!r}: {option} {path!r} is not built under ParlAI's datapath and would download from "
            f"parl.ai into {would.where}; build it there first with: {command} (or set datapath to where it "
            "is built)") from None
    except ImportError as error:
        raise DialevalError(f"bot {bot!r}: {option} {path!r}: {error}") from None


def resolve_zoo_paths(opt: Mapping[str, Any], bot: str) -> dict:
    """``opt`` with every zoo path replaced by its local path; the model's own ``.opt`` file is checked too."""
    opt = dict(opt)
    zoo = {key: value for key, value in opt.items() if isinstance(value, str) and value.startswith(ZOO_PREFIXES)}
    datapath = opt.get("datapath") or (default_datapath() if zoo else "")
    for key, value in zoo.items():
        opt[key] = resolve_zoo_path(datapath, value, key, bot)
    model_file = opt.get("model_file")
    if isinstance(model_file, str) and os.path.isfile(model_file + ".opt"):
        with open(model_file + ".opt", encoding="utf-8") as handle:
            try:
                saved = json.load(handle)
            except ValueError:
                saved = {}
        for key, value in (saved.items() if isinstance(saved, dict) else ()):
            if isinstance(value, str) and value.startswith(ZOO_PREFIXES):
                resolve_zoo_path(datapath or default_datapath(), value, f"{key} (in {model_file}.opt)", bot)
    return opt
