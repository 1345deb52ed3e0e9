"""The arena (crowdsourcing/arena): its rules without Mephisto (the session, the anonymity rule, repeated prompts,
the sampler), and its world in-process with test_hostile_participants' stand-in for Mephisto's agent: what the
page is sent, what is stored and exported, and a bot whose reply says which company made it (its battles' votes
left out of the ranking and counted in the report of `dialeval analyze_pairwise`)."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from parlai_dialeval.crowdsourcing.arena import export as arena_export
from parlai_dialeval.crowdsourcing.arena.anonymity import LeakRules
from parlai_dialeval.crowdsourcing.arena.prompts import DedupPolicy, PromptIndex, normalise
from parlai_dialeval.crowdsourcing.arena.protocol import REPLIES_FIRST, ArenaError, ArenaSession, battle_outcome
from parlai_dialeval.crowdsourcing.arena.sampler import ArenaSampler
from parlai_dialeval.crowdsourcing.arena.task import ArenaShared
from parlai_dialeval.crowdsourcing.arena.worlds import RECORD_FILE, ArenaWorld
from parlai_dialeval.crowdsourcing.platform.bots import BotPool
from parlai_dialeval.crowdsourcing.platform.checks import GOLD_MODEL, GOLD_REPLIES
from parlai_dialeval.crowdsourcing.platform.participant_input import InputLimits
from parlai_dialeval.data import from_records, write_jsonl

from .protocol_harness import assert_blind, dialeval
from .test_hostile_participants import Clock, FakeAgent, run_acts

ECHO = {"opt": {"model": "repeat_query"}}


def message(text):
    return {"text": text, "task_data": {"action": "message"}}


def act(action, **fields):
    return {"text": "", "task_data": {"action": action, **fields}}


def arena_world(tmp_path, models=None, min_battles=1, max_battles=4, max_turns=2, dedup=None, seed=0, checks=None,
                **sampler):
    models = models or {"x": ECHO, "y": ECHO, "z": ECHO}
    arena = ArenaShared(ArenaSampler(list(models), seed=seed, **sampler), dedup or DedupPolicy(), LeakRules(), {})
    opt = {"pool": BotPool(models, seed=0), "arena": arena, "limits": InputLimits(), "turn_timeout": 5,
           "min_battles": min_battles, "max_battles": max_battles, "max_turns": max_turns, "arena_policy": {"p": 1},
           "checks": checks}
    agent = FakeAgent(tmp_path)
    return ArenaWorld(opt, agent), agent, arena


def states(agent) -> list[dict]:
    return [m["task_data"] for m in agent.seen if "phase" in (m.get("task_data") or {})]


def exported(tmp_path, worker="w1", submission="submitted") -> list[dict]:
    record = json.loads((tmp_path / RECORD_FILE).read_text())
    return arena_export.unit_records(record, study="arena_study", task_name="arena", worker_id=worker,
                                     assignment_id="as1", submission=submission)


# ------------------------------------------------------------------------------------------ rules alone
def test_a_name_counts_where_a_word_starts_in_any_case_and_not_inside_another_word():
    rules = LeakRules()
    assert rules.names("As GPT-4o, built by OpenAI, I...") == ["gpt-4o", "openai"]
    assert rules.names("GPT-4 Turbo") == ["gpt-4"]
    assert rules.names("I am Tülu, or TULU") == ["tülu", "tulu"]
    assert rules.names("The city was bombarded; napalm; a googly eye") == []
    assert rules.names("Llama-3 here") == ["llama"]
    assert LeakRules(extra_words=["Acme Bot"]).names("hi from acme bot!") == ["acme bot"]
    assert LeakRules(words=["zorp"]).names("I am claude") == []


def test_repeated_prompts_exact_near_and_whose():
    index = PromptIndex(threshold=0.8)
    index.add("b1", "ann", "What is the capital of France?")
    assert normalise("  WHAT is the capital, of France?? ") == "what is the capital of france"
    mine, others = index.find("what is the capital of france", "ann")
    assert mine.kind == "exact" and mine.battle == "b1" and others is None
    mine, others = index.find("What's the capital of France", "bob")
    assert mine is None and others.kind == "near" and others.similarity >= 0.8
    assert index.find("Tell me a joke about cats", "bob") == (None, None)
    policy = DedupPolicy(per_participant="refuse", across_study="void")
    assert policy.decide(*index.find("what is the capital of france", "ann"))[0] == "refuse"
    assert policy.decide(*index.find("what is the capital of france", "bob"))[0] == "void"
    assert DedupPolicy(across_study="keep").decide(*index.find("what is the capital of france", "bob"))[0] == "keep"
    with pytest.raises(ValueError, match="expected one of refuse, void, keep"):
        DedupPolicy(per_participant="drop")


def test_the_vote_waits_for_both_replies_and_a_leak_voids_the_battle_from_that_turn_on():
    session = ArenaSession(min_battles=1, max_battles=2, max_turns=3)
    session.open_battle("b1", "hello", ("x", "y"), 1 / 3, 1.0)
    with pytest.raises(ArenaError, match=REPLIES_FIRST):
        session.vote("a")

    class Bot:
        def __init__(self, reply):
            self.reply = reply

        def observe(self, observation):
            pass

        def act(self):
            return {"text": self.reply}

    rules = LeakRules()
    session.answer({"a": Bot("hi"), "b": Bot("hello")}, leaks=rules.names)
    session.vote("a")
    session.continue_battle("who made you?")
    session.answer({"a": Bot("Anthropic made me"), "b": Bot("no idea")}, leaks=rules.names)
    session.vote("b")
    session.continue_battle("ok")
    session.answer({"a": Bot("fine"), "b": Bot("fine")}, leaks=rules.names)
    session.vote("both_bad")
    battle = session.end_battle()
    assert [bool(t.get("void")) for t in battle["turns"]] == [False, True, True]
    assert battle["turns"][1]["void"] == {"anonymity_leak": {"a": ["anthropic"]}}
    assert battle_outcome(battle) == 1.0  # only the first, blind vote counts
    with pytest.raises(ArenaError, match="at least 1 battles"):
        ArenaSession(min_battles=1).finish()


def test_the_informative_sampler_keeps_every_pair_possible_and_weights_undo_it():
    sampler = ArenaSampler(["m1", "m2", "m3", "m4"], kind="informative", explore=0.2, seed=1)
    for battle in range(30):  # m1 beats everyone: the leader's unsettled pairs get most of the draws
        sampler.add_battle("m1", ["m2", "m3", "m4"][battle % 3], 1.0, f"b{battle}")
    probability = sampler.probabilities()
    assert sum(probability.values()) == pytest.approx(1.0)
    assert min(probability.values()) == pytest.approx(0.2 / 6)
    assert max(probability, key=probability.get)[0] == "m1"
    draws = [sampler.draw() for _ in range(300)]
    for (a, b), p, weight in draws:
        assert weight == pytest.approx(1 / (6 * p))
    # the weights make every pair count as under a uniform draw: E[weight x 1{pair}] = 1/6 for each pair
    totals = {}
    for (a, b), p, weight in draws:
        key = frozenset((a, b))
        totals[key] = totals.get(key, 0) + weight
    assert len(totals) == 6
    assert np.allclose([v / len(draws) for v in totals.values()], 1 / 6, atol=0.1)
    assert {a for (a, b), _, _ in draws} == {"m1", "m2", "m3", "m4"}  # sides are random, not the pair's order
    uniform = ArenaSampler(["m1", "m2", "m3"])
    assert list(uniform.probabilities().values()) == pytest.approx([1 / 3] * 3) and uniform.draw()[2] == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------ the world
def test_a_session_is_blind_until_each_battle_ends_and_exports_canonical_votes(tmp_path):
    names = ["alphabot", "betabot", "gammabot"]
    world, agent, arena = arena_world(tmp_path, models=dict.fromkeys(names, ECHO), min_battles=2, max_battles=3)
    acts = [message("Tell me about owls"), act("vote", choice="a"), message("and their eyes?"),
            act("vote", choice="both_bad"), act("end"), act("finish"),
            message("How do bees make honey"), act("vote", choice="tie"), act("end"), act("finish")]
    run_acts(world, agent, acts, Clock(), spacing=5)
    seen = states(agent)
    battle_one_ends = next(i for i, s in enumerate(seen) if s["phase"] == "revealed")
    assert_blind(agent.seen[:next(i for i, m in enumerate(agent.seen) if (m.get("task_data") or {}).get("revealed"))],
                 names)
    assert set(seen[battle_one_ends]["revealed"].values()) <= set(names)
    assert any(s.get("warning") == "Please complete at least 2 battles." for s in seen)  # finish refused after one
    assert seen[-1]["phase"] == "done" and world.episode_done()
    records = exported(tmp_path)
    data = from_records([arena_export.study_record("arena_study", {})] + records, source="test")
    votes = data.comparisons
    assert list(votes["choice"]) == ["a", "tie", "tie"] and list(votes["tie_kind"].fillna("")) == ["", "both_bad", "tie"]
    assert list(votes["turn_index"]) == [1, 3, 1] and votes["item_id"].nunique() == 2
    assert list(votes["context"]) == ["Tell me about owls", "and their eyes?", "How do bees make honey"]
    assert (votes["weight"] == 1.0).all() and np.allclose(votes["sampling_probability"], 1 / 3)
    conversations = data.conversations
    assert len(conversations) == 4 and set(conversations["status"]) == {"complete"}
    first_a = conversations.iloc[0]["turns"]
    assert [t["speaker"] for t in first_a][::2] == ["human", "human"]  # each side keeps its own conversation
    assert arena.sampler.battles_counted == 2


def test_the_page_asks_for_a_new_prompt_instead_of_a_repeated_one_and_the_study_voids_anothers(tmp_path):
    world, agent, arena = arena_world(tmp_path, max_battles=3)
    arena.prompts.add("earlier", "someone else", "Write a haiku about rain")
    run_acts(world, agent, [message("What is 2+2?"), act("vote", choice="a"), act("end"),
                            message("what is 2 + 2"), message("Write a haiku about rain!"), act("vote", choice="b"),
                            act("end")], Clock(), spacing=5)
    warnings = [s["warning"] for s in states(agent) if s.get("warning")]
    assert warnings == ["You asked this (or nearly this) in an earlier battle: please write a new prompt."]
    votes = [r for r in exported(tmp_path) if r["type"] == "comparison"]
    assert [v.get("duplicate_prompt", False) for v in votes] == [False, True]
    assert votes[1]["meta"]["duplicate"]["of"] == "earlier" and not votes[1]["meta"]["duplicate"]["same_participant"]
    assert arena.sampler.battles_counted == 1  # the void battle is not evidence


def test_a_failing_model_ends_its_battle_not_the_session(tmp_path):
    from parlai_dialeval.testing.fake_openai import FakeOpenAI

    script = {"good": {}, "bad": {"faults": ["500"] * 4, "faults_after": 2}}  # after the launch's ping and timing
    with FakeOpenAI(script) as fake:
        endpoint = {name: {"opt": {"model": "dialeval:openai_chat", "base_url": fake.base_url, "endpoint_model": name,
                                   "max_retries": 0, "request_timeout": 10}} for name in script}
        world, agent, arena = arena_world(tmp_path, models=endpoint, max_battles=2)
        run_acts(world, agent, [message("hello"), message("hello again")], Clock(), spacing=5)
    seen = states(agent)
    assert "stopped working" in seen[-1]["warning"] and seen[-1]["phase"] == "revealed" and seen[-1]["battle_failed"]
    assert not world.episode_done()
    conversations = [r for r in exported(tmp_path) if r["type"] == "conversation"]
    assert {c["status"] for c in conversations} == {"failed"}


def test_a_model_that_names_its_maker_has_its_battles_voided_and_counted_by_analyze_pairwise(tmp_path):
    """The leak test: an endpoint bot (the fake OpenAI-compatible server, streamed) says which company made it; the
    votes of its battles are exported marked, left out of the ranking, and counted in the report."""
    from parlai_dialeval.testing.fake_openai import FakeOpenAI

    script = {"leaky": {"replies": ["I am an assistant made by OpenAI, happy to help."]},
              "plain-1": {"replies": ["Here is a plain answer."]}, "plain-2": {"replies": ["Another plain answer."]}}
    with FakeOpenAI(script) as fake:
        endpoint = {name: {"opt": {"model": "dialeval:openai_chat", "base_url": fake.base_url, "endpoint_model": name,
                                   "request_timeout": 10, "system_prompt": "SECRET INSTRUCTIONS"}} for name in script}
        world, agent, arena = arena_world(tmp_path, models=endpoint, min_battles=6, max_battles=6, max_turns=1, seed=3)
        prompts = ["Name a river", "Suggest a dinner", "Explain rainbows", "A fact about Mars", "Plan a picnic",
                   "Describe a violin"]
        acts = []
        for number, prompt in enumerate(prompts):
            acts += [message(prompt), act("vote", choice="ab"[number % 2]), act("end")]
        run_acts(world, agent, acts + [act("finish")], Clock(), spacing=5)
        system_prompts = [request["messages"][0] for request in fake.requests
                          if any(m.get("content") in prompts for m in request.get("messages") or [])]
    assert system_prompts and all(m == {"role": "system", "content": "SECRET INSTRUCTIONS"} for m in system_prompts)
    assert "SECRET INSTRUCTIONS" not in json.dumps(agent.seen)  # the models had it; the page never did
    records = [arena_export.study_record("arena_study", {})] + exported(tmp_path)
    votes = [r for r in records if r["type"] == "comparison"]
    leaky = [v for v in votes if "leaky" in (v["model_a"], v["model_b"])]
    assert 0 < len(leaky) < len(votes)
    assert all(v.get("anonymity_leak") for v in leaky) and not any(v.get("anonymity_leak") for v in votes if v not in leaky)
    assert all("openai" in json.dumps(v["meta"]["leak"]) for v in leaky)
    path = tmp_path / "arena.jsonl"
    write_jsonl(records, path)
    out = tmp_path / "report"
    done = dialeval("analyze_pairwise", "--data", str(path), "--out", str(out), "--bootstrap-rounds", "50")
    assert f"left out {len(leaky)} votes of battles where a reply named its model or maker" in done.stdout
    summary = json.loads((out / "agreement.json").read_text())
    assert summary["voided"] == {"votes of battles where a reply named its model or maker (anonymity_leak)": len(leaky)}
    rankings = (out / "rankings.csv").read_text()
    assert "leaky" not in rankings and "plain-1" in rankings
    report = (out / "report.html").read_text()
    assert f"Left out {len(leaky)} votes of battles where a reply named its model or maker" in report


def arena_script():
    return [message("Tell me about owls"), act("vote", choice="a"), message("and their eyes?"),
            act("vote", choice="both_bad"), act("end"), message("How do bees make honey"), act("vote", choice="tie"),
            act("end"), act("finish")]


def test_hostile_acts_between_honest_ones_change_nothing_exported(tmp_path, monkeypatch):
    """test_hostile_participants' check on the arena: every hostile act refused with a line on the page, and the
    session exports exactly what the same session without them exports."""
    from . import test_hostile_participants as hostile

    monkeypatch.setitem(hostile.WORLDS, "arena", (lambda path: arena_world(path, min_battles=2)[:2], arena_script))
    hostile.test_hostile_acts_between_honest_ones_change_nothing_exported("arena", tmp_path)


def test_the_prompt_is_stored_and_confirmed_before_the_models_are_asked(tmp_path, monkeypatch):
    from parlai_dialeval.crowdsourcing.platform import session_world

    world, agent, _ = arena_world(tmp_path)
    confirmed = []

    def confirm(mephisto_agent):
        stored = json.loads((tmp_path / RECORD_FILE).read_text())
        confirmed.append({"turn": stored["battles"][-1]["turns"][-1], "seen": len(agent.seen)})

    monkeypatch.setattr(session_world, "acknowledge_taken", confirm)
    run_acts(world, agent, [message("a prompt the participant typed")], Clock(), spacing=5)
    assert confirmed and confirmed[0]["turn"]["prompt"] == "a prompt the participant typed"
    assert confirmed[0]["turn"]["replies"] is None  # stored before any reply
    shown = next(i for i, m in enumerate(agent.seen) if (m.get("task_data") or {}).get("phase") == "answering")
    replies = next(i for i, m in enumerate(agent.seen) if (m.get("task_data") or {}).get("phase") == "vote")
    assert confirmed[0]["seen"] <= shown < replies  # the page shows the prompt as sent before the replies come
    assert agent.seen[shown]["task_data"]["turns"][-1] == {"prompt": "a prompt the participant typed", "vote": None,
                                                          "replies": None}


def test_after_a_relaunch_the_session_goes_on_where_it_stopped(tmp_path):
    world, agent, arena = arena_world(tmp_path / "before")
    run_acts(world, agent, [message("first question"), act("vote", choice="b"), message("second question")],
             Clock(), spacing=5)
    waiting_vote = json.loads((tmp_path / "before" / RECORD_FILE).read_text())
    assert waiting_vote["phase"] == "vote"
    again, agent_again, _ = arena_world(tmp_path / "after")
    again._carry_on(waiting_vote)  # what SessionWorld does with the record platform/resume.py hands it
    shown = states(agent_again)[-1]
    assert shown["phase"] == "vote" and [t["prompt"] for t in shown["turns"]] == ["first question", "second question"]
    assert shown["turns"][-1]["replies"]["a"]["text"] == "second question"  # the same replies, not asked again
    run_acts(again, agent_again, [act("vote", choice="a"), act("end"), act("finish")], Clock(), spacing=5)
    votes = [r for r in exported(tmp_path / "after") if r["type"] == "comparison"]
    assert [v["choice"] for v in votes] == ["b", "a"] and again.episode_done()
    # stopped while the models were answering: fresh bots answer the stored prompt
    waiting_vote["phase"], waiting_vote["battles"][-1]["turns"][-1]["replies"] = "answering", None
    third, agent_third, _ = arena_world(tmp_path / "third")
    third._carry_on(waiting_vote)
    assert states(agent_third)[-1]["phase"] == "vote"


# ------------------------------------------------------------------------------------------ integrity and checks
def evidence_of(records: list[dict], tmp_path) -> dict:
    """The evidence table's rows of an export, as the analysis commands build it (scripts/evidence_option.py)."""
    from parlai_dialeval.scripts.command_line import load_data
    from parlai_dialeval.scripts.evidence_option import build

    path = tmp_path / "evidence_input.jsonl"
    write_jsonl(records, path)
    found = build(load_data({"data": [str(path)]}, log=None), {}, log=None)
    return {row["worker_id"]: row for row in found.table.to_dict("records")}


def test_each_prompt_and_vote_keeps_the_pages_record_checked_on_the_servers_clock(tmp_path, monkeypatch):
    """The page's records (answerRecord.js) go through platform/answer_record.py into ``provenance``: a prompt's once
    (side b's copy points to side a's), each vote's on its comparison. A message typed while the models answered and
    sent after the vote is held to the time since the previous prompt, not since the vote; a vote screen claiming
    more time than the server saw pass is doubted. The evidence table counts each prompt once."""
    server = {"now": 1000.0}
    monkeypatch.setattr(time, "time", lambda: server["now"])
    world, agent, _ = arena_world(tmp_path)
    pasted, typed = "Please explain how the tides work, step by step.", "and what does the moon do in all that?"
    steps = [(30, {"text": pasted, "task_data": {"action": "message", "provenance": {
                 "typed": 0, "pasted": len(pasted), "pastes": [len(pasted)], "compose_seconds": 1.5, "away": 1,
                 "away_seconds": 4.0, "bogus": 1}}}),
             (10, act("vote", choice="a", provenance={"seconds": 6.0, "reread": False, "changes": 0, "away": 0})),
             (2, {"text": typed, "task_data": {"action": "message", "provenance": {  # typed during the replies
                 "typed": len(typed), "pasted": 0, "keys": len(typed), "key_interval_ms": 180, "compose_seconds": 9.0}}}),
             (1, act("vote", choice="b", provenance={"seconds": 400.0})), (3, act("end")), (1, act("finish"))]
    for seconds, step in steps:
        server["now"] += seconds
        agent.send(step)
        world.parley()
    assert world.episode_done()
    records = exported(tmp_path)
    votes = [r for r in records if r["type"] == "comparison"]
    assert votes[0]["provenance"] == {"seconds": 6.0, "reread": False, "changes": 0, "away": 0}
    assert votes[1]["provenance"]["doubts"] == ["seconds claims 400 s but 1 s passed on the server"]
    side_a, side_b = [[t for t in r["turns"] if t["speaker"] == "human"] for r in records if r["type"] == "conversation"]
    assert side_a[0]["provenance"] == {"typed": 0, "pasted": len(pasted), "pastes": [len(pasted)],
                                       "compose_seconds": 1.5, "away": 1, "away_seconds": 4.0}
    assert "doubts" not in side_a[1]["provenance"] and side_a[1]["provenance"]["compose_seconds"] == 9.0
    assert [t.get("provenance") for t in side_b] == [None, None]
    assert {t["meta"]["copy_of"] for t in side_b} == {f"arena_{votes[0]['item_id'].split('_', 1)[1]}/a"}
    row = evidence_of([arena_export.study_record("arena_study", {})] + records, tmp_path)["w1"]
    assert row["answers"] == 4 and row["pasted_texts"] == 1 and row["doubted"] == 1  # two prompts, two votes
    assert "pasted 1 of 2 texts" in row["reasons"]


def test_attention_and_gold_battles_are_told_graded_at_export_and_never_counted(tmp_path):
    """checks.attention=1, checks.gold=1 among three battles: the attention battle's vote is told which answer to
    give, the gold battle pits a model against the broken bot (every vote graded; its name shown as a test reply);
    neither reaches the sampler, and nothing the page gets before a battle ends tells a gold battle apart."""
    world, agent, arena = arena_world(tmp_path, min_battles=3, max_battles=3, checks={"attention": 1, "gold": 1})
    for prompt in ("Tell me about owls", "How do bees make honey", "Why is the sea salty"):
        run_acts(world, agent, [message(prompt)], Clock(), spacing=5)
        shown = states(agent)[-1]
        replies = shown["turns"][-1]["replies"]
        broken = [side for side in "ab" if replies[side]["text"] in GOLD_REPLIES]
        if shown["attention"]:  # an inattentive voter: not what the instruction says
            run_acts(world, agent, [act("vote", choice="tie" if shown["attention"]["choose"] != "tie" else "a")],
                     Clock(), spacing=5)
        elif broken:  # the model's side, twice
            good = "b" if broken == ["a"] else "a"
            run_acts(world, agent, [act("vote", choice=good), message("and then?"), act("vote", choice=good)],
                     Clock(), spacing=5)
        else:
            run_acts(world, agent, [act("vote", choice="a")], Clock(), spacing=5)
        run_acts(world, agent, [act("end")], Clock(), spacing=5)
        if broken:
            assert states(agent)[-1]["revealed"][broken[0]] is None  # the page says "a test reply"
    run_acts(world, agent, [act("finish")], Clock(), spacing=5)
    before_reveal = [m for m in agent.seen if not (m.get("task_data") or {}).get("revealed")]
    assert "gold" not in json.dumps(before_reveal) and GOLD_MODEL not in json.dumps(agent.seen)
    assert sum(bool(s.get("attention")) for s in states(agent) if s["phase"] == "vote") == 1
    record = json.loads((tmp_path / RECORD_FILE).read_text())
    records = exported(tmp_path)
    graded = [(r["check"]["kind"], r["check"]["passed"]) for r in records if r.get("check")]
    assert sorted(graded) == [("attention", False), ("gold", True), ("gold", True)]
    gold = [r for r in records if (r.get("check") or {}).get("kind") == "gold"]
    assert all(GOLD_MODEL in (r["model_a"], r["model_b"]) for r in gold)
    assert arena.sampler.battles_counted == 1  # the one battle that is no check
    study = arena_export.study_record("arena_study", {}, record["checks"])
    assert study["meta"]["checks"]["attention"] == 1 and study["meta"]["checks"]["gold"] == 1
    row = evidence_of([study] + records, tmp_path)["w1"]
    assert (row["attention_items"], row["attention_right"], row["gold_items"], row["gold_right"]) == (1, 0, 2, 2)


def test_the_launch_gives_the_page_the_chat_options_and_refuses_checks_without_room(tmp_path):
    """The page's slow-reply note comes at the patience threshold of the launch's speed check and the dashboard
    (chat_page_options), and check battles that cannot fit among arena.min_battles are refused in one line."""
    from parlai_dialeval.crowdsourcing.platform.config import compose
    from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto
    from parlai_dialeval.crowdsourcing.platform.registry import get_task
    from parlai_dialeval.crowdsourcing.platform.speed import PATIENCE_SECONDS
    from parlai_dialeval.errors import DialevalError

    prepare_mephisto(tmp_path)
    spec = get_task("arena")
    echo = ["~arena.models.random", "~arena.models.degraded", "~arena.models.retrieval",
            "+arena.models.x.opt.model=repeat_query", "+arena.models.y.opt.model=repeat_query"]
    opts = spec.shared_state(compose(spec, echo + ["arena.language=he", "arena.checks.attention=1"])).frontend_task_opts
    assert opts == {"language": "he", "slow_reply_seconds": PATIENCE_SECONDS, "attention": True}
    with pytest.raises(DialevalError, match=r"arena.checks.attention=3: .* room for at most 2 .*arena.min_battles=3"):
        spec.shared_state(compose(spec, echo + ["arena.checks.attention=3"]))
