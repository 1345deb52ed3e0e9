"""Issue 30: `dialeval judge --design <the ACUTE launch's overrides> --protocol acute` judges the conversation
pairs an ACUTE launch will deal (platform/adaptive/judge_design.py over acute/task.py's ``fixed_design``), so an adaptive launch
with ``adaptive_judge=`` finds the judge's answer on every item of its pool; end to end (slow), `certify --judge`
on that launch's export bets as the launch did."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.cli import main
from parlai_dialeval.crowdsourcing.platform.adaptive.launch import attach
from parlai_dialeval.crowdsourcing.platform.blueprint import SERVER_KEY
from parlai_dialeval.crowdsourcing.platform.config import compose
from parlai_dialeval.crowdsourcing.platform.registry import get_task
from parlai_dialeval.data import read_jsonl, write_jsonl
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing.ports import free_port

from .test_adaptive_judge import assert_certify_bets_as_the_launch

# m1 (3 conversations) is picked in both orders wherever it speaks; m2 against m3 the judge says "A" in
# both orders, a flip (1/2)
JUDGE = {"rules": [{"match": "Conversation A:\nBot: I am m1", "reply": "A"},
                   {"match": "Conversation B:\nBot: I am m1", "reply": "B"}], "default": "A"}


def conversation_files(folder, models=(("m1", 3), ("m2", 3), ("m3", 2)), mixed: str = "") -> list[str]:
    """A file per model; ``mixed``: that model's conversations after its first name a second model too."""
    paths = []
    for model, count in models:
        path = folder / f"{model}.jsonl"
        write_jsonl([{"type": "conversation", "id": f"{model}_{i}", "models": [model] + ["m9"] * (model == mixed and i > 0),
                      "turns": [{"speaker": model, "text": f"I am {model}, number {i}"},
                                {"speaker": model, "text": "and I like tea"}]} for i in range(count)], path)
        paths.append(str(path))
    return paths


def overrides(paths: list[str], seed: int | None = 7, *extra: str) -> list[str]:
    """The words after `dialeval launch acute`."""
    return [f"acute.conversations=[{','.join(paths)}]", "acute.matchups_per_pair=4", "acute.subtasks_per_unit=5",
            "acute.question=interestingness", *([f"acute.seed={seed}"] if seed is not None else []), *extra]


def judge_design(tmp_path, words: list[str]) -> int:
    (tmp_path / "judge.json").write_text(json.dumps(JUDGE))
    return main(["judge", "--protocol", "acute", "--judge", f"script:{tmp_path / 'judge.json'}",
                 "--out", str(tmp_path / "judge.jsonl"), "--design", *words])


def test_the_judged_design_is_the_launchs_pool_and_its_judge_pools_miss_nothing(tmp_path, capsys):
    paths = conversation_files(tmp_path)
    assert judge_design(tmp_path, overrides(paths)) == 0
    answers = read_jsonl([tmp_path / "judge.jsonl"]).comparisons
    # 3 model pairs x 4 matchups, each answered once, for the question the launch asks
    assert len(answers) == 12 and answers["item_id"].is_unique
    assert set(answers["question"]) == {"If you had to say one of these speakers is interesting and one is boring, "
                                        "who would you say is more interesting?"}  # Smith et al. 2022, 3.1.4

    # the launch's code path: its config, its shared state and the adaptive controller built on them
    spec = get_task("acute")
    cfg = compose(spec, overrides(paths, 7, "adaptive=true", "adaptive_batch_size=1",
                                  f"adaptive_judge={tmp_path / 'judge.jsonl'}"))
    shared = spec.shared_state(cfg)
    launched = [(p["pair_id"], p["left"]["model"], p["right"]["model"], p["left"]["conversation"]["id"],
                 p["right"]["conversation"]["id"]) for unit in shared.static_task_data for p in unit[SERVER_KEY]["pairs"]]
    judged = [tuple(row) for row in answers.sort_values("item_id", key=lambda s: s.str[5:].astype(int))[
        ["item_id", "model_a", "model_b", "conversation_a", "conversation_b"]].itertuples(index=False)]
    assert sorted(launched, key=lambda p: int(p[0][5:])) == judged
    capsys.readouterr()
    pools = attach(spec, cfg, shared, None, tmp_path, resumed=False).judge
    assert pools.missing == 0 and "no answer of the judge" not in capsys.readouterr().out
    assert sorted(pools.f) == ["m1|m2", "m1|m3", "m2|m3"] and all(len(f) == 4 for f in pools.f.values())
    assert pools.f["m1|m2"].tolist() == pools.f["m1|m3"].tolist() == [1.0] * 4  # m1, first by name, always
    assert pools.f["m2|m3"].tolist() == [0.5] * 4


def test_a_judge_pool_needs_the_seed_the_launch_draws_with(tmp_path, capsys):
    """pair_<k> names the k-th pair whatever it holds: unseeded, another draw would put other conversations
    under the judged ids. Refused on both sides; the same seed gives the same pool, another seed another."""
    from parlai_dialeval.crowdsourcing.acute.task import fixed_design

    paths = conversation_files(tmp_path)
    assert judge_design(tmp_path, overrides(paths, None)) != 0
    assert "acute.seed is not set" in capsys.readouterr().err
    spec = get_task("acute")
    unseeded = compose(spec, overrides(paths, None, "adaptive=true", f"adaptive_judge={tmp_path / 'x.jsonl'}"))
    with pytest.raises(DialevalError, match="acute.seed is not set"):
        spec.shared_state(unseeded)
    spec.shared_state(compose(spec, overrides(paths, None, "adaptive=true")))  # people only: no seed needed
    with pytest.raises(DialevalError, match="self_chat_models"):
        fixed_design(compose(spec, overrides(paths, 7, "acute.self_chat_models={m4: {opt: {}}}")).acute, judged=True)

    def pool(seed):
        return [p for unit in fixed_design(compose(spec, overrides(paths, seed)).acute)[0] for p in unit[SERVER_KEY]["pairs"]]
    assert pool(7) == pool(7) != pool(8)


@pytest.mark.parametrize("case, message", [
    ("missing", "no such file or folder"),
    ("one model", "fewer than two models"),
    ("two models in a conversation", "conversation m2_1: ACUTE compares single-model conversations"),
])
def test_bad_conversations_are_refused_naming_the_file_and_what_was_expected(tmp_path, capsys, case, message):
    if case == "missing":
        paths = conversation_files(tmp_path)[:1] + [str(tmp_path / "absent.jsonl")]
    elif case == "one model":
        paths = conversation_files(tmp_path, models=(("m1", 3),))
    else:
        paths = conversation_files(tmp_path, models=(("m1", 2), ("m2", 2)), mixed="m2")
    assert judge_design(tmp_path, overrides(paths)) != 0
    err = capsys.readouterr().err
    assert message in err
    assert (str(tmp_path / "absent.jsonl") if case == "missing" else paths[-1]) in err
    if case != "missing":
        assert "expected conversations of one model each, of at least two models" in err
    assert not (tmp_path / "judge.jsonl").exists()


def test_a_launch_with_conversations_of_one_model_is_refused_before_it_starts(tmp_path):
    """The launch builds its pool with the same function: with nothing to compare it refuses, naming the file,
    instead of starting a study of no units."""
    from parlai_dialeval.errors import DataError

    paths = conversation_files(tmp_path, models=(("m1", 3),))
    spec = get_task("acute")
    with pytest.raises(DataError, match="fewer than two models") as refused:
        spec.shared_state(compose(spec, overrides(paths)))
    assert paths[0] in str(refused.value)


@pytest.mark.slow
def test_an_acute_adaptive_launch_with_the_judged_design_then_certify_on_its_export(tmp_path, monkeypatch):
    """End to end: judge the design, launch adaptive ACUTE with that judge file (MockArchitect, scripted
    workers), export, and `dialeval certify --judge` on the export bets as the live PPI e-processes did."""
    import pandas as pd

    from parlai_dialeval.crowdsourcing.platform.export import collect_from_db

    from .test_adaptive_launch import Workers, finished, hit_waiting, quick_batches, read_state
    from .test_resume import LaunchedRun

    quick_batches.__wrapped__(monkeypatch)
    levels = {"bot_best": 2, "bot_good": 1, "bot_fair": 0}
    convs = tmp_path / "convs.jsonl"
    # test_adaptive_launch's workers read the level from the second turn and pick the higher one
    write_jsonl([{"type": "conversation", "id": f"{model}_{i}", "models": [model], "task": "self_chat",
                  "turns": [{"speaker": model, "text": f"Hello {i}"}, {"speaker": model, "text": f"I am level {level}."}]}
                 for model, level in levels.items() for i in range(4)], convs)
    design = [f"acute.conversations=[{convs}]", "acute.seed=3", "acute.matchups_per_pair=6",
              "acute.subtasks_per_unit=4"]
    # the judge agrees with people where bot_fair speaks, and where bot_best's conversation 0 or 1 does;
    # elsewhere (bot_best's 2 and 3 against bot_good) it says "A" in both orders: a flip, counted a tie
    judge = {"rules": [{"match": f"Conversation {side}:\nBot: Hello {i}\nBot: I am level 0", "reply": other}
                       for side, other in ("AB", "BA") for i in range(4)]
             + [{"match": f"Conversation {side}:\nBot: Hello {i}\nBot: I am level 2", "reply": side}
                for side in "AB" for i in range(2)], "default": "A"}
    (tmp_path / "judge.json").write_text(json.dumps(judge))
    out = tmp_path / "judge.jsonl"
    assert main(["judge", "--protocol", "acute", "--judge", f"script:{tmp_path / 'judge.json'}", "--out", str(out),
                 "--design", *design]) == 0
    run = LaunchedRun("acute", tmp_path / "mephisto", free_port(), design + [
        "mephisto.task.task_name=acute_judged", "adaptive=true", "adaptive_batch_size=1", "adaptive_budget=3",
        "adaptive_seed=1", f"adaptive_judge={out}", "adaptive_judge_floor=0.5"])
    try:
        workers = Workers(run)
        for _ in range(8):  # a repeated draw of an item in a batch adds a HIT: the budget may be passed
            run.wait(lambda: finished(run) or hit_waiting(run), timeout=30, what="a HIT or the end")
            if finished(run):
                break
            workers.do_hit()
        run.wait(lambda: finished(run), timeout=30, what="the run to end at the budget")
        exported = collect_from_db(run.db, "acute_judged")[0].records
    finally:
        run.shutdown()
    state = read_state(tmp_path / "mephisto" / "adaptive" / "acute_judged.json")
    drawn = [entry for batch in state["batches"] for entry in batch["items"]]
    assert state["status"] == "budget_spent" and drawn and state.get("malformed", 0) == 0
    assert state["ppi_draws"] == len(drawn) == sum(p["n"] for p in state["ppi"].values())
    # by hand, pools of 6 items at floor 0.5 (docs/ppi.md): half the mass uniform, half on the k flipped items;
    # uniform where the judge is sure of every item
    judged = read_jsonl([out]).comparisons
    answers = judged.set_index("item_id")["choice"]
    ties = (judged["choice"] == "tie").groupby(["|".join(sorted(p)) for p in zip(judged["model_a"], judged["model_b"])]).sum()
    assert ties["bot_best|bot_fair"] == ties["bot_fair|bot_good"] == 0 and 0 < ties["bot_best|bot_good"] < 6
    assert len({round(p, 9) for key, _, p in drawn if key == "bot_best|bot_good"}) == 2  # sure and flipped drawn
    for key, item, probability in drawn:
        flipped = answers[item] == "tie"
        assert probability == pytest.approx(1 / 6 if not ties[key] else 0.5 / 6 + (0.5 / ties[key] if flipped else 0.0))
    assert state["ppi"]["bot_best|bot_fair"]["pool_mean"] == 1.0 and state["ppi"]["bot_fair|bot_good"]["pool_mean"] == 0.0
    # bot_best, first by name, wins the sure items and gets 1/2 on the flips
    assert state["ppi"]["bot_best|bot_good"]["pool_mean"] == pytest.approx(1 - 0.5 * ties["bot_best|bot_good"] / 6)
    write_jsonl(exported, tmp_path / "export.jsonl")
    assert main(["certify", "--data", str(tmp_path / "export.jsonl"), "--judge", str(out),
                 "--out", str(tmp_path / "certify")]) == 0
    assert_certify_bets_as_the_launch(pd.read_csv(tmp_path / "certify" / "ppi_certified.csv"), state)


def test_an_answer_about_other_conversations_under_the_same_pair_id_is_not_drawn(tmp_path, capsys):
    """Pair ids name the k-th pair, whatever it holds: a judge file made before the conversations changed
    answers other conversations under the launch's ids. Such an item is not drawn, and the launch says so."""
    paths = conversation_files(tmp_path)
    assert judge_design(tmp_path, overrides(paths)) == 0
    records = [json.loads(line) for line in (tmp_path / "judge.jsonl").read_text().splitlines()]
    first = next(r["item_id"] for r in records if r["type"] == "comparison")
    for record in records:
        if record["type"] == "comparison" and record["item_id"] == first:  # both orders of one item
            record["conversation_b"] = "a conversation the launch does not have"
    write_jsonl(records, tmp_path / "stale.jsonl")
    spec = get_task("acute")
    cfg = compose(spec, overrides(paths, 7, "adaptive=true", "adaptive_batch_size=1",
                                  f"adaptive_judge={tmp_path / 'stale.jsonl'}"))
    capsys.readouterr()
    pools = attach(spec, cfg, spec.shared_state(cfg), None, tmp_path, resumed=False).judge
    assert (pools.mismatched, pools.missing) == (1, 0)
    assert sum(len(f) for f in pools.f.values()) == 11  # the 12 judged pairs less the stale one
    assert "1 design item(s) compare other things than the judge's answer" in capsys.readouterr().out
