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


_discovery_passes = 0


def let_help_skip_required_options() -> None:
    """Make ``dialeval COMMAND --help`` print the help and exit 0 for commands with required options.

    ParlAI parses a command line twice: first with --help removed, only to discover the options a
    model or task adds; argparse then found this plugin's required options (--data, --out ...) missing
    and exited 2 before the second pass could print the help. ParlAI's own scripts have no required
    options, so nothing in ParlAI meets this. Here a missing required option is not an error during the
    discovery pass alone; the second pass, which prints the help or runs the command, still checks."""
    from parlai.core.params import ParlaiParser

    if getattr(ParlaiParser, "_dialeval_help_fix", False):
        return
    parse_known_args, error = ParlaiParser.parse_known_args, ParlaiParser.error

    def discovering_parse_known_args(self, args=None, namespace=None, nohelp=False):
        global _discovery_passes
        _discovery_passes += nohelp
        try:
            return parse_known_args(self, args, namespace, nohelp)
        finally:
            _discovery_passes -= nohelp

    def tolerant_error(self, message):
        if not (_discovery_passes and message.startswith("the following arguments are required")):
            error(self, message)

    ParlaiParser.parse_known_args, ParlaiParser.error = discovering_parse_known_args, tolerant_error
    ParlaiParser._dialeval_help_fix = True


def main(args=None) -> int:
    from parlai.core.script import superscript_main

    register_plugin_scripts()
    let_help_skip_required_options()
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
