"""parlai_dialeval: reliable human and automatic evaluation of open-domain chatbots, on ParlAI.

Importing the package applies the Python 3.11 compatibility fix for Mephisto (see ``compat``) and
registers the ``dialeval:`` prefix with ParlAI's loader, so ``-m dialeval:NAME`` resolves to
``parlai_dialeval.agents.NAME`` and ``-t dialeval:NAME`` to ``parlai_dialeval.tasks.NAME``, and registers
our own Mephisto crowd providers (Prolific) for whenever Mephisto is imported (``compat.install``).
"""
from parlai_dialeval import compat

__version__ = "0.1.0"

compat.install()  # also registers the dialeval: prefix and our crowd providers
