"""Adaptive collection's glue to Mephisto 1.1.1's launcher (platform/adaptive/config.py says how a run goes):
``attach`` puts the controller's generator where Mephisto takes a task's units from, and ``launching``
is the context of Mephisto's launch call."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Optional

from parlai_dialeval.crowdsourcing.platform.adaptive.config import ChatPairwise, LivePairwise, Settings
from parlai_dialeval.crowdsourcing.platform.adaptive.controller import Controller
from parlai_dialeval.crowdsourcing.platform.blueprint import GENERATED_HITS
from parlai_dialeval.errors import DialevalError


def launching(controller: Optional[Controller]):
    """The context of Mephisto's launch call: a generated run's units are launched by the thread-safe
    launcher of compat/mephisto.py (Mephisto's own loses its unit thread to the generator's)."""
    from parlai_dialeval.compat.mephisto_threads import safe_unit_launching

    return contextlib.nullcontext() if controller is None else safe_unit_launching()


def attach(spec, cfg, shared, db, data_dir: Path, resumed: bool) -> Optional[Controller]:
    """Replace the task's fixed design by the adaptive generator when ``adaptive=true`` (else None).
    ``resumed``: platform/resume.py has put the interrupted run's unfinished HITs in ``shared``."""
    if not cfg.get("adaptive"):
        return None
    settings = Settings.from_config(cfg)
    if isinstance(spec.extra["adaptive"], LivePairwise):  # the task draws its pairs itself (the arena)
        study = spec.extra["adaptive"].start(cfg, shared, db, settings, print)
        setattr(shared, GENERATED_HITS, study.hits())
        return study
    path = Path(cfg.adaptive_state or Path(data_dir) / "adaptive" / f"{cfg.mephisto.task.task_name}.json")
    state = json.loads(path.read_text()) if path.is_file() else None
    if state is None and resumed:
        raise DialevalError(f"{path}: no adaptive state for the interrupted run being resumed; give its "
                            "adaptive_state, or launch under another mephisto.task.task_name")
    task_name = cfg.mephisto.task.task_name
    chat = isinstance(spec.extra["adaptive"], ChatPairwise)
    if chat:
        # an interrupted batch's unfinished conversations are not offered again: the allocator chooses anew
        models, design, left = sorted(spec.extra["adaptive"].models(shared)), [], []
        fixed_hits = int(cfg.mephisto.blueprint.get("num_conversations") or 0)
    else:
        design = state["design"] if state else list(shared.static_task_data)
        models, left, fixed_hits = None, list(shared.static_task_data) if resumed else [], len(design)
    controller = Controller(spec, task_name, db, design, settings, path, state, left, models=models,
                            fixed_hits=fixed_hits)
    setattr(shared, GENERATED_HITS if chat else "static_task_data", controller.hits())
    return controller
