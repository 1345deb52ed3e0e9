"""Adaptive collection's glue to Mephisto (``dialeval launch TASK adaptive=true``; docs/adaptive_evaluation.md,
docs/ppi.md), one module per job: ``config.py`` the ``adaptive...`` options and the checked ``Settings``;
``launch.py`` the hook that hands Mephisto 1.1.1's launcher the generator of HITs; ``controller.py`` the
batch loop that generator runs; ``judge.py`` what an LLM judge changes (``adaptive_judge=F.jsonl``: items
drawn from its pool by its uncertainty, claims certified by the PPI e-process); ``judge_design.py`` the pool
a task's design holds, for ``dialeval judge --design``. The statistics they drive live in
parlai_dialeval/adaptive/ as pure functions.
"""
