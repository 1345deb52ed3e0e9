"""The ``dialeval`` command: ParlAI's command line with this plugin's scripts added.

A plugin command is dispatched straight to its own module: ParlAI's superscript would first import
every ParlAI script and torch (5-6 s) only to build a parser for one command. ParlAI's own commands
still go through ParlAI's superscript, unchanged, and so does the command list (cached, see
``cached_command_list``). What this changes in ParlAI itself (torch hidden during one import, ``--help``
with required options) is in ``compat/parlai.py``.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import os
import pkgutil
import re
import sys
import warnings
from pathlib import Path

# ParlAI imports the deprecated pkg_resources; the warning means nothing to our users.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)

import parlai_dialeval  # noqa: E402  (applies compat fixes and registers the dialeval: prefix)
from parlai_dialeval.compat.parlai import import_core_without_torch, let_help_skip_required_options  # noqa: E402
from parlai_dialeval.errors import DialevalError  # noqa: E402

SCRIPTS_DIR = Path(__file__).with_name("scripts")
LIST_COMMANDS = {None, "help", "h", "helpall", "--help", "-h", "--helpall"}
_REGISTRATION = re.compile(r"""@register_script\(\s*["']([^"']+)["'](?:[^)]*?aliases\s*=\s*[\[(]([^\])]*)[\])])?""")


def plugin_script_modules() -> dict[str, str]:
    """Command name or alias -> module of ``parlai_dialeval.scripts``, read from the decorators' text
    so that finding a command imports nothing but its own module."""
    commands = {}
    for path in sorted(SCRIPTS_DIR.glob("*.py")):
        for name, aliases in _REGISTRATION.findall(path.read_text(encoding="utf-8")):
            for command in [name, *re.findall(r"""["']([^"']+)["']""", aliases)]:
                commands[command] = f"parlai_dialeval.scripts.{path.stem}"
    return commands


def register_plugin_scripts() -> None:
    """Import every module in ``parlai_dialeval.scripts`` so their @register_script runs."""
    import parlai_dialeval.scripts as scripts

    for module in pkgutil.iter_modules(scripts.__path__, "parlai_dialeval.scripts."):
        importlib.import_module(module.name)


def run_plugin_command(command: str, module: str, args: list[str]):
    """What ParlAI's superscript does for one command, without building every other command first. Every
    file and folder the command makes is its owner's alone (outputs, caches, what libraries write):
    workers.csv, report.html and an answer cache hold worker ids and participants' words."""
    from parlai.core.loader import SCRIPT_REGISTRY

    from parlai_dialeval.atomic import owner_only

    owner_only()
    importlib.import_module(module)
    script = SCRIPT_REGISTRY[command].klass
    parser = script.setup_args()
    parser.prog = f"dialeval {command}"
    opt = parser.parse_args(args)
    return script._run_from_parser_and_opt(opt, parser)


def run_through_parlai(args: list[str]):
    """ParlAI's own superscript, with every plugin command registered (ParlAI's commands, the list)."""
    from parlai.core.script import superscript_main

    register_plugin_scripts()
    let_help_skip_required_options()
    with plugin_commands_summarised():
        return superscript_main(args)


def summary(description: str) -> str:
    """The command list's entry for a description: its first line, up to the end of its first sentence (a full stop
    before a capital: "et al. 2022" goes on), without the full stop or the colon that introduces what follows."""
    first = description.strip().splitlines()[0]
    return re.split(r"(?<=\.)\s+(?=[A-Z`])", first, maxsplit=1)[0].rstrip(".:")


@contextlib.contextmanager
def plugin_commands_summarised():
    """ParlAI lists each command with its whole description, which argparse runs together into one paragraph
    (prolific's table of actions became one block of text); while ParlAI builds its parsers, each plugin command's
    description is its ``summary``. Only the list sees it: a plugin command never runs through the superscript
    (``dispatch``), so ``dialeval COMMAND --help`` keeps the whole description."""
    from parlai.core.script import SCRIPT_REGISTRY

    plugin = set(plugin_script_modules())
    classes = {registration.klass for name, registration in SCRIPT_REGISTRY.items() if name in plugin}
    own = {klass: klass.__dict__.get("setup_args") for klass in classes}

    def summarised(setup):
        def setup_args():
            parser = setup()
            if parser is not None and parser.description:
                parser.description = summary(parser.description)
            return parser
        return setup_args

    for klass in classes:
        klass.setup_args = summarised(klass.setup_args)  # a plain function: ParlAI calls klass.setup_args()
    try:
        yield
    finally:
        for klass, setup in own.items():
            if setup is None:
                del klass.setup_args
            else:
                klass.setup_args = setup


def _command_list_cache(args: list[str]) -> Path:
    import parlai

    stamp = [parlai.__version__, parlai_dialeval.__version__, sys.executable, *args]
    # this module shapes the list too (``summary``)
    stamp += [f"{p.name}:{p.stat().st_mtime_ns}" for p in [Path(__file__), *sorted(SCRIPTS_DIR.glob("*.py"))]]
    key = hashlib.sha256("\n".join(stamp).encode()).hexdigest()[:16]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "parlai_dialeval" / f"commands-{key}.txt"


def cached_command_list(args: list[str]) -> None:
    """``dialeval help``: listing every command means importing all of ParlAI's scripts and torch, so
    the text is kept until ParlAI, this plugin or one of its scripts changes."""
    cache = _command_list_cache(args)
    if cache.exists():
        sys.stdout.write(cache.read_text(encoding="utf-8"))
        return
    text, status = io.StringIO(), 0
    try:
        with contextlib.redirect_stdout(text):
            run_through_parlai(args)
    except SystemExit as exited:  # argparse's --help and --version exit
        status = exited.code
    sys.stdout.write(text.getvalue())
    if status:
        raise SystemExit(status)
    with contextlib.suppress(OSError):  # a read-only home only costs the next call its speed
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text.getvalue(), encoding="utf-8")
        partial.replace(cache)


def version() -> str:
    """This plugin's version and those of the two frameworks it runs on (ParlAI's superscript printed only its own)."""
    from importlib.metadata import version as installed

    return f"dialeval {parlai_dialeval.__version__} (ParlAI {installed('parlai')}, Mephisto {installed('mephisto')})"


def dispatch(args: list[str]):
    command = args[0] if args else None
    if args == ["--version"]:
        print(version())
        return None
    module = plugin_script_modules().get(command)
    if module is not None:
        import_core_without_torch()
        let_help_skip_required_options()
        return run_plugin_command(command, module, args[1:])
    if command in LIST_COMMANDS and len(args) <= 1:
        return cached_command_list(args)
    return run_through_parlai(args)


@contextlib.contextmanager
def own_warnings_in_one_line():
    """Warnings of this plugin's own categories (such as data/repeats.py's DataWarning) are about the user's data,
    so they read as one line, like the errors, not as Python's file, line and source."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__module__.startswith("parlai_dialeval."):
            print(f"dialeval: warning: {message}", file=sys.stderr if file is None else file)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def main(args=None) -> int:
    args = sys.argv[1:] if args is None else list(args)
    try:
        with own_warnings_in_one_line():
            dispatch(args)
    except DialevalError as error:
        print(f"dialeval: error: {error}", file=sys.stderr)
        return 2
    except FileNotFoundError as error:
        print(f"dialeval: error: {error.filename}: no such file or folder", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
