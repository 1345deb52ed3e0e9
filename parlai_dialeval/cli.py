"""The ``dialeval`` command: ParlAI's command line with this plugin's scripts added."""
from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings

# ParlAI imports the deprecated pkg_resources; the warning means nothing to our users.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)

import parlai_dialeval  # noqa: E402,F401  (applies compat fixes and registers the dialeval: prefix)
from parlai_dialeval.errors import DialevalError  # noqa: E402


def register_plugin_scripts() -> None:
    """Import every module in ``parlai_dialeval.scripts`` so their @register_script runs."""
    import parlai_dialeval.scripts as scripts

    for module in pkgutil.iter_modules(scripts.__path__, "parlai_dialeval.scripts."):
        importlib.import_module(module.name)


def main(args=None) -> int:
    from parlai.core.script import superscript_main

    register_plugin_scripts()
    try:
        superscript_main(args)
    except DialevalError as error:
        print(f"dialeval: error: {error}", file=sys.stderr)
        return 2
    except FileNotFoundError as error:
        print(f"dialeval: error: {error.filename}: no such file or folder", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
