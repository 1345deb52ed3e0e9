"""Every change this project makes to ParlAI 1.7.2. Each checks the installed version first and that it
took effect after.

- ``SOURCE_FIX``: a dataclass default Python 3.11 rejects, rewritten at import. Retire when ParlAI's
  ``crowdsourcing/utils/mturk.py`` uses ``field(default_factory=MTurkConfig)``.
- ``import_core_without_torch``: ParlAI's command machinery imported with torch hidden (the fast
  ``dialeval`` start). Retire when ``parlai.core.build_data`` imports torch lazily.
- ``let_help_skip_required_options``: ``ParlaiParser.parse_known_args`` and ``.error`` wrapped so that
  ``dialeval COMMAND --help`` works for commands with required options. Retire when ParlAI's discovery
  pass parses without checking required options.
- ``downloads_refused``: ParlAI's download functions replaced by a refusal, for a ``with`` block only
  (zoo paths resolve locally or say how to build them). Retire when ``modelzoo_path`` takes a
  no-download flag.
- ``acceptability_checker``: ParlAI's ``AcceptabilityChecker`` built without its ``__init__`` (which
  downloads ParlAI's offensive-word list) and given a matcher over our own list; checked: ``__init__``
  still sets exactly those two fields. Retire when the checker takes a word-list path.
- ``register_prefix``: ``dialeval:`` added to the loader's ``REGISTERED_REPOS`` (ParlAI's own table of
  agent/task prefixes, which has no registration function), so ``-m dialeval:NAME`` resolves to
  ``parlai_dialeval.agents.NAME`` and ``-t dialeval:NAME`` to ``parlai_dialeval.tasks.NAME``. Installed by
  ``compat.install()``. Retire when ParlAI registers repositories through entry points.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import inspect
import re
import sys
import threading

from parlai_dialeval.compat.patching import (CompatError, is_ours, ours, require_call, require_ours, require_version,
                                             swapped)
from parlai_dialeval.compat.source_fixes import SourceFix

WRITTEN_FOR = "1.7.2"
_LOCK = threading.Lock()

SOURCE_FIX = SourceFix("parlai.crowdsourcing.utils.mturk", "parlai", WRITTEN_FOR, [
    ("    mturk: MTurkConfig = MTurkConfig()", "    mturk: MTurkConfig = field(default_factory=MTurkConfig)"),
], header="from dataclasses import field")


class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(name)


def import_core_without_torch() -> None:
    """ParlAI's ``build_data`` imports torch (about 1 s) only for the multiprocessing Pool of its
    dataset downloads, and falls back to the standard library's Pool when torch is missing. Hide torch
    during that one import; anything that needs torch later imports it as usual."""
    if "parlai.core.build_data" in sys.modules or "torch" in sys.modules:  # nothing left to save
        importlib.import_module("parlai.core.script")
        return
    require_version("parlai", WRITTEN_FOR, "import_core_without_torch")
    blocker = _NoTorch()
    sys.meta_path.insert(0, blocker)
    try:
        importlib.import_module("parlai.core.script")
    finally:
        sys.meta_path.remove(blocker)
    if "torch" in sys.modules:
        raise ImportError("parlai_dialeval.compat: importing parlai.core.script loaded torch after all: "
                          "ParlAI imports it somewhere else now")


_discovery = threading.local()  # how many discovery passes this thread is inside


def let_help_skip_required_options(parser_class=None) -> None:
    """Make ``dialeval COMMAND --help`` print the help and exit 0 for commands with required options.

    ParlAI parses a command line twice: first with --help removed, only to discover the options a
    model or task adds; argparse then found this plugin's required options (--data, --out ...) missing
    and exited 2 before the second pass could print the help. ParlAI's own scripts have no required
    options, so nothing in ParlAI meets this. Here a missing required option is not an error during the
    discovery pass alone; the second pass, which prints the help or runs the command, still checks.
    Installed on the class (ParlAI's superscript builds its parsers itself), once per process;
    ``parser_class``: ParlaiParser (or a copy of it, in tests)."""
    if parser_class is None:
        from parlai.core.params import ParlaiParser as parser_class

    if is_ours(parser_class.error):
        return
    require_version("parlai", WRITTEN_FOR, "let_help_skip_required_options")
    parse_known_args, error = parser_class.parse_known_args, parser_class.error
    if "nohelp" not in inspect.signature(parse_known_args).parameters:
        raise CompatError("parlai_dialeval.compat: let_help_skip_required_options: ParlaiParser.parse_known_args "
                          "has no nohelp parameter any more: the upstream code changed")

    @ours
    def discovering_parse_known_args(self, args=None, namespace=None, nohelp=False):
        _discovery.depth = getattr(_discovery, "depth", 0) + nohelp
        try:
            return parse_known_args(self, args, namespace, nohelp)
        finally:
            _discovery.depth -= nohelp

    @ours
    def tolerant_error(self, message):
        if not (getattr(_discovery, "depth", 0) and message.startswith("the following arguments are required")):
            error(self, message)

    parser_class.parse_known_args, parser_class.error = discovering_parse_known_args, tolerant_error
    for name in ("parse_known_args", "error"):
        require_ours(parser_class, name, "let_help_skip_required_options")


class WouldDownload(Exception):
    """Raised inside ``downloads_refused`` where ParlAI would download; ``where``: into which folder."""

    def __init__(self, where: str):
        super().__init__(where)
        self.where = where


@contextlib.contextmanager
def downloads_refused(build_data=None):
    """ParlAI's download entry points raise ``WouldDownload`` for the ``with`` block: a model already built
    under the datapath resolves as ParlAI would, one that is not stops before anything is downloaded.
    ``build_data``: ``parlai.core.build_data`` (or a copy of it, in tests)."""
    require_version("parlai", WRITTEN_FOR, "downloads_refused")
    if build_data is None:
        from parlai.core import build_data

    def refuse(*args, **kwargs):
        raise WouldDownload(str(args[1] if len(args) > 1 else args[0] if args else "?"))

    with _LOCK:  # held for the whole block: the functions are module globals, seen by every thread
        built = build_data.built

        def built_or_refuse(path, version_string=None):
            if built(path, version_string):
                return True
            raise WouldDownload(str(path))  # before ParlAI removes an outdated copy or downloads

        with swapped(build_data, "downloads_refused", built=built_or_refuse, download=refuse,
                     download_from_google_drive=refuse), \
                swapped(build_data.DownloadableFile, "downloads_refused",
                        download_file=lambda self, dpath: refuse(None, dpath)):
            yield


ACCEPTABILITY_FIELDS = ("self.offensive_lang_detector", "self.min_words_violation_threshold")


def acceptability_checker(word_list: str, min_words: float):
    """An ``AcceptabilityChecker`` whose offensive-language matcher reads ``word_list`` (no download)."""
    require_version("parlai", WRITTEN_FOR, "acceptability_checker")
    from parlai.crowdsourcing.utils.acceptability import AcceptabilityChecker
    from parlai.utils.safety import OffensiveStringMatcher

    init = inspect.getsource(AcceptabilityChecker.__init__)
    if sorted(set(re.findall(r"self\.\w+(?= *=)", init))) != sorted(ACCEPTABILITY_FIELDS):
        raise CompatError("parlai_dialeval.compat: acceptability_checker: AcceptabilityChecker.__init__ sets other "
                          "fields than " + ", ".join(ACCEPTABILITY_FIELDS) + ": the upstream code changed")
    checker = AcceptabilityChecker.__new__(AcceptabilityChecker)
    checker.offensive_lang_detector = OffensiveStringMatcher(word_list)
    checker.min_words_violation_threshold = min_words
    return checker


PREFIX = {"dialeval:": {"repo": "parlai_dialeval", "source": "pip install -e . in the parlai_dialeval checkout"}}


def register_prefix(loader=None) -> None:
    """Add ``dialeval:`` to ParlAI's table of repositories (once), checking the loader still reads it."""
    require_version("parlai", WRITTEN_FOR, "register_prefix")
    if loader is None:
        from parlai.core import loader
    require_call(loader.assert_get_source_repo, "REGISTERED_REPOS.items()", "register_prefix")
    for key, repo in PREFIX.items():
        loader.REGISTERED_REPOS.setdefault(key, repo)


def check() -> list[str]:
    """What install.sh confirms: the fixed config imports, and the runtime patches take effect."""
    from parlai.crowdsourcing.utils.mturk import MTurkConfig, MTurkRunScriptConfig

    if MTurkRunScriptConfig.__dataclass_fields__["mturk"].default_factory is not MTurkConfig:
        raise ImportError("parlai_dialeval.compat: the parlai mturk source fix did not take effect")
    let_help_skip_required_options()
    with downloads_refused():
        pass
    from parlai.core.loader import REGISTERED_REPOS

    if REGISTERED_REPOS.get("dialeval:") != PREFIX["dialeval:"]:
        raise CompatError("parlai_dialeval.compat: register_prefix did not take effect")
    return [f"parlai {WRITTEN_FOR}: mturk config dataclass default, --help with required options, "
            "zoo downloads refused on demand, the dialeval: prefix"]
