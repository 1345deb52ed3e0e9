"""Every change this project makes to someone else's code, one module per library (docs/architecture.md,
"Patches", lists them all):

- ``compat/mephisto.py``: Mephisto 1.1.1 (a Python 3.11 source fix, detoxify left out, its data directory,
  its metrics server, the pace of its run tracker, unit launcher, force_shutdown and an onboarding's end,
  onboarding tries, our crowd providers registered on import);
- ``compat/mephisto_threads.py``: Mephisto where several threads meet (channels closed once, a thread-safe unit
  launcher for generated runs, atomic state writes);
- ``compat/mephisto_arrivals.py``: a crowd provider vets who gets a place, and whose reloading page gets
  its agent back;
- ``compat/mephisto_door.py``: what strangers' bytes may cost Mephisto's server (the router's door,
  unreadable packets dropped, bounded logging);
- ``compat/mephisto_router.py``: the node router Mephisto copies for every run (our dependencies, session
  tokens, limits) and its agents' acknowledgements of stored acts, with ``compat/mephisto_claims.py``: the
  registrations' claims (places bound to their page, per source, the way back; checked with the router's);
- ``compat/parlai.py``: ParlAI 1.7.2 (a Python 3.11 source fix, the fast command start, ``--help`` with
  required options, zoo paths resolved without downloading, the ``dialeval:`` prefix);
- ``compat/torch.py``: torch's private oneDNN operators for packed linear layers;
- ``compat/transformers.py``: GPT-2's MLP as the packed layers' GELU move expects it.

Each patch asserts the version it was written for (``patching.require_version``) and checks that it
took effect (a replace that matched exactly once, a function that is now ours) and says why it exists
and which upstream change would retire it. ``patching.py`` and ``source_fixes.py`` are the shared
machinery.

``install()`` puts the source fixes' import hook and the providers' registration on ``sys.meta_path``
and registers the ``dialeval:`` prefix with ParlAI's loader; it must run before anything
imports ``mephisto``: ``parlai_dialeval/__init__.py`` calls it, so importing this package first is
enough. ``python -c "from parlai_dialeval import compat; compat.check()"`` (install.sh) confirms that
every patch takes effect.
"""
from __future__ import annotations

import sys

from parlai_dialeval.compat import mephisto as _mephisto
from parlai_dialeval.compat import mephisto_door as _mephisto_door
from parlai_dialeval.compat import mephisto_threads as _mephisto_threads
from parlai_dialeval.compat import parlai as _parlai
from parlai_dialeval.compat import source_fixes
from parlai_dialeval.compat.patching import CompatError  # noqa: F401  (what a patch that no longer fits raises)

source_fixes.register(_mephisto.SOURCE_FIX)
source_fixes.register(_mephisto.AGENT_SOURCE_FIX)
source_fixes.register(_mephisto_door.SOURCE_FIX)
source_fixes.register(_parlai.SOURCE_FIX)


def install() -> None:
    source_fixes.install()
    _parlai.register_prefix()
    _mephisto.providers_on_import()


def check() -> None:
    from parlai_dialeval.compat import mephisto_arrivals as _mephisto_arrivals
    from parlai_dialeval.compat import mephisto_router as _mephisto_router
    from parlai_dialeval.compat import torch as _torch
    from parlai_dialeval.compat import transformers as _transformers

    install()
    for module in (_mephisto, _mephisto_threads, _mephisto_arrivals, _mephisto_door, _mephisto_router, _parlai, _torch,
                   _transformers):
        for line in module.check():
            print(f"parlai_dialeval.compat: {line}")
    print(f"parlai_dialeval.compat: every patch takes effect on Python {sys.version.split()[0]}")


if __name__ == "__main__":
    check()
