"""What the hostile-input tests share (tests/test_hostile_*.py): well-formed corpora of each protocol to break or
bend, every command that reads --data with the arguments it needs, and the one-line refusal they must give. Commands
run in this process (the command line takes seconds to start); an exception escaping ``main`` fails the test with
its traceback, which is exactly what a user must never see."""
from __future__ import annotations

import json
from pathlib import Path

from parlai_dialeval.cli import main

from parlai_dialeval.cli import main

HTML_NAME = "<script>alert(1)</script>"
STUDY = {"type": "study", "name": "s", "qc_models": ["qc"],
         "criteria": [{"name": "interesting", "positive": True, "scale": "continuous", "min": 0, "max": 100},
                      {"name": "robotic", "positive": False, "scale": "continuous", "min": 0, "max": 100}]}


def dialeval(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as stop:  # argparse's own exits
        code = stop.code if isinstance(stop.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps({"format_version": "1.0", **r}) + "\n" for r in records))
    return path


# ----------------------------------------------------------------------------- well-formed corpora

def live_chat(models=("m1", "m2"), workers=6, study=STUDY) -> list[dict]:
    """Ji et al.-style live chat: every worker chats with each model and the QC bot and rates each."""
    records = [study]
    for w in range(workers):
        for slot, model in enumerate([models[0], "qc", *models[1:]]):
            cid = f"w{w}-{slot}"
            records.append({"type": "conversation", "study": study["name"], "id": cid, "models": [model],
                            "worker_id": f"w{w}", "assignment_id": f"a{w}", "slot": slot, "task": "live_chat_da",
                            "turns": [{"speaker": "human", "text": "hi"}, {"speaker": model, "text": "hello"}]})
            good = model != "qc"
            for criterion, positive in (("interesting", True), ("robotic", False)):
                value = (80 if good else 10) + 3 * w + slot
                records.append({"type": "rating", "study": study["name"], "conversation_id": cid,
                                "worker_id": f"w{w}", "model": model, "criterion": criterion,
                                "scale": "continuous", "scale_min": 0, "scale_max": 100,
                                "value": value if positive else 100 - value})
    return records


def pairwise(pairs=(("x", "y"), ("y", "z"), ("x", "z")), choices="aab", items=8, workers=3,
             question="Who would you prefer to talk to?") -> list[dict]:
    records = [{"type": "study", "name": "p"}]
    for a, b in pairs:
        for i in range(items):
            for w in range(workers):
                records.append({"type": "comparison", "study": "p", "item_id": f"{a}-{b}-{i}", "worker_id": f"w{w}",
                                "model_a": a, "model_b": b, "choice": choices[(i + w) % len(choices)],
                                "question": question})
    return records


def single_model(models=("m1", "m2"), conversations=6) -> list[dict]:
    """SM-Turn binary ticks on bot turns and SM-Dialog 1-5 Likert, as docs/single_model_analysis.md says."""
    records = [{"type": "study", "name": "sm"}]
    for m, model in enumerate(models):
        for c in range(conversations):
            cid = f"{model}-c{c}"
            turns = [t for i in range(7) for t in ({"speaker": "human", "text": f"q{i}"},
                                                  {"speaker": model, "text": f"a{i}"})]
            records.append({"type": "conversation", "study": "sm", "id": cid, "models": [model],
                            "worker_id": f"w{c}", "task": "sm_eval", "turns": turns})
            for criterion in ("engaging", "humanlike", "interesting"):
                for i in range(1, 14, 2):
                    records.append({"type": "rating", "study": "sm", "conversation_id": cid, "worker_id": f"w{c}",
                                    "model": model, "criterion": criterion, "scale": "binary", "scale_min": 0,
                                    "scale_max": 1, "value": int((i + c + m) % 3 != 0), "turn_index": i})
                records.append({"type": "rating", "study": "sm", "conversation_id": cid, "worker_id": f"w{c}",
                                "model": model, "criterion": criterion, "scale": "likert", "scale_min": 1,
                                "scale_max": 5, "value": 1 + (c + m) % 5})
    return records


def scales(models=("m1", "m2", "m3"), items=5, workers=3) -> list[dict]:
    records = [{"type": "study", "name": "sc"}]
    for i in range(items):
        for m, model in enumerate(models):
            for w in range(workers):
                records.append({"type": "rating", "study": "sc", "conversation_id": f"item{i}", "worker_id": f"w{w}",
                                "model": model, "criterion": "readability", "scale": "likert", "scale_min": 1,
                                "scale_max": 6, "value": 1 + (i + m + w) % 6})
    return records


# ----------------------------------------------------------------------------- the commands

# Every command that reads --data, with the arguments it needs besides --data, writing into ``out``.
DATA_COMMANDS = {
    "validate": lambda out: [],
    "convert": lambda out: ["--out", out.with_suffix(".jsonl")],
    "analyze_live_chat": lambda out: ["--out", out],
    "analyze_pairwise": lambda out: ["--out", out, "--bootstrap-rounds", "20"],
    "analyze_single_model": lambda out: ["--out", out, "--n-boot", "20"],
    "analyze_scales": lambda out: ["--out", out],
    "analyze_annotations": lambda out: ["--out", out],
    "significance_time": lambda out: ["--out", out, "--trials", "5"],
    "text_metrics": lambda out: ["--out", out.with_suffix(".csv")],
}


def assert_one_line_error(code: int, err: str, *names: str):
    """A non-zero exit and one line on stderr (the error) that holds every given name."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0, "expected a refusal"
    assert len(lines) == 1 and lines[0].startswith("dialeval: error: "), err[-3000:]
    assert "Traceback" not in err
    for name in names:
        assert name in lines[0], (name, lines[0])


def report_text(out: Path) -> str:
    return (out / "report.html").read_text()
