"""A fixed set of pairwise studies and what analyze_pairwise made of them, for the regression test of issue 56
(tests/test_pairwise_regression.py): every pairwise number must stay the same through the Bradley-Terry and
results-object refactors.

The studies are built here with numpy and pandas only (no project code), from fixed seeds. The outputs in
tests/fixtures/pairwise_regression/ were written at commit d138b2d (main before issue 56) by

    git checkout d138b2d -- parlai_dialeval && .venv/bin/python tests/pairwise_regression.py --write \\
        tests/fixtures/pairwise_regression

(this file and that folder are new, so the checkout leaves them in place; then the code is checked out again).
``outputs`` runs the command's library entry point, scripts.analyze_pairwise.analyze, which exists with the
same signature before and after the refactor.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pairwise_regression"
REPLIES = [("# Answer\n" if k % 5 == 0 else "") + ("- point\n" * (k % 4)) + ("**bold** " if k % 6 == 0 else "")
           + "word " * (3 + k % 40) + ("?" if k % 7 == 0 else "") for k in range(60)]


def _bt_votes(rng, strengths, n, tie_rate=0.0, items=None, workers=8, names=None):
    """``n`` A/B votes: a random pair, the first side wins with probability logistic(difference)."""
    strengths = np.asarray(strengths, float)
    k = len(strengths)
    names = names or [f"m{i}" for i in range(k)]
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    p = 1 / (1 + np.exp(strengths[b] - strengths[a]))
    tie = rng.random(n) < tie_rate
    choice = np.where(tie, "tie", np.where(rng.random(n) < p, "a", "b"))
    item = rng.integers(0, items or n, n)
    return pd.DataFrame({"item_id": [f"i{j}" for j in item], "context": [f"prompt {j}" for j in item],
                         "worker_id": [f"w{j}" for j in rng.integers(0, workers, n)],
                         "model_a": np.array(names, dtype=object)[a], "model_b": np.array(names, dtype=object)[b],
                         "choice": choice, "question": "Which reply is better?"})


def _with_replies(rng, frame, strengths_by_length=None):
    out = frame.copy()
    out["response_a"] = [REPLIES[j] for j in rng.integers(0, len(REPLIES), len(out))]
    out["response_b"] = [REPLIES[j] for j in rng.integers(0, len(REPLIES), len(out))]
    return out


def studies() -> dict[str, tuple[pd.DataFrame, dict]]:
    """name -> (comparison records, PairwiseConfig fields, with 'style_covariates' / 'categories' as file
    contents where the study uses one)."""
    out = {}
    rng = np.random.default_rng(56)
    # small: three models, twelve votes, one model never loses (separation), replies for style control
    small = _with_replies(rng, _bt_votes(rng, [1.5, 0.0, -1.5], 12, workers=3))
    small.loc[small["model_a"].eq("m0"), "choice"] = "a"
    small.loc[small["model_b"].eq("m0"), "choice"] = "b"
    out["small"] = (small, {"bootstrap_rounds": 50})
    # medium: five models, 600 votes on 150 prompts (three votes each), 10% ties, replies
    medium = _with_replies(rng, _bt_votes(rng, [0.6, 0.3, 0.0, -0.2, -0.7], 600, tie_rate=0.1, items=150,
                                          workers=25))
    out["medium"] = (medium, {"bootstrap_rounds": 200, "seed": 3})
    # ties: PW-Turn, two questions, many ties, three models, disconnected-free
    rows = []
    for c in range(30):
        x, y = [("p", "q"), ("q", "r"), ("p", "r")][c % 3]
        for t in range(5):
            for question, edge in (("Which is more engaging?", 0.7), ("Which sounds more human?", 0.4)):
                u = rng.random()
                choice = "tie" if u < 0.35 else ("a" if u < 0.35 + 0.65 * edge else "b")
                rows.append({"item_id": f"c{c}", "turn_index": 2 * t + 1, "worker_id": f"w{c % 7}",
                             "model_a": x, "model_b": y, "choice": choice, "question": question})
    out["ties"] = (pd.DataFrame(rows), {"bootstrap_rounds": 100, "turns": (2, 4)})
    # style covariates: the user's own CSV beside the built-in ones
    styled = _with_replies(rng, _bt_votes(rng, [0.4, 0.0, -0.4], 300, tie_rate=0.05, items=100, workers=12))
    keys = styled[["item_id", "model_a"]].rename(columns={"model_a": "model"})
    keys = pd.concat([keys, styled[["item_id", "model_b"]].rename(columns={"model_b": "model"})]).drop_duplicates()
    keys["warmth"] = np.round(rng.normal(0, 1, len(keys)), 3)
    out["style_covariates"] = (styled, {"bootstrap_rounds": 100, "style_covariates": keys.to_csv(index=False)})
    # categories: a rule file over the prompts, and meta labels in a second study
    cats = _with_replies(rng, _bt_votes(rng, [0.5, 0.0, -0.3, -0.6], 400, tie_rate=0.1, items=120, workers=15))
    cats["context"] = [("tell me a joke about " if j % 3 == 0 else "explain how ") + f"topic {j}"
                       for j in rng.integers(0, 120, len(cats))]
    out["categories"] = (cats, {"bootstrap_rounds": 100,
                                "categories": "jokes: ['joke']\nexplanations: ['explain', 'how']\nnone: ['zzz']\n"})
    labelled = _bt_votes(rng, [0.3, 0.0, -0.3], 240, items=80, workers=10)
    labelled["meta"] = [{"category": ["chat", "quiz"][j % 2]} for j in range(len(labelled))]
    out["meta_categories"] = (labelled, {"bootstrap_rounds": 100})
    # workers flagged: an honest crowd plus two workers who always pick side A and one who rigs for m2
    crowd = _bt_votes(rng, [0.5, 0.2, 0.0, -0.4], 800, tie_rate=0.1, items=200, workers=20)
    side = _bt_votes(rng, [0.5, 0.2, 0.0, -0.4], 120, items=200, workers=2).assign(choice="a")
    side["worker_id"] = side["worker_id"].str.replace("w", "side")
    rig = _bt_votes(rng, [0.5, 0.2, 0.0, -0.4], 200, items=200, workers=1)
    rig = rig[rig["model_a"].eq("m2") | rig["model_b"].eq("m2")]
    rig = rig.assign(choice=np.where(rig["model_a"].eq("m2"), "a", "b"), worker_id="rigger")
    flagged = pd.concat([crowd, side, rig], ignore_index=True)
    flagged = flagged.iloc[rng.permutation(len(flagged))].reset_index(drop=True)
    out["workers_flagged"] = (flagged, {"bootstrap_rounds": 100, "exclude_flagged": True})
    out["workers_flagged_kept"] = (flagged, {"bootstrap_rounds": 100})
    # dialog unit (ACUTE-like), a disconnected pair, automatic ties, onboarding, two studies, variants
    acute = _bt_votes(rng, [0.4, 0.0, -0.4, 0.2], 180, tie_rate=0.0, workers=9,
                      names=["base", "lab-exp-1", "lab-exp-2", "other"])
    acute["item_id"] = [f"d{j}" for j in range(len(acute))]  # every conversation pair its own item
    acute["conversation_a"] = [f"conv-{j}-a" for j in range(len(acute))]
    acute["conversation_b"] = [f"conv-{j}-b" for j in range(len(acute))]
    acute["study"] = np.where(np.arange(len(acute)) % 2 == 0, "s1", "s2")
    extra = pd.DataFrame({"item_id": [f"x{j}" for j in range(6)], "worker_id": "w1", "model_a": ["solo-a"] * 6,
                          "model_b": ["solo-b"] * 6, "choice": ["a", "a", "b", "tie", "a", "a"],
                          "conversation_a": [f"ca{j}" for j in range(6)], "conversation_b": [f"cb{j}" for j in range(6)],
                          "study": "s1", "question": "Which reply is better?"})
    auto = acute.head(5).assign(choice="tie", automatic=True)
    onboarding = acute.head(3).assign(onboarding=True)
    acute = pd.concat([acute, extra, auto, onboarding], ignore_index=True)
    acute["automatic"] = acute["automatic"].eq(True)
    out["dialog_variants"] = (acute, {"bootstrap_rounds": 100, "variant_pattern": r"(.+)-exp-\d+",
                                      "provisional_votes": 60})
    # an LLM judge beside the people (PPI++ win rates and Bradley-Terry)
    people = _bt_votes(rng, [0.4, 0.0, -0.4], 240, tie_rate=0.1, items=80, workers=10)
    judged = _bt_votes(rng, [0.5, 0.0, -0.5], 400, tie_rate=0.1, items=200, workers=1)
    judged["item_id"] = judged["item_id"].str.replace("i", "j")
    judge = pd.concat([people.drop_duplicates("item_id"), judged], ignore_index=True)
    flip = rng.random(len(judge)) < 0.2
    judge["choice"] = np.where(flip, np.where(judge["choice"].eq("a"), "b", "a"), judge["choice"])
    judge["worker_id"] = "judge:fixture"
    out["judge"] = (people, {"bootstrap_rounds": 100, "judge": judge})
    return out


def _settings(settings: dict, folder: Path) -> tuple[dict, pd.DataFrame | None]:
    """(PairwiseConfig fields, with the study's files written into ``folder``; the judge's comparisons)."""
    settings = dict(settings)
    judge = settings.pop("judge", None)
    for name, suffix in (("style_covariates", "csv"), ("categories", "yaml")):
        if name in settings:
            path = folder / f"{name}.{suffix}"
            path.write_text(settings[name], encoding="utf-8")
            settings[name] = str(path)
    if judge is not None:
        settings["judge"] = "judge.jsonl"
    return settings, judge


def _json(summary: dict, folder: Path) -> dict:
    # the summary names the rule file: its temporary folder is no part of the result
    return json.loads(json.dumps(summary, default=_plain).replace(str(folder), "FOLDER"))


def outputs(frame: pd.DataFrame, settings: dict, folder: Path) -> dict:
    """Run analyze_pairwise's programmatic entry point (the command without its option parsing: it writes every
    file and the report) on one study; returns its tables and summary (JSON-ready)."""
    from parlai_dialeval.scripts.analyze_pairwise import PairwiseConfig, analyze

    settings, judge = _settings(settings, folder)
    result = analyze(frame.copy(), folder / "out", PairwiseConfig(**settings), log=lambda *_: None, judge=judge)
    tables = {name: value for name, value in result.items() if isinstance(value, pd.DataFrame)}
    return {"tables": tables, "summary": _json(result["summary"], folder)}


def library_outputs(frame: pd.DataFrame, settings: dict, folder: Path) -> dict:
    """The same through the library call (results.pairwise, after issue 56), which writes nothing: what the
    command writes is its tables and summary (tests/test_results.py checks that)."""
    from parlai_dialeval import results
    from parlai_dialeval.results.pairwise_result import PairwiseConfig

    settings, judge = _settings(settings, folder)
    # sections added after d138b2d are off: its golden files predate them (tests/test_ties.py, test_position.py)
    result = results.pairwise(frame.copy(), judge=judge,
                              config=PairwiseConfig(**settings, ties="off", position_effects="off"))
    tables = {name: value for name, value in result.tables.items() if value is not None}
    return {"tables": tables, "summary": _json(result.summary, folder)}


def _plain(value):
    """numpy scalars as Python numbers, anything else JSON cannot hold as its text."""
    return value.item() if hasattr(value, "item") else str(value)


def write(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name, (frame, settings) in studies().items():
        with tempfile.TemporaryDirectory() as folder:
            got = outputs(frame, settings, Path(folder))
        study = target / name
        study.mkdir(exist_ok=True)
        for table, value in got["tables"].items():
            value.to_csv(study / f"{table}.csv", index=False, float_format="%.17g")
        (study / "summary.json").write_text(json.dumps(got["summary"], indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(name, sorted(got["tables"]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, default=FIXTURES)
    sys.exit(write(parser.parse_args().write))
