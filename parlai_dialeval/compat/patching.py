"""How every patch in this package checks itself: the version it was written for, a text replace that
matched exactly once, a replaced attribute that is now ours. Standard library only (imported before
Mephisto and ParlAI)."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import inspect
import re

OURS = "__dialeval_patch__"  # set on every function this package puts into someone else's code


class CompatError(ImportError):
    """A patch no longer fits the library it patches: upgrade this package or pin the library.
    An ImportError, so that what fails at import says so as an import."""


def require_version(distribution: str, written_for: str, patch: str) -> None:
    """Refuse to patch a version the patch was not written for (its code may have moved or changed)."""
    installed = importlib.metadata.version(distribution)
    if installed != written_for:
        raise CompatError(f"parlai_dialeval.compat: {patch} was written for {distribution} {written_for}, "
                          f"{installed} is installed; install {distribution}=={written_for} "
                          "(requirements/constraints.txt) or update the patch")


def replace_once(source: str, old: str, new: str, where: str) -> str:
    """``source`` with the one occurrence of ``old`` replaced; an error when it occurs 0 or 2+ times."""
    found = source.count(old)
    if found != 1:
        raise CompatError(f"parlai_dialeval.compat: expected exactly one {old!r} in {where}, found {found}: "
                          "the upstream file changed")
    return source.replace(old, new)


def require_source(function, sha256: str, patch: str) -> None:
    """``function``'s source must still hash to ``sha256``: a replacement that copies an upstream body (to
    change one argument) is only right while that body is the one it was copied from."""
    found = hashlib.sha256(inspect.getsource(function).encode()).hexdigest()
    if found != sha256:
        raise CompatError(f"parlai_dialeval.compat: {patch}: {function.__qualname__} is not the code the patch "
                          f"copied (source SHA-256 {found[:12]}, expected {sha256[:12]}): the upstream code changed")


def ours(function):
    """Mark a function as this package's replacement, so ``require_ours`` can tell it took effect."""
    setattr(function, OURS, True)
    return function


def is_ours(value) -> bool:
    return getattr(value, OURS, False) is True


@functools.cache  # read once a process: every export, launch and review checks the same upstream code again
def source_text(code) -> str:
    """The source of a module, class or function, read without ``ast``. Python 3.11's inspect finds a class
    by ``ast.parse`` of its module, and the AST constructor's depth counter is shared by the interpreter's
    threads: a traceback formatted by another thread at the same time (3.11 parses each line for its carets)
    makes it raise "SystemError: AST constructor recursion depth mismatch" (cpython gh-106905; seen here in
    CI while Mephisto's threads ran). A class is found as Python 3.8's inspect found it, by its ``class``
    line in the module's text and the indented block after it (tokens, not a tree)."""
    if not inspect.isclass(code):
        return inspect.getsource(code)
    lines = inspect.getsource(inspect.getmodule(code)).splitlines(keepends=True)
    name = code.__qualname__.rsplit(".", 1)[-1]
    starts = [number for number, line in enumerate(lines) if re.match(rf"\s*class\s+{name}\b", line)]
    if len(starts) != 1:
        raise CompatError(f"parlai_dialeval.compat: {len(starts)} classes named {name} in {code.__module__}")
    return "".join(inspect.getblock(lines[starts[0]:]))


def require_call(code, call: str, patch: str) -> None:
    """``code`` (a module, class or function) must still contain ``call``: a replaced module global
    reaches only the callers that look it up by that name."""
    if call not in source_text(code):
        raise CompatError(f"parlai_dialeval.compat: {patch}: {getattr(code, '__qualname__', code.__name__)} no "
                          f"longer calls {call!r}: the upstream code changed")


def require_ours(owner, name: str, patch: str) -> None:
    """``owner.name`` must be our replacement (someone may have replaced it again, or it moved)."""
    if not is_ours(getattr(owner, name, None)):
        raise CompatError(f"parlai_dialeval.compat: {patch} did not take effect: "
                          f"{getattr(owner, '__name__', owner)}.{name} is not ours")


@contextlib.contextmanager
def swapped(owner, patch: str, **replacements):
    """Replace attributes of ``owner`` (marked ours) for the ``with`` block only and put the originals
    back however the block ends. An attribute is shared by every thread: callers hold a lock."""
    missing = [name for name in replacements if not hasattr(owner, name)]
    if missing:
        raise CompatError(f"parlai_dialeval.compat: {patch}: {getattr(owner, '__name__', owner)} has no "
                          f"{', '.join(missing)}: the upstream code changed")
    originals = {name: getattr(owner, name) for name in replacements}
    try:
        for name, value in replacements.items():
            setattr(owner, name, ours(value))
            require_ours(owner, name, patch)
        yield originals
    finally:
        for name, value in originals.items():
            setattr(owner, name, value)
