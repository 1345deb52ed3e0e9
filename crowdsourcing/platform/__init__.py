"""The crowdsourcing platform layer shared by every task in ``crowdsourcing/`` (see docs/crowdsourcing.md).

- ``env``: Mephisto's data directory and the Python 3.11 fix, set before Mephisto loads.
- ``registry``: how a task folder declares itself (``TaskSpec`` in ``crowdsourcing/<task>/task.py``).
- ``config``: Hydra run configs per task (``crowdsourcing/<task>/conf/*.yaml``) composed with overrides.
- ``blueprint``: ``dialeval_chat`` (ParlAI chat) and ``dialeval_static`` (static React, server-side unit data),
  both serving our prebuilt frontend and recording the task's frontend entry in the run.
- ``frontend``: where the shared frontend package puts each task's bundle.
- ``runner``: launching a task (LocalArchitect + MockProvider by default, MTurk through config) and
  stopping it on Ctrl-C / SIGTERM.
- ``resume``: a launch of a task name whose run was killed resumes it.
- ``adaptive``: ``adaptive=true`` in the pairwise tasks: HITs in batches, pairs chosen from the answers so
  far, stop once the ranking is certified (parlai_dialeval.adaptive) or the budget is spent.
- ``ports``: whether the launch's port is free, and what holds it when not.
- ``launch_log``: `dialeval launch` keeps the terminal to its own lines and banner, the rest in a log file.
- ``export``: every unit a task collected -> canonical records, incomplete and returned work included.
- ``bots``: ParlAI agents configured per model, loaded once, balanced across HITs.
- ``speed``: how long people wait for a bot (the patience threshold), and the launch's measure of an endpoint's speed.
- ``progress``: units done / in flight / left, and the launch's record of them over time (the dashboard's chart).
- ``quality``: soft-blocking workers through Mephisto qualifications.
"""
