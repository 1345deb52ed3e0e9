"""A/B next-utterance test (ChatEval; Lee et al. 2020, section 2.1 and Appendix A) as plain Python.

Each item is a prompt (one or more context turns) and the next utterance of two models. The worker
answers A, B or tie; 10 comparisons per HIT; which model is shown as A is randomised. Items whose two
responses are identical (after whitespace and case normalisation) are automatic ties: never shown,
exported with ``automatic: true``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from parlai_dialeval.protocols import get_protocol

PROTOCOL = get_protocol("ab")
PER_HIT = PROTOCOL.meta["per_hit"]
QUESTION = PROTOCOL.questions[0].wording
CHOICES = PROTOCOL.meta["choices"]


@dataclass(frozen=True)
class ABItem:
    item_id: str
    context: list[str]
    model_x: str
    model_y: str
    response_x: str
    response_y: str


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def is_identical(item: ABItem) -> bool:
    return _norm(item.response_x) == _norm(item.response_y)


def items_from_responses(contexts: list[list[str]], responses: dict[str, list[str]],
                         model_pair: tuple[str, str], id_prefix: str = "item") -> list[ABItem]:
    """Items for one model pair from aligned lists (``responses[model][i]`` answers ``contexts[i]``)."""
    x, y = model_pair
    for model in model_pair:
        if len(responses[model]) != len(contexts):
            raise ValueError(f"model {model}: {len(responses[model])} responses for {len(contexts)} contexts")
    return [ABItem(f"{id_prefix}_{i}", list(ctx), x, y, responses[x][i], responses[y][i])
            for i, ctx in enumerate(contexts)]


def contexts_from_teacher(task: str, max_items: int | None = None, **opt) -> list[list[str]]:
    """Every episode's first context of a ParlAI teacher (e.g. ``dialeval:chateval:ncm``), turns split
    on newlines, as ParlAI joins multi-turn contexts."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    full_opt = ParlaiParser(True, False).parse_kwargs(task=task, datatype="valid", **opt)
    teacher = create_task_agent_from_taskname(full_opt)[0]
    contexts = []
    while not teacher.epoch_done() and (max_items is None or len(contexts) < max_items):
        message = teacher.act()
        if message.get("text") is not None:
            contexts.append(message["text"].split("\n"))
        while not message.get("episode_done", True) and not teacher.epoch_done():
            message = teacher.act()
    return contexts


def generate_responses(contexts: list[list[str]], agent) -> list[str]:
    """A ParlAI agent's next utterance for each context (reset between contexts; turns joined by newline)."""
    out = []
    for ctx in contexts:
        agent.reset()
        agent.observe({"id": "context", "text": "\n".join(ctx), "episode_done": False})
        out.append(str(agent.act().get("text", "")))
    return out


def make_hits(items: list[ABItem], rng: random.Random, per_hit: int = PER_HIT) -> tuple[list[list[dict]], list[ABItem]]:
    """Split off automatic ties, shuffle the rest into HITs of ``per_hit`` with random A/B order."""
    ties = [item for item in items if is_identical(item)]
    shown = [item for item in items if not is_identical(item)]
    rng.shuffle(shown)
    pairs = []
    for item in shown:
        flip = rng.random() < 0.5
        a, b = (item.model_y, item.model_x) if flip else (item.model_x, item.model_y)
        ra, rb = (item.response_y, item.response_x) if flip else (item.response_x, item.response_y)
        pairs.append({"item_id": item.item_id, "context": item.context, "model_a": a, "model_b": b,
                      "response_a": ra, "response_b": rb})
    return [pairs[i:i + per_hit] for i in range(0, len(pairs), per_hit)], ties


def public_view(hit: list[dict]) -> list[dict]:
    """What the browser receives: no model names (an attention check's instruction, never a gold item's answer)."""
    return [{"item_id": p["item_id"], "context": p["context"], "response_a": p["response_a"],
             "response_b": p["response_b"], **({"attention": p["attention"]} if "attention" in p else {})}
            for p in hit]


def with_checks(hits: list[list[dict]], args, rng: random.Random) -> list[list[dict]]:
    """Each HIT with its attention checks (a real item whose question says which answer to give) and gold items
    (a real item with one response replaced by a clearly broken one: the other is right) mixed in
    (crowdsourcing/platform/checks.py); the answer each expects stays server-side in ``check``. A check item is
    a copy of an item of another HIT under that item's own id, so nothing the page receives tells a gold item
    from the others (with a single HIT, of one of its own under a new id)."""
    from parlai_dialeval.crowdsourcing.platform import checks

    rule = checks.rule(args)
    out = []
    for number, hit in enumerate(hits):
        others = [pair for k, other in enumerate(hits) if k != number for pair in other]
        used: set[str] = set()

        def source(kind: str, k: int) -> dict:
            fresh = [pair for pair in others if pair["item_id"] not in used]
            if fresh:
                pair = rng.choice(fresh)
                used.add(pair["item_id"])
                return dict(pair)
            return {**rng.choice(hit), "item_id": f"{rng.choice(hit)['item_id']}_{kind[0]}{number}_{k}"}

        attention, gold = [], []
        for k in range(rule["attention"]):
            side = rng.choice(("a", "b"))
            attention.append({**source("attention", k), "attention": {"choose": side},
                              "check": {"kind": "attention", "expected": side}})
        for k in range(rule["gold"]):
            bad = rng.choice(("a", "b"))
            gold.append({**source("gold", k), f"model_{bad}": checks.GOLD_MODEL,
                         f"response_{bad}": rng.choice(checks.GOLD_REPLIES),
                         "check": {"kind": "gold", "expected": "b" if bad == "a" else "a"}})
        out.append(checks.mix(hit, attention, gold, args, rng))
    return out
