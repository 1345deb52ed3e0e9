"""Attention checks and silent gold items, configured per task as ``<task>.checks.*`` (docs/crowdsourcing.md,
"Attention checks and gold items").

- **Attention checks** are instructed-response items, written to Prolific's attention-check policy (researcher
  help centre, "Prolific's attention and comprehension check policy", researcher-help.prolific.com/en/article/fb63bb:
  an instructional manipulation check tells the participant explicitly, in the question itself, how to answer;
  it assumes no prior knowledge, relies on no memory and is in no small print). Ours replace one judgment's
  question with such an instruction ("move this slider to 30", "choose Response 2 for this turn"), in the
  screen's own answer format. The participant is told in the instructions that the study has them. Failing
  ``attention_fail`` of them (at least two, as the policy allows for a rejection in a study of 5 minutes or more)
  is the one failure that ``dialeval review`` names as grounds for a rejection (FAILED_CHECK).
- **Gold items** are known answers mixed into the work without notice (a reply that is clearly broken beside a
  real one). Not announced, they are no attention check under the policy: evidence for review, never grounds for
  a rejection.

Each task plans where its items go (``positions``), shows them, grades them at export and marks their records
with ``check`` (docs/data_model.md, "Checks"), which every analysis sets aside. The rule (``rule``) goes into
the study record's ``meta.checks``, so the evidence table applies what the launch configured.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field

from parlai_dialeval.errors import DialevalError

# Known-bad replies of gold items: no one judging in good faith prefers or praises them (they are the known
# losers of PW-Turn's and ACUTE's onboarding, Smith et al. Appendix A)
GOLD_REPLIES = ("Weekend weekend weekend weekend.", "My favourite colour is the number seven.",
                "Yes yes yes yes yes yes yes yes.", "The train leaves. Potato.", "i i i i i i",
                "I don't want to talk to you, go away.")
GOLD_MODEL = "gold_bad"  # the model name of a gold item's known-bad side in comparisons
ATTENTION_MODEL = "attention_check"  # the model name of an instructed pair's sides


@dataclass
class ChecksArgs:
    attention: int = field(default=0, metadata={
        "help": "attention checks per unit (HIT): judgments whose question is replaced by an explicit instruction of "
                "what to answer (Prolific's policy for a fair check); the instructions tell participants there are "
                "some. 0: none"})
    attention_at: list = field(default_factory=list, metadata={
        "help": "where the attention checks go: 1-based positions among the unit's judgments (e.g. [2, 5]); empty: "
                "drawn at random, never the first"})
    attention_fail: int = field(default=2, metadata={
        "help": "failed attention checks that fail a participant (evidence table, --exclude-flagged, adaptive "
                "collection); `dialeval review` suggests a rejection only at two or more, as Prolific's policy allows"})
    gold: int = field(default=0, metadata={
        "help": "silent gold items per unit: a judgment with a known answer (a clearly broken reply beside a real "
                "one), not announced; evidence only, never grounds for a rejection. 0: none"})
    gold_at: list = field(default_factory=list, metadata={
        "help": "where the gold items go: 1-based positions among the unit's judgments; empty: drawn at random, "
                "never the first"})
    gold_min_accuracy: float = field(default=0.5, metadata={
        "help": "a participant who gets a smaller share of their gold items right is flagged for review (0..1)"})
    tolerance: float = field(default=10.0, metadata={
        "help": "how far a continuous answer (a 0-100 slider, a magnitude) may be from the instructed value and "
                "still pass"})


def checks_field(note: str = ""):
    """The ``checks`` group of a task's config, its help saying what the items are in that task."""
    return field(default_factory=ChecksArgs, metadata={
        "help": "attention checks and silent gold items (docs/crowdsourcing.md, 'Attention checks and gold items')"
                + (f"; {note}" if note else "")})


def positions(count: int, at: list, judgments: int, rng: random.Random, what: str) -> list[int]:
    """0-based indices of the judgments (of ``judgments``) that carry ``what`` items: ``at`` (1-based) when
    given, else ``count`` drawn at random, never the first where there are others."""
    if at:
        wrong = [p for p in at if not isinstance(p, int) or isinstance(p, bool) or not 1 <= p <= judgments]
        if wrong:
            raise DialevalError(f"checks.{what}_at={list(at)}: positions must be whole numbers in 1..{judgments} "
                                f"(the unit's judgments)")
        return sorted({p - 1 for p in at})
    if count < 0:
        raise DialevalError(f"checks.{what}={count}: expected 0 or more")
    candidates = list(range(1, judgments)) if judgments > 1 else list(range(judgments))
    if count > len(candidates):
        raise DialevalError(f"checks.{what}={count}: a unit has {judgments} judgments, room for at most "
                            f"{len(candidates)} (never the first)")
    return sorted(rng.sample(candidates, count))


def plan(args: ChecksArgs, judgments: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """(0-based judgments carrying attention checks, those carrying gold items) of a unit of ``judgments``,
    apart: one judgment is never both."""
    attention = positions(args.attention, list(args.attention_at), judgments, rng, "attention")
    if args.gold_at:
        gold = positions(0, list(args.gold_at), judgments, rng, "gold")
        if set(gold) & set(attention):
            raise DialevalError(f"checks.gold_at={list(args.gold_at)} and checks.attention_at="
                                f"{list(args.attention_at)} share a position: a judgment is one or the other")
        return attention, gold
    free = [i for i in (range(1, judgments) if judgments > 1 else range(judgments)) if i not in attention]
    if args.gold > len(free):
        raise DialevalError(f"checks.gold={args.gold}: a unit has {judgments} judgments, {len(free)} of them free for "
                            "gold items (never the first, never an attention check's)")
    return attention, sorted(rng.sample(free, args.gold))


def mix(items: list, attention: list, gold: list, args: ChecksArgs, rng: random.Random) -> list:
    """A static task's unit: ``items`` with the ``attention`` and ``gold`` items (as many as ``rule(args)`` asks
    for) at the positions ``plan`` draws among all of them."""
    total = len(items) + len(attention) + len(gold)
    at_attention, at_gold = plan(args, total, rng)
    queues = {"items": list(items), "attention": list(attention), "gold": list(gold)}
    kind = {**{i: "attention" for i in at_attention}, **{i: "gold" for i in at_gold}}
    return [queues[kind.get(index, "items")].pop(0) for index in range(total)]


def refuse_adaptive(cfg, task: str) -> None:
    """Check items are mixed into a fixed design's units; adaptive collection deals its own units (for now
    without them): one line instead of a launch whose units silently lack them."""
    args = of(getattr(cfg, task))
    if cfg.get("adaptive") and (rule(args)["attention"] or rule(args)["gold"]):
        raise DialevalError(f"{task}.checks: attention checks and gold items are not dealt by adaptive collection yet "
                            "(adaptive=true); launch without them, or without adaptive")


def validate(args: ChecksArgs, task: str, gold: bool = True) -> ChecksArgs:
    """The task's checks config, refused with one line when it cannot work (``gold``: the task has gold items)."""
    if args.attention_fail < 1:
        raise DialevalError(f"{task}.checks.attention_fail={args.attention_fail}: expected 1 or more")
    if not 0 <= args.gold_min_accuracy <= 1:
        raise DialevalError(f"{task}.checks.gold_min_accuracy={args.gold_min_accuracy}: expected a share in 0..1")
    if args.tolerance < 0:
        raise DialevalError(f"{task}.checks.tolerance={args.tolerance}: expected 0 or more")
    if not gold and (args.gold or args.gold_at):
        raise DialevalError(f"{task}.checks.gold: this task's silent known-answer items are its QC-bot "
                            "conversations (live_chat.qc_models); leave checks.gold at 0")
    return args


def rule(args: ChecksArgs) -> dict:
    """What the export writes into the study record's ``meta.checks`` (analysis/evidence.py reads it)."""
    return {"attention_fail": int(args.attention_fail), "gold_min_accuracy": float(args.gold_min_accuracy),
            "tolerance": float(args.tolerance), "attention": int(args.attention or len(args.attention_at)),
            "gold": int(args.gold or len(args.gold_at))}


def as_dict(args) -> dict:
    """A checks config (dataclass or Hydra's DictConfig) as a plain dict, for the shared state of a launch."""
    if isinstance(args, ChecksArgs):
        return asdict(args)
    return {key: (list(value) if key.endswith("_at") else value) for key, value in dict(args).items()}


def of(cfg_args) -> ChecksArgs:
    """A task's ``checks`` group (Hydra's DictConfig, or absent in a config from before it) as ChecksArgs."""
    checks = getattr(cfg_args, "checks", None)
    return ChecksArgs(**as_dict(checks)) if checks is not None else ChecksArgs()


def check_of(kind: str, passed: bool, expected=None, item: str | None = None) -> dict:
    """A record's ``check`` object (data/schema.py)."""
    out = {"kind": kind, "passed": bool(passed)}
    if expected is not None:
        out["expected"] = expected
    if item is not None:
        out["item"] = item
    return out


def near(value, target: float, tolerance: float) -> bool:
    """A continuous answer within ``tolerance`` of the instructed ``target``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value - target) <= tolerance
