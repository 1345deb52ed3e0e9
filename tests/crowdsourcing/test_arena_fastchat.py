"""Arena votes as the arena exports them, analysed by FastChat's own rating code and by `dialeval analyze_pairwise`
with no converter in between: the same order and the same strengths once put on one scale, plain and with style
control, unweighted (uniform draws) and weighted (the informative sampler's inverse propensities, given to FastChat's
own weighted fit); and the anonymity rule checked against the keywords of FastChat's clean_battle_data.py on the
same replies. FastChat's files are read from ../shared/anchors/fastchat at test time (never copied here); without
them the test skips, and fails under CI.

The votes come from simulated participants going through the arena's world in-process (test_arena's stand-in for
Mephisto's agent) against endpoint bots on the fake OpenAI-compatible server; each participant votes by a
Bradley-Terry preference on the models plus a taste for longer replies (so style control has something to
remove). The test's style counts (words, markdown headers, list items, bold) are its own regular expressions, not
the project's."""
from __future__ import annotations

import ast
import importlib.util
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.crowdsourcing.arena import export as arena_export
from parlai_dialeval.crowdsourcing.arena.anonymity import LeakRules
from parlai_dialeval.crowdsourcing.arena.prompts import DedupPolicy
from parlai_dialeval.crowdsourcing.arena.sampler import ArenaSampler
from parlai_dialeval.crowdsourcing.arena.task import ArenaShared
from parlai_dialeval.crowdsourcing.arena.worlds import RECORD_FILE, ArenaWorld
from parlai_dialeval.crowdsourcing.platform.bots import BotPool
from parlai_dialeval.crowdsourcing.platform.participant_input import InputLimits
from parlai_dialeval.data import write_jsonl
from parlai_dialeval.shared_data import shared_data_dir
from parlai_dialeval.testing.fake_openai import FakeOpenAI

from .protocol_harness import dialeval
from .test_hostile_participants import FakeAgent

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

STRENGTH = {"m-strong": 1.0, "m-good": 0.4, "m-fair": 0.0, "m-weak": -0.6}  # natural log-odds
LENGTH_TASTE = 1.2  # per unit of (a - b) / (a + b + 1) in words
REPLIES = {
    "m-strong": ["**Yes.** Here is why:\n- one\n- two", "Short and right.", "# Answer\nA longer, careful answer that "
                 "covers the question from several sides.", "It depends; mostly yes."],
    "m-good": ["A plain answer of middling length, no formatting.", "No.", "1. First\n2. Second\n3. Third",
               "**Maybe**, for two reasons."],
    "m-fair": ["Hmm.", "An answer that rambles on for quite a while without saying much of anything at all, really.",
               "- a point", "Perhaps so."],
    "m-weak": ["I don't know.", "**Bold** claim.", "## Heading\nthen a few words", "Sure, whatever you like best."],
}
WORD = re.compile(r"\S+")
HEADER = re.compile(r"^#{1,6} ", re.M)
LIST_ITEM = re.compile(r"^\s*(?:\d+\.|[-*+]) ", re.M)
BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def anchor(name: str) -> Path:
    from needs import needs

    path = shared_data_dir().parent / "anchors" / "fastchat" / name
    needs(None if path.is_file() else f"FastChat's {name} not found at {path} (../shared/anchors/fastchat; set "
                                      "DIALEVAL_SHARED_DATA to the shared data folder beside it)")
    return path


@pytest.fixture(scope="module")
def fastchat():
    spec = importlib.util.spec_from_file_location("fastchat_rating_systems", anchor("rating_systems.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def identity_words() -> list[str]:
    """clean_battle_data.py's IDENTITY_WORDS as it uses them (lower-cased), read from its source: the module
    imports the rest of FastChat, so it is parsed, not imported."""
    tree = ast.parse(anchor("clean_battle_data.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "IDENTITY_WORDS" for t in node.targets):
            return [word.lower() for word in ast.literal_eval(node.value)]
    raise AssertionError("IDENTITY_WORDS not found in clean_battle_data.py")


def fastchat_leaks(text: str, words: list[str]) -> bool:
    """clean_battle_data.process_data's test: any keyword anywhere in the lower-cased messages."""
    return any(word in text.lower() for word in words)


def share(a: float, b: float) -> float:
    return (a - b) / (a + b + 1)


def participants(tmp_path: Path, base_url: str, kind: str, people: int, battles: int, seed: int) -> list[dict]:
    """Simulated participants through the arena's world; returns the exported records (study record first)."""
    models = {name: {"opt": {"model": "dialeval:openai_chat", "base_url": base_url, "endpoint_model": name,
                             "request_timeout": 30}} for name in STRENGTH}
    pool = BotPool(models, seed=0)
    arena = ArenaShared(ArenaSampler(list(models), kind=kind, explore=0.3, seed=seed),
                        DedupPolicy("keep", "keep"), LeakRules(), {})
    rng = np.random.default_rng(seed)
    opt = {"pool": pool, "arena": arena, "limits": InputLimits(rate_per_minute=100000, rate_burst=100000),
           "turn_timeout": 5, "min_battles": battles, "max_battles": battles, "max_turns": 1, "arena_policy": {}}
    records = []
    for person in range(people):
        folder = tmp_path / f"p{person}"
        folder.mkdir()
        agent = FakeAgent(folder)
        agent.mephisto_agent.db_id = f"agent{person}"
        agent.mephisto_agent.get_worker = lambda person=person: SimpleNamespace(worker_name=f"worker{person}")
        world = ArenaWorld(opt, agent)
        for number in range(battles):
            agent.send({"text": f"question {number} of person {person}", "task_data": {"action": "message"}})
            world.parley()
            battle = world.session.battle
            replies = battle["turns"][-1]["replies"]
            a, b = battle["models"]["a"], battle["models"]["b"]
            words = [len(WORD.findall(replies[side]["text"])) for side in "ab"]
            p_a = 1 / (1 + math.exp(-(STRENGTH[a] - STRENGTH[b] + LENGTH_TASTE * share(*words))))
            draw = rng.random()
            choice = "both_bad" if draw < 0.04 else "tie" if draw < 0.1 else "a" if rng.random() < p_a else "b"
            for act in ({"action": "vote", "choice": choice}, {"action": "end"}):
                agent.send({"text": "", "task_data": act})
                world.parley()
        agent.send({"text": "", "task_data": {"action": "finish"}})
        world.parley()
        assert world.episode_done()
        record = json.loads((folder / RECORD_FILE).read_text())
        records += arena_export.unit_records(record, study="arena_fastchat", task_name="arena",
                                             worker_id=f"worker{person}", assignment_id=f"as{person}",
                                             submission="submitted")
    return [arena_export.study_record("arena_fastchat", {})] + records


def battles_frame(votes: list[dict]) -> pd.DataFrame:
    """The exported votes as FastChat's battles table (winner, conv_metadata with the test's own style counts)."""
    rows = []
    for vote in votes:
        winner = {"a": "model_a", "b": "model_b"}.get(vote["choice"]) or (
            "tie (bothbad)" if vote.get("tie_kind") == "both_bad" else "tie")
        meta = {}
        for side in "ab":
            text = vote[f"response_{side}"]
            meta[f"sum_assistant_{side}_tokens"] = len(WORD.findall(text))
            meta[f"header_count_{side}"] = {"h": len(HEADER.findall(text))}
            meta[f"list_count_{side}"] = {"items": len(LIST_ITEM.findall(text))}
            meta[f"bold_count_{side}"] = {"**": len(BOLD.findall(text))}
        rows.append({"model_a": vote["model_a"], "model_b": vote["model_b"], "winner": winner, "conv_metadata": meta,
                     "weight": vote.get("weight", 1.0)})
    return pd.DataFrame(rows)


def natural(series: pd.Series) -> pd.Series:
    """FastChat's Elo-scale ratings (400 per factor of 10 in odds, around 1000) as natural log-odds with mean 0."""
    values = (series - series.mean()) * math.log(10) / 400
    return values


def analyse(tmp_path: Path, records: list[dict], name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    path = tmp_path / f"{name}.jsonl"
    write_jsonl(records, path)
    out = tmp_path / name
    dialeval("analyze_pairwise", "--data", str(path), "--out", str(out), "--bootstrap-rounds", "20",
             "--style-control", "auto")
    return pd.read_csv(out / "rankings.csv"), pd.read_csv(out / "style_control.csv")


def assert_same(ours: pd.Series, theirs: pd.Series, tolerance: float) -> None:
    ours, theirs = ours.sort_values(ascending=False), theirs.sort_values(ascending=False)
    assert list(ours.index) == list(theirs.index), (ours, theirs)
    gap = (ours - theirs.reindex(ours.index)).abs().max()
    assert gap < tolerance, (ours, theirs, gap)


@pytest.fixture(scope="module")
def fake_server():
    with FakeOpenAI({name: {"replies": replies} for name, replies in REPLIES.items()}) as fake:
        yield fake


def test_uniform_arena_votes_rank_alike_in_fastchat_and_analyze_pairwise(fastchat, fake_server, tmp_path):
    records = participants(tmp_path, fake_server.base_url, "uniform", people=16, battles=25, seed=11)
    votes = [r for r in records if r["type"] == "comparison"]
    assert len(votes) == 400 and {v["weight"] for v in votes} == {1.0}
    assert sum(v.get("tie_kind") == "both_bad" for v in votes) > 0
    rankings, styled = analyse(tmp_path, records, "uniform")
    battles = battles_frame(votes)
    ours = rankings.set_index("model")["bt_score"]
    assert_same(ours, natural(fastchat.compute_bt(battles)), tolerance=0.02)
    # style control: FastChat standardises each covariate and adds a ridge of 0.5; the project does neither (see
    # docs/pairwise_analysis.md), so the scores agree within a looser tolerance on 400 votes
    theirs, _ = fastchat.compute_style_control(battles)
    assert_same(styled.set_index("model")["bt_style"], natural(theirs), tolerance=0.12)
    assert not np.allclose(styled.set_index("model")["bt_style"], styled.set_index("model")["bt_raw"], atol=0.05)


def test_weighted_arena_votes_match_fastchats_own_weighted_fit(fastchat, fake_server, tmp_path):
    records = participants(tmp_path, fake_server.base_url, "informative", people=12, battles=25, seed=12)
    votes = [r for r in records if r["type"] == "comparison"]
    weights = np.array([v["weight"] for v in votes])
    assert weights.min() < 0.5 < 2 < weights.max()  # the informative sampler's draws are uneven
    # analyze_pairwise's own ranking code on the export as read back (the command itself runs in the test above)
    from parlai_dialeval.analysis.pairwise import with_sections
    from parlai_dialeval.analysis.rankings import rankings as rank
    from parlai_dialeval.data import read_jsonl

    path = tmp_path / "informative.jsonl"
    write_jsonl(records, path)
    rankings = rank(with_sections(read_jsonl([path]).comparisons), rounds=0)
    battles = battles_frame(votes)
    matchups, models = fastchat.get_matchups_models(battles)
    outcomes = np.where(battles["winner"] == "model_a", 1.0, np.where(battles["winner"] == "model_b", 0.0, 0.5))
    fitted = fastchat.fit_bt(np.asarray(matchups), outcomes, weights, len(models), math.log(10))
    theirs = natural(pd.Series(fitted * 400 + 1000, index=models))
    assert_same(rankings.set_index("model")["bt_score"], theirs, tolerance=0.02)


def test_the_anonymity_rule_covers_fastchats_keywords_on_the_same_replies(fake_server):
    words = identity_words()
    rules = LeakRules()
    named = [f"Hello! I was trained by {word}, nice to meet you." for word in words]
    assert all(fastchat_leaks(text, words) for text in named)
    assert all(rules.names(text) for text in named), [t for t in named if not rules.names(t)]
    replies = [text for texts in REPLIES.values() for text in texts] + [
        "The city was bombarded overnight.", "Napalm is terrible.", "Hold it in the palm of your hand.",
        "Google it!", "The Gemini constellation", "I cannot tell which company built me."]
    for text in replies:
        if fastchat_leaks(text, words) != bool(rules.names(text)):
            # the one difference: FastChat matches a keyword anywhere, the arena where a word starts
            inside = [w for w in words if w in text.lower()]
            assert inside and not any(re.search(rf"(?<!\w){re.escape(w)}", text.lower()) for w in inside), text
    assert not rules.names("The city was bombarded overnight.") and fastchat_leaks("The city was bombarded.", words)
