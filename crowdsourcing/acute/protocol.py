"""PW-Dialog / ACUTE-Eval (Smith et al. 2022, 3.1.3; Li et al. 2019) as plain Python.

A pair shows two whole conversations side by side; the worker picks the better speaker for the
question and justifies it. Left/right order is randomised per pair. Units hold ``subtasks_per_unit``
pairs; workers first pass onboarding pairs with known answers (``onboarding_threshold`` correct).
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from parlai_dialeval.protocols import get_protocol

PROTOCOL = get_protocol("pw_dialog")
QUESTIONS = {q.id: q.wording for q in PROTOCOL.questions}


def question_text(question: str) -> str:
    if question not in QUESTIONS:
        raise ValueError(f"unknown ACUTE question {question!r} (expected one of {', '.join(QUESTIONS)})")
    return QUESTIONS[question]


def conversations_by_model(conversations: list[dict]) -> dict[str, list[dict]]:
    """Model -> its conversations; self-chats and human-model chats both name one model in ``models``."""
    grouped: dict[str, list[dict]] = {}
    for conv in conversations:
        if len(set(conv["models"])) != 1:
            raise ValueError(f"conversation {conv['id']}: ACUTE compares single-model conversations, "
                             f"got models {conv['models']}")
        grouped.setdefault(conv["models"][0], []).append(conv)
    return grouped


def make_pairs(conversations: list[dict], *, model_pairs: list[tuple[str, str]] | None = None,
               matchups_per_pair: int = 10, rng: random.Random) -> list[dict]:
    """``matchups_per_pair`` conversation pairs per model pair (all pairs of models when not given),
    each pair with a random conversation of each model and a random left/right order."""
    grouped = conversations_by_model(conversations)
    pairs_of_models = model_pairs or list(itertools.combinations(sorted(grouped), 2))
    pairs = []
    for model_x, model_y in pairs_of_models:
        for name in (model_x, model_y):
            if name not in grouped:
                raise ValueError(f"no conversations of model {name!r} (have: {', '.join(sorted(grouped))})")
        for matchup in range(matchups_per_pair):
            left, right = (model_x, model_y) if rng.random() < 0.5 else (model_y, model_x)
            # opaque id: the page sees it, and must not learn model names from it
            pairs.append({"pair_id": f"pair_{len(pairs)}",
                          "left": {"model": left, "conversation": rng.choice(grouped[left])},
                          "right": {"model": right, "conversation": rng.choice(grouped[right])}})
    return pairs


def public_pair(pair: dict) -> dict:
    """What the browser shows of a pair: turns with the evaluated speaker marked, no model names (an attention
    check's instruction, never which pair is a gold item)."""
    def side(entry: dict) -> list[dict]:
        return [{"text": t["text"], "evaluated": t["speaker"] == entry["model"]}
                for t in entry["conversation"]["turns"]]
    return {"pair_id": pair["pair_id"], "left": side(pair["left"]), "right": side(pair["right"]),
            **({"attention": pair["attention"]} if "attention" in pair else {})}


def with_checks(units: list[list[dict]], args, rng: random.Random) -> list[list[dict]]:
    """Each unit with its attention checks (a pair whose question says which speaker to choose) and gold items (a
    real conversation beside a copy whose evaluated speaker says only broken lines: the real one is right) mixed
    in (crowdsourcing/platform/checks.py). Their ids continue the opaque ``pair_N`` numbering, so the page cannot
    tell a gold pair from the others; the answer each expects stays server-side in ``check``."""
    from parlai_dialeval.crowdsourcing.platform import checks

    rule = checks.rule(args)
    pool = [pair for unit in units for pair in unit]
    number = len(pool)
    out = []
    for unit in units:
        attention, gold = [], []
        for _ in range(rule["attention"]):
            side = rng.choice(("left", "right"))
            attention.append({**rng.choice(pool), "pair_id": f"pair_{number}", "attention": {"choose": side},
                              "check": {"kind": "attention", "expected": side}})
            number += 1
        for _ in range(rule["gold"]):
            pair, bad = rng.choice(pool), rng.choice(("left", "right"))
            real = pair[bad]["conversation"]
            broken = {**real, "id": f"{real['id']}_{checks.GOLD_MODEL}", "models": [checks.GOLD_MODEL], "turns": [
                {"speaker": checks.GOLD_MODEL, "text": rng.choice(checks.GOLD_REPLIES)}
                if t["speaker"] == pair[bad]["model"] else dict(t) for t in real["turns"]]}
            gold.append({**pair, "pair_id": f"pair_{number}", bad: {"model": checks.GOLD_MODEL, "conversation": broken},
                         "check": {"kind": "gold", "expected": "right" if bad == "left" else "left"}})
            number += 1
        out.append(checks.mix(unit, attention, gold, args, rng))
    return out


def self_chat(agents: tuple, model: str, opening: str, num_turns: int, conversation_id: str) -> dict:
    """A self-chat of one model: two copies alternate, the first answering ``opening`` (kept in
    ``meta.context``, not a turn); ``num_turns`` messages each. Canonical conversation record."""
    for agent in agents:
        agent.reset()
    turns, message = [], opening
    for index in range(2 * num_turns):
        agent = agents[index % 2]
        agent.observe({"id": "partner", "text": message, "episode_done": False})
        message = str(agent.act().get("text", ""))
        turns.append({"speaker": model, "text": message})
    return {"type": "conversation", "id": conversation_id, "models": [model], "task": "self_chat",
            "turns": turns, "meta": {"context": opening}}


def make_units(pairs: list[dict], subtasks_per_unit: int, rng: random.Random) -> list[list[dict]]:
    """Shuffle the pairs and cut them into units of ``subtasks_per_unit`` (the last may be shorter)."""
    if subtasks_per_unit < 1:
        raise ValueError("subtasks_per_unit must be at least 1")
    shuffled = list(pairs)
    rng.shuffle(shuffled)
    return [shuffled[i:i + subtasks_per_unit] for i in range(0, len(shuffled), subtasks_per_unit)]


@dataclass(frozen=True)
class OnboardingPair:
    """A pair with a known answer: ``good`` is clearly better than ``bad`` for every question."""

    pair_id: str
    good: dict
    bad: dict


def onboarding_pairs(items: list[OnboardingPair], rng: random.Random) -> tuple[list[dict], list[str]]:
    """Shown pairs (order randomised) and the answer key ('left'/'right' side of the good speaker)."""
    shown, answers = [], []
    for item in items:
        good_left = rng.random() < 0.5
        left, right = (item.good, item.bad) if good_left else (item.bad, item.good)
        shown.append({"pair_id": item.pair_id, "left": {"model": "onboarding_" + ("good" if good_left else "bad"),
                                                        "conversation": left},
                      "right": {"model": "onboarding_" + ("bad" if good_left else "good"), "conversation": right}})
        answers.append("left" if good_left else "right")
    return shown, answers


def onboarding_passed(answers: list[str], choices: list[str], threshold: float) -> bool:
    """True when the share of correct choices reaches ``threshold`` (0..1)."""
    if len(choices) != len(answers):
        raise ValueError(f"expected {len(answers)} onboarding choices, got {len(choices)}")
    return sum(a == c for a, c in zip(answers, choices)) / len(answers) >= threshold


# Two onboarding pairs shipped with the task: a coherent, engaged speaker against one that ignores its
# partner. Projects with their own known-answer pairs pass them in the task config instead.
DEFAULT_ONBOARDING = [
    OnboardingPair("onboarding_0",
                   {"id": "onb0_good", "models": ["onboarding_good"], "turns": [
                       {"speaker": "human", "text": "Hi! Do you have any pets?"},
                       {"speaker": "onboarding_good", "text": "Yes, I have two cats. They love sleeping in the sun. Do you?"},
                       {"speaker": "human", "text": "I have a dog called Max."},
                       {"speaker": "onboarding_good", "text": "Max is a great name! What breed is he?"}]},
                   {"id": "onb0_bad", "models": ["onboarding_bad"], "turns": [
                       {"speaker": "human", "text": "Hi! Do you have any pets?"},
                       {"speaker": "onboarding_bad", "text": "i i i i i i"},
                       {"speaker": "human", "text": "I have a dog called Max."},
                       {"speaker": "onboarding_bad", "text": "The train leaves. Potato."}]}),
    OnboardingPair("onboarding_1",
                   {"id": "onb1_good", "models": ["onboarding_good"], "turns": [
                       {"speaker": "human", "text": "Hi! What did you do today?"},
                       {"speaker": "onboarding_good", "text": "I baked bread this morning and then read in the park."},
                       {"speaker": "human", "text": "Nice, what are you reading?"},
                       {"speaker": "onboarding_good", "text": "A mystery novel set in Scotland. Do you like mysteries?"}]},
                   {"id": "onb1_bad", "models": ["onboarding_bad"], "turns": [
                       {"speaker": "human", "text": "Hi! What did you do today?"},
                       {"speaker": "onboarding_bad", "text": "I don't know."},
                       {"speaker": "human", "text": "Nice, what are you reading?"},
                       {"speaker": "onboarding_bad", "text": "I don't know."}]}),
]
