"""Every patch of someone else's code (parlai_dialeval/compat/) fails loudly when it would no longer take
effect: each check is run here on a copy of its real target (the installed upstream file, loaded under
another name) changed the way an upstream release could change it. The patches of Mephisto's running operator,
state files and channels: test_compat_mephisto_runtime.py."""
from __future__ import annotations

import importlib
import sys

import pytest

from parlai_dialeval.compat import mephisto as compat_mephisto
from parlai_dialeval.compat import mephisto_arrivals, mephisto_threads
from parlai_dialeval.compat import parlai as compat_parlai
from parlai_dialeval.compat import patching, source_fixes
from parlai_dialeval.compat.patching import CompatError
from upstream_copies import load_copy, upstream_source


# ------------------------------------------------------------------ text replaced at import
@pytest.mark.parametrize("module", sorted(source_fixes.FIXES))
def test_every_source_fix_matches_its_installed_file_once_and_compiles(module):
    fix = source_fixes.FIXES[module]
    fixed = fix.apply(upstream_source(module), module)
    compile(fixed, module, "exec")
    assert all(new in fixed and old + "\n" not in fixed for old, new in fix.lines)


def _edit_line(text, old):
    return text.replace(old, old.replace(" = ", " =  "))  # e.g. a reformatted upstream line


def _double_line(text, old):
    return text.replace(old + "\n", old + "\n" + old + "\n")


@pytest.mark.parametrize("change", [_edit_line, _double_line], ids=["line changed", "line twice"])
@pytest.mark.parametrize("module", sorted(source_fixes.FIXES))
def test_a_source_fix_refuses_a_changed_copy(module, change):
    fix = source_fixes.FIXES[module]
    changed = change(upstream_source(module), fix.lines[0][0])
    with pytest.raises(CompatError, match="expected exactly one"):
        fix.apply(changed, f"copy of {module}")


def test_the_import_hook_fixes_a_copy_and_refuses_a_changed_one(tmp_path, monkeypatch):
    """The whole path: a module named in the hook's table is rewritten as it loads, or fails to import."""
    fix = compat_mephisto.SOURCE_FIX
    monkeypatch.syspath_prepend(str(tmp_path))
    copies = {"hydra_copy_ok": lambda text: text, "hydra_copy_changed": lambda text: _edit_line(text, fix.lines[0][0])}
    for name, edit in copies.items():
        (tmp_path / f"{name}.py").write_text(edit(upstream_source(fix.module)), encoding="utf-8")
        monkeypatch.setitem(source_fixes.FIXES, name, source_fixes.SourceFix(
            name, fix.distribution, fix.written_for, fix.lines, header=fix.header))
        monkeypatch.delitem(sys.modules, name, raising=False)
    ok = importlib.import_module("hydra_copy_ok")
    assert ok.TaskConfig.__dataclass_fields__["mephisto"].default_factory is ok.MephistoConfig
    with pytest.raises(ImportError, match="expected exactly one"):
        importlib.import_module("hydra_copy_changed")


# ------------------------------------------------------------------ the version each was written for
def test_every_runtime_patch_refuses_another_version(monkeypatch, tmp_path):
    monkeypatch.setattr(patching.importlib.metadata, "version", lambda distribution: "99.0")
    attempts = {
        "use_data_dir": lambda: compat_mephisto.use_data_dir(tmp_path),
        "metrics_server_off": compat_mephisto.metrics_server_off,
        "prompt_run_tracking": compat_mephisto.prompt_run_tracking,
        "prompt_unit_launching": compat_mephisto.prompt_unit_launching,
        "joined_force_shutdown": compat_mephisto.joined_force_shutdown,
        "prompt_onboarding_end": compat_mephisto.require_onboarding_end,
        "arrivals_checked": mephisto_arrivals.arrivals_checked,
        "safe_unit_launching": lambda: mephisto_threads.safe_unit_launching().__enter__(),
        "downloads_refused": lambda: compat_parlai.downloads_refused().__enter__(),
        "let_help_skip_required_options": lambda: compat_parlai.let_help_skip_required_options(
            load_copy("parlai.core.params", tmp_path).ParlaiParser),
    }
    for patch, attempt in attempts.items():
        with pytest.raises(CompatError, match=f"{patch} was written for .* 99.0 is installed"):
            attempt()


def test_arrival_checks_refuse_a_client_io_that_no_longer_asks_the_worker_pool(monkeypatch):
    """arrivals_checked wraps WorkerPool.register_worker and reconnect_agent: useless if Mephisto's client IO
    stopped calling them."""
    from mephisto.operations.client_io_handler import ClientIOHandler

    def _register_agent(self, packet, channel_id):  # an upstream that registers some other way
        return None

    monkeypatch.setattr(ClientIOHandler, "_register_agent", _register_agent)
    with pytest.raises(CompatError, match="arrivals_checked: .*_register_agent no longer calls .worker_pool"):
        mephisto_arrivals.arrivals_checked()


def test_a_class_is_checked_without_parsing_its_module(monkeypatch):
    """CI of 5bcc0d8 failed once with "SystemError: AST constructor recursion depth mismatch" in use_data_dir's
    check of LocalArchitect: Python 3.11's inspect finds a class by ast.parse, whose depth counter another
    thread (formatting a traceback) shared (cpython gh-106905). The class checks must not parse, and must
    still see a call in any method, a classmethod or a property, and miss one that is not there."""
    import ast

    from mephisto.abstractions.architects.local_architect import LocalArchitect
    from mephisto.operations.operator import Operator

    parsed = []
    with monkeypatch.context() as parsing:  # counted, not raised: pytest parses to report a failure
        parsing.setattr(ast, "parse",
                        lambda *args, parse=ast.parse, **kwargs: parsed.append(args) or parse(*args, **kwargs))
        patching.require_call(LocalArchitect, "get_mephisto_tmp_dir()", "use_data_dir")
        patching.require_call(Operator, "start_metrics_server()", "metrics_server_off")
    assert parsed == []

    class Upstream:
        @classmethod
        def made(cls):
            return cls.launch()

        @property
        def size(self):
            return len(self.parts())

    for call in ("cls.launch()", "self.parts()"):
        patching.require_call(Upstream, call, "a patch")
    with pytest.raises(CompatError, match="a patch: .*Upstream no longer calls 'self.stop\\(\\)'"):
        patching.require_call(Upstream, "self.stop()", "a patch")
