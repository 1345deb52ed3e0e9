"""The crowdsourcing platform layer shared by every task in ``crowdsourcing/`` (see docs/crowdsourcing.md).

- ``env``: Mephisto's data directory and the Python 3.11 fix, set before Mephisto loads.
- ``registry``: how a task folder declares itself (``TaskSpec`` in ``crowdsourcing/<task>/task.py``).
- ``config``: Hydra run configs per task (``crowdsourcing/<task>/conf/*.yaml``) composed with overrides.
- ``blueprint``: ``dialeval_chat``, Mephisto's ParlAI-chat blueprint serving our prebuilt frontend.
- ``frontend``: where the shared frontend package puts each task's bundle.
- ``runner``: launching a task (LocalArchitect + MockProvider by default, MTurk through config).
- ``export``: every unit a task collected -> canonical records, incomplete and returned work included.
- ``bots``: ParlAI agents configured per model, loaded once, balanced across HITs.
- ``quality``: soft-blocking workers through Mephisto qualifications.
"""
