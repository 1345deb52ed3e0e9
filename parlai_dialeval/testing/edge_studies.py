"""Small and degenerate studies for the edge sweep (tests/test_edge_sweep.py, benchmarks/bench_edge_sweep.py):
one worker, one item, all ties, one model winning every vote, nobody passing quality control, quality control
off, missing ratings, a model with one vote, HITs not submitted, exports of earlier format versions.

Hypothesis draws each study's shape (``pairwise_shapes`` ...); numpy, seeded by the draw, fills in the votes
and ratings. Independent of the analyses on purpose (numpy, pandas and hypothesis only; no project import): the
records are what a task's export or an importer would hand the commands.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import strategies as st

PAIRWISE_MODES = ("random", "all_ties", "one_wins_all", "one_vote_model", "level", "one_sided_workers")
RATERS = ("good", "random", "constant", "qc_high")  # how a live-chat worker rates (qc_high: the QC bot best)
QUESTION = "Who would you prefer to talk to for a long conversation?"
CRITERIA = [{"name": "interesting", "positive": True, "scale": "continuous", "min": 0, "max": 100},
            {"name": "fun", "positive": True, "scale": "continuous", "min": 0, "max": 100},
            {"name": "robotic", "positive": False, "scale": "continuous", "min": 0, "max": 100}]


@st.composite
def pairwise_shapes(draw) -> dict:
    return {"seed": draw(st.integers(0, 2 ** 31 - 1)), "models": draw(st.integers(2, 4)),
            "items": draw(st.integers(1, 8)), "votes_per_item": draw(st.integers(1, 3)),
            "workers": draw(st.integers(1, 5)), "mode": draw(st.sampled_from(PAIRWISE_MODES)),
            "turns": draw(st.booleans()), "automatic": draw(st.booleans()), "onboarding": draw(st.booleans()),
            "questions": draw(st.integers(1, 2)), "old_version": draw(st.booleans())}


def pairwise_study(shape: dict) -> pd.DataFrame:
    """Canonical comparison records of one drawn shape."""
    rng = np.random.default_rng(shape["seed"])
    names = [f"model{i}" for i in range(shape["models"])]
    strength = rng.normal(0, 1, shape["models"])
    rows = []
    for item in range(shape["items"]):
        a, b = rng.choice(shape["models"], 2, replace=False)
        if shape["mode"] == "one_vote_model" and item == 0:
            a, b = 0, shape["models"] - 1
        elif shape["mode"] == "one_vote_model":
            a, b = rng.choice(shape["models"] - 1, 2, replace=False) if shape["models"] > 2 else (0, 1)
        for vote in range(shape["votes_per_item"]):
            worker = int(rng.integers(shape["workers"]))
            flip = rng.random() < 0.5  # shown in either order
            first, second = (b, a) if flip else (a, b)
            choice = _choice(rng, shape["mode"], first, second, strength, worker)
            for question in range(shape["questions"]):
                row = {"item_id": f"item{item}", "worker_id": f"w{worker}", "model_a": names[first],
                       "model_b": names[second], "choice": choice,
                       "question": QUESTION if question == 0 else "Which response is more interesting?",
                       "duration": float(rng.uniform(0.5, 40))}
                if shape["turns"]:
                    row["turn_index"] = 2 * vote + 1
                    row["item_id"] = f"conversation{item}"
                rows.append(row)
    if shape["automatic"]:
        rows.append({"item_id": "auto", "worker_id": "w0", "model_a": names[0], "model_b": names[1],
                     "choice": "tie", "automatic": True, "question": QUESTION})
    if shape["onboarding"]:
        rows.append({"item_id": "onboarding0", "worker_id": "w0", "model_a": "onboarding_good",
                     "model_b": "onboarding_bad", "choice": "a", "onboarding": True, "question": QUESTION})
    frame = pd.DataFrame(rows)
    return frame.drop_duplicates(["item_id", "worker_id", "turn_index" if shape["turns"] else "item_id",
                                  "question", "model_a", "model_b"]).reset_index(drop=True)


def _choice(rng, mode: str, first: int, second: int, strength: np.ndarray, worker: int) -> str:
    if mode == "all_ties":
        return "tie"
    if mode == "one_wins_all":  # the lowest-numbered model wins every vote it is in
        return "a" if first < second else "b"
    if mode == "level":  # every pair split evenly, worker by worker
        return "a" if (worker + first) % 2 else "b"
    if mode == "one_sided_workers":
        return "a"
    if rng.random() < 0.15:
        return "tie"
    return "a" if rng.random() < 1 / (1 + np.exp(strength[second] - strength[first])) else "b"


@st.composite
def live_chat_shapes(draw) -> dict:
    workers = draw(st.integers(1, 4))
    return {"seed": draw(st.integers(0, 2 ** 31 - 1)), "models": draw(st.integers(1, 3)),
            "raters": draw(st.lists(st.sampled_from(RATERS), min_size=workers, max_size=workers)),
            "missing": draw(st.sampled_from((0.0, 0.0, 0.3, 1.0))), "left": draw(st.booleans()),
            "qc_test": draw(st.sampled_from(("mannwhitney", "ttest", "none"))), "old_version": draw(st.booleans())}


def live_chat_study(shape: dict) -> list[dict]:
    """Canonical records of a live-chat study: one HIT per worker, a chat with each genuine model and the QC bot."""
    rng = np.random.default_rng(shape["seed"])
    models = [f"bot{i}" for i in range(shape["models"])] + ["qc"]
    quality = dict(zip(models, list(rng.uniform(40, 90, shape["models"])) + [10.0]))
    records = [{"type": "study", "name": "edge", "criteria": CRITERIA, "qc_models": ["qc"]}]
    for w, rater in enumerate(shape["raters"]):
        left = shape["left"] and w == len(shape["raters"]) - 1 and len(shape["raters"]) > 1
        for slot, model in enumerate(rng.permutation(models)):
            conversation = f"w{w}-{slot}"
            rated = rng.random() >= shape["missing"]
            record = {"type": "conversation", "study": "edge", "id": conversation, "models": [str(model)],
                      "worker_id": f"w{w}", "assignment_id": f"hit{w}", "hit_id": "h0", "slot": slot,
                      "task": "live_chat_da", "status": "complete" if rated else "incomplete",
                      "turns": [{"speaker": "human", "text": "hello there, how are you"},
                                {"speaker": str(model), "text": "fine"}],
                      "duration": float(rng.uniform(30, 300)), "assignment_duration": 900.0,
                      "topic_attitude": str(rng.choice(["like", "dislike", "ambivalent"]))}
            if shape["old_version"]:  # a leaver as the release before `submission` wrote them
                record["meta"] = {"agent_status": "disconnect" if left else "completed"}
            elif left:
                record["submission"] = "disconnected"
            records.append(record)
            if not rated:
                continue
            for criterion in CRITERIA:
                value = {"good": rng.normal(quality[model], 8), "random": rng.uniform(0, 100), "constant": 50.0,
                         "qc_high": 100 - quality[model] + rng.normal(0, 5)}[rater]
                value = float(np.clip(value if criterion["positive"] else 100 - value, 0, 100))
                records.append({"type": "rating", "study": "edge", "conversation_id": conversation,
                                "worker_id": f"w{w}", "model": str(model), "criterion": criterion["name"],
                                "scale": "continuous", "scale_min": 0, "scale_max": 100, "value": round(value, 1),
                                "assignment_id": f"hit{w}"})
    return records


@st.composite
def single_model_shapes(draw) -> dict:
    return {"seed": draw(st.integers(0, 2 ** 31 - 1)), "models": draw(st.integers(1, 3)),
            "conversations": draw(st.integers(1, 5)), "workers": draw(st.integers(1, 3)),
            "mode": draw(st.sampled_from(("random", "constant", "all_good", "no_dialog", "no_turns"))),
            "pairwise": draw(st.booleans()), "durations": draw(st.booleans())}


def single_model_study(shape: dict) -> list[dict]:
    """SM-Turn (binary per bot turn) and SM-Dialog (Likert 1-5) ratings of engaging / humanlike / interesting,
    and, where drawn, PW-Turn and self-chat PW-Dialog comparisons of the same models (significance_time and
    compare_protocols read them)."""
    rng = np.random.default_rng(shape["seed"])
    models = [f"bot{i}" for i in range(shape["models"])]
    records = []
    for model in models:
        p = rng.uniform(0.2, 0.9)
        for c in range(shape["conversations"]):
            conversation, worker = f"sm-{model}-{c}", f"w{c % shape['workers']}"
            record = {"type": "conversation", "id": conversation, "models": [model], "worker_id": worker,
                      "task": "sm_eval", "turns": [{"speaker": "human" if i % 2 == 0 else model, "text": f"t{i}"}
                                                   for i in range(8)]}
            if shape["durations"]:
                record["duration"] = float(rng.uniform(100, 900))
            records.append(record)
            for criterion in ("engaging", "humanlike", "interesting"):
                if shape["mode"] != "no_turns":
                    for turn in range(1, 8, 2):
                        value = {"constant": 1, "all_good": 1}.get(shape["mode"], int(rng.random() < p))
                        records.append({"type": "rating", "conversation_id": conversation, "worker_id": worker,
                                        "model": model, "criterion": criterion, "scale": "binary", "scale_min": 0,
                                        "scale_max": 1, "value": value, "turn_index": turn})
                if shape["mode"] != "no_dialog":
                    value = {"constant": 3, "all_good": 5}.get(shape["mode"], int(rng.integers(1, 6)))
                    records.append({"type": "rating", "conversation_id": conversation, "worker_id": worker,
                                    "model": model, "criterion": criterion, "scale": "likert", "scale_min": 1,
                                    "scale_max": 5, "value": value})
    if shape["pairwise"] and len(models) > 1:
        question = "Which next response from your partner would you prefer in a long conversation?"
        for c in range(shape["conversations"]):
            records.append({"type": "conversation", "id": f"pw-{c}", "models": models[:2], "worker_id": f"p{c}",
                            "turns": [{"speaker": "human", "text": "x"}] * 8, "task": "pw_turn"})
            for turn in range(1, 8, 2):
                records.append({"type": "comparison", "item_id": f"pw-{c}", "worker_id": f"p{c}", "model_a": models[0],
                                "model_b": models[1], "choice": str(rng.choice(["a", "b"])), "turn_index": turn,
                                "question": question, **({"duration": 30.0} if shape["durations"] else {})})
    return records


@st.composite
def scale_shapes(draw) -> dict:
    return {"seed": draw(st.integers(0, 2 ** 31 - 1)), "items": draw(st.integers(1, 4)),
            "workers": draw(st.integers(1, 4)), "models": draw(st.integers(1, 2)),
            "designs": draw(st.lists(st.sampled_from(("likert", "magnitude", "best_worst")), min_size=1, max_size=3,
                                     unique=True)),
            "constant": draw(st.booleans())}


def scales_study(shape: dict) -> list[dict]:
    """Ratings of the same responses in the drawn designs (Santhanam & Shaikh 2020's Likert, magnitude
    estimation, best-worst scaling), with worker times and experience."""
    rng = np.random.default_rng(shape["seed"])
    scales = {"likert": ("likert", 1, 6), "magnitude": ("magnitude", 0, 999), "best_worst": ("best_worst", -1, 1)}
    records = []
    for design in shape["designs"]:
        scale, low, high = scales[design]
        records.append({"type": "study", "name": design, "criteria": [{"name": "readability", "scale": scale,
                                                                        "min": low, "max": high}]})
        for w in range(shape["workers"]):
            for item in range(shape["items"]):
                for m in range(shape["models"]):
                    if design == "likert":
                        value = 3 if shape["constant"] else int(rng.integers(1, 7))
                    elif design == "magnitude":
                        value = 100 if shape["constant"] else int(rng.integers(0, 1000))
                    else:
                        value = 0 if shape["constant"] else int(rng.integers(-1, 2))
                    record = {"type": "rating", "study": design, "conversation_id": f"i{item}", "worker_id": f"{design}{w}",
                              "model": f"m{m}", "criterion": "readability", "scale": scale, "scale_min": low,
                              "scale_max": high, "value": value, "duration": float(rng.uniform(1, 60)),
                              "meta": {"prior_experience_evaluating": bool(w % 2)}}
                    if scale == "magnitude":
                        record["reference_value"] = 100
                    records.append(record)
    return records
