"""parlai_dialeval: reliable human and automatic evaluation of open-domain chatbots, on ParlAI.

Importing the package applies the Python 3.11 compatibility fix for Mephisto (see ``compat``) and
registers the ``dialeval:`` prefix with ParlAI's loader, so ``-m dialeval:NAME`` resolves to
``parlai_dialeval.agents.NAME`` and ``-t dialeval:NAME`` to ``parlai_dialeval.tasks.NAME``, and registers
our own Mephisto crowd providers (Prolific) for whenever Mephisto is imported.
"""
from parlai_dialeval import compat

__version__ = "0.1.0"

compat.install()


def _register_repo() -> None:
    from parlai.core import loader

    loader.REGISTERED_REPOS.setdefault(
        "dialeval:", {"repo": "parlai_dialeval", "source": "pip install -e . in the parlai_dialeval checkout"})


_register_repo()

from parlai_dialeval import providers  # noqa: E402  (stdlib only; Mephisto is not imported here)

providers.register_when_mephisto_loads()  # mephisto/provider=prolific exists once Mephisto loads
