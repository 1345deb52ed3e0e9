"""Adaptive collection in the pairwise tasks (``dialeval launch acute adaptive=true``; issue 16).

The launch emits HITs in batches instead of the whole fixed design at once (static tasks: ACUTE, A/B)
or instead of ``num_conversations`` HITs whose models the pool balances (PW-Turn). Mephisto 1.1.1's
TaskLauncher takes a generator for the units' data and calls it from its own thread, creating each
HIT as it is yielded; ``controller.Controller.hits`` is that generator. After yielding a batch it blocks until
every HIT of the batch is finished, reads their answers from Mephisto's database through the task's
own export (canonical comparisons), adds them to each model pair's betting e-process
(parlai_dialeval.adaptive.ledger), saves the state, and either stops (every adjacent pair of the
current ranking certified at ``adaptive_alpha``, or the budget spent) or lets the allocator
(parlai_dialeval.adaptive.allocation) pick the next batch's model pairs. A generator that returns ends
the run once the HITs in flight are done (Mephisto's own end of a generated run).

The judgments of a static task come from the fixed design it built (``static_task_data``): per model
pair, its items (ACUTE conversation pairs, A/B prompts), dealt in a seeded order and reused once
exhausted. A PW-Turn HIT is one conversation with the chosen pair (its world reads them from the unit's
server-side data), its per-turn votes one outcome. Each judgment keeps its pair's selection probability
in the HIT's server-side data.

The state (``adaptive_state``, default ``<mephisto data>/adaptive/<task name>.json``) is written
atomically when a batch is emitted and after it is read. A killed launch, relaunched, resumes through
platform/resume.py, which re-offers the unfinished HITs of the interrupted run: they are yielded first,
then the batch they belong to is awaited and read like any other. Answers are read once per Mephisto
agent (``ingested_agents``), so no batch is counted twice.

This module is the configuration (the ``adaptive...`` options, the checked ``Settings``, how a task
declares its judgments); the other modules of this package are listed in its ``__init__``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from mephisto.operations.hydra_config import TaskConfig

from parlai_dialeval.adaptive.allocation import ALLOCATORS
from parlai_dialeval.errors import DialevalError


@dataclass
class AdaptiveConfig(TaskConfig):
    """The adaptive-collection settings of a pairwise task (top-level keys: ``adaptive=true``)."""

    adaptive: bool = field(default=False, metadata={
        "help": "emit HITs in batches, choosing each batch's model pairs from the answers so far, and stop "
                "once the ranking is certified or adaptive_budget is spent (docs/adaptive_evaluation.md)"})
    adaptive_batch_size: int = field(default=4, metadata={"kind": "positive_int", "help": "HITs per batch"})
    adaptive_budget: int = field(default=0, metadata={"kind": "non_negative_int",
        "help": "most HITs in all; 0 = as many as the fixed design has"})
    adaptive_alpha: float = field(default=0.05, metadata={"kind": "probability",
        "help": "level of the certified ranking (every claim at once, valid at every look)"})
    adaptive_allocator: str = field(default="greedy_adjacent", metadata={
        "help": f"how pairs are chosen: {' | '.join(ALLOCATORS)}"})
    adaptive_explore: float = field(default=0.1, metadata={"kind": "share",
        "help": "share of each batch given to uniformly drawn pairs (greedy_adjacent)"})
    adaptive_worker_cap: int = field(default=0, metadata={"kind": "non_negative_int",
        "help": "most judgments of one worker counted as evidence (later ones are exported, not counted); 0 = no cap"})
    adaptive_exclude_flagged: bool = field(default=False, metadata={
        "help": "leave out the votes of workers the evidence table flags (the rule of --exclude-flagged: a voter test, "
                "failed attention checks, or two other signals; docs/data_model.md, \"Evidence about participants\"), "
                "run on every vote read so far after each batch; votes already counted stay counted"})
    adaptive_seed: Optional[int] = field(default=None, metadata={"help": "seed of pair choice and item order"})
    adaptive_judge: str = field(default="", metadata={
        "help": "a `dialeval judge` output on the design's items (static tasks): items for people are drawn with "
                "probabilities growing with the judge's uncertainty, and claims are certified by the anytime-valid "
                "PPI e-process with the judge (docs/ppi.md); empty = people only"})
    adaptive_judge_floor: float = field(default=0.9, metadata={"kind": "fraction",
        "help": "with adaptive_judge: every item's draw probability is at least this share of uniform's (0 < floor <= "
                "1; 1 = uniform draws; low floors make the safe bets small, docs/ppi.md)"})
    adaptive_state: str = field(default="", metadata={
        "help": "state file (JSON); default <mephisto data>/adaptive/<task name>.json"})


@dataclass(frozen=True)
class StaticPairwise:
    """How a static pairwise task's judgments look: the two models of one, what the page is shown of it, and
    the two things compared (conversation ids, responses) as a judge's answer names them (``judge_fields``)."""

    models_of: Callable[[dict], tuple[str, str]]
    public: Callable[[dict], dict]
    compared: Callable[[dict], frozenset]
    judge_fields: tuple[str, str]


@dataclass(frozen=True)
class ChatPairwise:
    """A chat task comparing two models per HIT (PW-Turn): each HIT is one conversation with the pair the
    allocator chose (its world reads ``models`` from the unit's server-side data); per-turn votes of one
    conversation count as one outcome, their mean (turns of a conversation are not independent)."""

    models: Callable[[object], list[str]]  # shared state -> the models of the launch


@dataclass(frozen=True)
class LivePairwise:
    """A task that draws the pair of each judgment itself as it goes (the arena: one participant, many battles):
    ``start(cfg, shared, db, settings, say)`` returns its study, whose ``hits()`` generator Mephisto runs and
    whose ``bind(launched)`` the launch calls, as the Controller's."""

    start: Callable


def check_overrides(spec, overrides: list[str]) -> None:
    """``adaptive...=`` given to a task without adaptive collection: one line saying which tasks have it."""
    keys = [o.split("=", 1)[0].lstrip("+~") for o in overrides or []]
    if any(key.startswith("adaptive") for key in keys) and "adaptive" not in spec.extra:
        from parlai_dialeval.crowdsourcing.platform.registry import available_tasks, get_task

        offered = [name for name in available_tasks() if "adaptive" in get_task(name).extra]
        raise DialevalError(f"adaptive=true: task {spec.name} is not a pairwise task; adaptive collection "
                            f"is offered by {', '.join(offered)}")


def check_settings(cfg) -> None:
    """The adaptive settings of a composed config, when ``adaptive=true``: one line for a bad one."""
    if cfg.get("adaptive"):
        Settings.from_config(cfg)


@dataclass(frozen=True)
class Settings:
    batch_size: int
    budget: int
    alpha: float
    allocator: str
    explore: float
    worker_cap: int
    seed: Optional[int]
    judge: str
    judge_floor: float
    exclude_flagged: bool = False

    @classmethod
    def from_config(cls, cfg) -> "Settings":
        settings = cls(int(cfg.adaptive_batch_size), int(cfg.adaptive_budget), float(cfg.adaptive_alpha),
                       str(cfg.adaptive_allocator), float(cfg.adaptive_explore), int(cfg.adaptive_worker_cap),
                       cfg.adaptive_seed, str(cfg.adaptive_judge or ""), float(cfg.adaptive_judge_floor),
                       bool(cfg.get("adaptive_exclude_flagged", False)))
        if settings.batch_size < 1:
            raise DialevalError(f"adaptive_batch_size={settings.batch_size}: expected at least 1 HIT per batch")
        if settings.budget and settings.budget < settings.batch_size:
            raise DialevalError(f"adaptive_budget={settings.budget} is smaller than one batch "
                                f"(adaptive_batch_size={settings.batch_size} HITs): raise the budget or lower "
                                "the batch")
        if not 0 < settings.alpha < 1:
            raise DialevalError(f"adaptive_alpha={settings.alpha}: expected a level between 0 and 1")
        if not 0 <= settings.explore <= 1:
            raise DialevalError(f"adaptive_explore={settings.explore}: expected a share between 0 and 1")
        if not 0 < settings.judge_floor <= 1:
            raise DialevalError(f"adaptive_judge_floor={settings.judge_floor}: expected a share in (0, 1]")
        if settings.allocator not in ALLOCATORS:
            raise DialevalError(f"adaptive_allocator={settings.allocator}: expected one of {', '.join(ALLOCATORS)}")
        return settings
