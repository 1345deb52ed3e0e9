"""Prolific as a Mephisto 1.1.1 crowd provider (``mephisto/provider=prolific``), its review loop, and a
fake Prolific server for tests and rehearsals (``python -m parlai_dialeval.providers.prolific.fake``).
See docs/crowdsourcing.md, "Run your study on Prolific"."""
