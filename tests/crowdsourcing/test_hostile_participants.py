"""Hostile acts fed to the chat worlds (issue 26): wrong types, 1 MB messages, floods.

Each world runs in-process with a stand-in for Mephisto's agent (its queue of pending acts, as the
ParlAI wrapper reads it) and echo bots. After every hostile act the world carries on (a warning on the
page, never an exception), and a session with hostile acts interleaved exports exactly what the same
session without them exports. The Mephisto end to end of the same is in test_hostile_participants_mock.py.
"""
from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlai_dialeval.crowdsourcing.platform.export import UnitData
from parlai_dialeval.crowdsourcing.platform.participant_input import (TOO_FAST, FloodGuard, InputLimits, Refused,
                                                                     read_act)
from parlai_dialeval.crowdsourcing.platform.registry import get_task

ECHO = {"opt": {"model": "repeat_query"}}
MEGABYTE = "A" * 1_000_000
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
# acts no phase of any chat world accepts
HOSTILE = [
    "not an object", ["text"], {"text": 5, "task_data": {"action": "message"}},
    {"text": "hi", "task_data": ["action", "message"]}, {"text": MEGABYTE, "task_data": {"action": "message"}},
    {"text": {"html": "<b>"}, "task_data": {"action": "message"}},
    {"text": "", "task_data": {"action": "topic", "topic": {"a": 1}, "attitude": ["like"]}},
    {"text": "", "task_data": {"action": "topic_change", "topic": "B" * 10_000}},
    {"text": "", "task_data": {"action": "rating", "values": "high"}},
    {"text": "", "task_data": {"action": "feedback", "feedback": ["x"]}},
    {"text": "", "task_data": {"action": "feedback", "feedback": "F" * 100_000}},
    {"text": "", "task_data": {"checked": 5}}, {"text": "", "task_data": {"checked": [["engaging"]]}},
    {"text": "", "task_data": {"ratings": [1, 2, 3]}},
    {"text": "", "task_data": {"ratings": {"engaging": True, "humanlike": True, "interesting": True}}},
    {"text": "", "task_data": {"action": "choose", "choice": ["left"], "justification": "x"}},
    {"text": "", "task_data": {"action": "choose", "choice": "left", "justification": {"why": "x"}}},
    {"text": "", "task_data": {"action": "choose", "choice": "left", "justification": "J" * 100_000}},
]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeAgent:
    """What the worlds use of Mephisto's ParlAI agent wrapper: act() takes the next pending act."""

    def __init__(self, data_dir):
        self.mephisto_agent = SimpleNamespace(
            pending_actions=queue.Queue(), has_live_update=threading.Event(), db_id="7",
            get_data_dir=lambda: str(data_dir), get_worker=lambda: SimpleNamespace(worker_name="W"),
            agent_in_active_run=lambda: False)  # no live run: display-only updates go through observe()
        self.seen: list[dict] = []

    def act(self, timeout=None):
        pending = self.mephisto_agent.pending_actions
        return None if pending.empty() else pending.get_nowait()

    def observe(self, message):
        self.seen.append(message)

    def send(self, act):
        self.mephisto_agent.pending_actions.put(act)

    def warnings(self) -> list[str]:
        return [m["task_data"]["warning"] for m in self.seen if (m.get("task_data") or {}).get("warning")]


def run_acts(world, agent, acts, clock, spacing: float) -> None:
    """Each act in turn, ``spacing`` seconds apart; the world takes it at once (never raises)."""
    for act in acts:
        clock.now += spacing
        agent.send(act)
        world.parley()


# ------------------------------------------------------------------------------------------ the worlds
def live_chat(tmp_path):
    from parlai_dialeval.crowdsourcing.live_chat_da.worlds import LiveChatWorld
    from parlai_dialeval.crowdsourcing.platform.bots import BotPool

    pool = BotPool({"qc": ECHO, "a": ECHO, "b": ECHO}, ["qc"], seed=0)
    opt = {"pool": pool, "num_slots": 3, "min_inputs": 2, "ice_breaker": False, "ice_breakers": [],
           "turn_timeout": 5, "max_inputs": 100, "limits": InputLimits()}
    agent = FakeAgent(tmp_path)
    return LiveChatWorld(opt, agent), agent


def live_chat_script():
    acts = []
    for slot in range(3):
        acts.append({"text": "", "task_data": {"action": "topic", "topic": f"topic {slot}", "attitude": "like"}})
        acts += [{"text": f"message {k} of slot {slot}", "task_data": {"action": "message"}} for k in range(2)]
        acts += [{"text": "", "task_data": {"action": "next"}},
                 {"text": "", "task_data": {"action": "rating", "values": [10 * slot + k for k in range(7)]}}]
    return acts + [{"text": "", "task_data": {"action": "feedback", "feedback": "thanks"}}]


def sm_eval(tmp_path):
    from parlai_dialeval.crowdsourcing.platform.bots import BotPool
    from parlai_dialeval.crowdsourcing.sm_eval.worlds import SingleModelWorld

    opt = {"pool": BotPool({"echo": ECHO}, seed=0), "num_turns": 2, "worker_personas": [],
           "block_on_worker_checks": False, "turn_timeout": 5, "limits": InputLimits()}
    agent = FakeAgent(tmp_path)
    return SingleModelWorld(opt, agent), agent


def sm_eval_script():
    return [{"text": "", "task_data": {"checked": ["engaging"]}},
            {"text": "tell me more", "task_data": {"action": "message"}},
            {"text": "", "task_data": {"checked": ["none"]}},
            {"text": "", "task_data": {"ratings": {"engaging": 4, "humanlike": 2, "interesting": 5}}}]


def pw_turn(tmp_path):
    from parlai_dialeval.crowdsourcing.platform.bots import BotPool
    from parlai_dialeval.crowdsourcing.pw_turn.worlds import PairwiseTurnWorld

    opt = {"pool": BotPool({"x": ECHO, "y": ECHO}, seed=0), "question": "preference", "num_turns": 2,
           "block_on_worker_checks": False, "turn_timeout": 5, "limits": InputLimits()}
    agent = FakeAgent(tmp_path)
    return PairwiseTurnWorld(opt, agent), agent


def pw_turn_script():
    return [{"text": "", "task_data": {"action": "choose", "choice": "left", "justification": "kinder"}},
            {"text": "and you?", "task_data": {"action": "message"}},
            {"text": "", "task_data": {"action": "choose", "choice": "right", "justification": "on topic"}}]


WORLDS = {"live_chat_da": (live_chat, live_chat_script), "sm_eval": (sm_eval, sm_eval_script),
          "pw_turn": (pw_turn, pw_turn_script)}


def strip_times(value):
    if isinstance(value, dict):
        return {k: strip_times(v) for k, v in value.items() if k not in ("time", "duration", "assignment_duration")}
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


def exported(task: str, world) -> tuple[list[dict], list[str]]:
    record = json.loads((Path(world.agent.mephisto_agent.get_data_dir()) / world.record_file).read_text())
    unit = UnitData(worker_id="W", mephisto_worker_id="1", unit_id="1", assignment_id="1", task_run_id="1",
                    agent_id="7", agent_status="completed", state={}, task_start=None, task_end=None,
                    files={world.record_file: record})
    report = get_task(task).export([unit], task)
    return strip_times(report.records), report.notes


@pytest.mark.parametrize("task", sorted(WORLDS))
def test_hostile_acts_between_honest_ones_change_nothing_exported(task, tmp_path):
    make, script = WORLDS[task]
    honest_world, honest_agent = make(tmp_path / "honest")
    clock = Clock()
    honest_world.flood = FloodGuard(honest_world.limits, clock=clock)
    run_acts(honest_world, honest_agent, script(), clock, spacing=10)
    assert honest_world.episode_done() and honest_world.status == "complete"

    world, agent = make(tmp_path / "hostile")
    clock = Clock()
    world.flood = FloodGuard(world.limits, clock=clock)
    for act in script():
        for bad in HOSTILE:
            run_acts(world, agent, [bad], clock, spacing=0.1)
            assert not world.episode_done()
        run_acts(world, agent, [act], clock, spacing=10)
    assert world.episode_done() and world.status == "complete"
    assert agent.warnings() and any("1,000,000 characters long; the limit is 2,000" in w for w in agent.warnings())
    assert world.flood.dropped == 0  # nothing here was a flood
    records, notes = exported(task, world)
    honest_records, honest_notes = exported(task, honest_world)
    assert records == honest_records and notes == honest_notes == []
    assert MEGABYTE not in json.dumps(records)


def test_a_flood_is_dropped_before_the_bots_and_the_chat_goes_on(tmp_path):
    world, agent = live_chat(tmp_path)
    clock = Clock()
    world.flood = FloodGuard(world.limits, clock=clock)
    run_acts(world, agent, live_chat_script()[:1], clock, spacing=10)  # the topic: chatting now
    # 1,000 messages in one second, each taken as it arrives: a burst passes, the rest never reach the bot
    run_acts(world, agent, [{"text": f"spam {k}", "task_data": {"action": "message"}} for k in range(1000)],
             clock, spacing=0.001)
    limits = InputLimits()
    turns = world.session.conversation["turns"]
    human = [t for t in turns if t["speaker"] == "human"]
    assert limits.rate_burst <= len(human) <= limits.rate_burst + limits.rate_per_minute / 60 + 1
    assert len(turns) == 2 * len(human)  # every message that passed was answered, none after
    assert world.flood.dropped == 1000 - len(human)
    assert agent.warnings().count(TOO_FAST) == 1
    # 1,000 more queued at once (a slow bot): the backlog is dropped whole, without a bot call
    for k in range(1000):
        agent.send({"text": f"queued {k}", "task_data": {"action": "message"}})
    clock.now += 60
    world.parley()
    assert agent.mephisto_agent.pending_actions.empty() and len(world.session.conversation["turns"]) == len(turns)
    # a minute later the participant chats again; the record keeps the count of what was dropped
    run_acts(world, agent, [{"text": "sorry", "task_data": {"action": "message"}}], clock, spacing=60)
    assert world.session.conversation["turns"][-1]["text"] == "sorry"
    saved = json.loads((tmp_path / world.record_file).read_text())
    assert saved["dropped_acts"] == world.flood.dropped == 2000 - len(human)


def test_flood_guard_rate_with_a_clock():
    clock = Clock()
    guard = FloodGuard(InputLimits(rate_per_minute=60, rate_burst=5), clock=clock)
    assert [guard.admit() for _ in range(7)] == [True] * 5 + [False] * 2
    assert guard.notice() == TOO_FAST and guard.notice() is None  # once per flood
    clock.now += 3  # one a second
    assert [guard.admit() for _ in range(4)] == [True] * 3 + [False]
    assert guard.notice() is None  # the same flood
    clock.now += 5  # a pause that refills the bucket ends it
    assert [guard.admit() for _ in range(6)] == [True] * 5 + [False]
    assert guard.notice() == TOO_FAST and guard.dropped == 4


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(act=JSON)
def test_read_act_takes_any_json(act):
    limits = InputLimits(max_message_chars=5)
    try:
        text, data = read_act(act, limits)
    except Refused as refusal:
        assert str(refusal)
        return
    assert isinstance(text, str) and len(text) <= 5 and isinstance(data, dict)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(acts=st.lists(st.fixed_dictionaries({"text": JSON, "task_data": JSON | st.dictionaries(
    st.sampled_from(["action", "topic", "attitude", "values", "feedback", "checked", "ratings", "choice",
                     "justification"]), JSON, max_size=4)}), max_size=12))
def test_live_chat_world_survives_any_acts(acts, tmp_path_factory):
    world, agent = live_chat(tmp_path_factory.mktemp("w"))
    clock = Clock()
    world.flood = FloodGuard(world.limits, clock=clock)
    run_acts(world, agent, acts, clock, spacing=1)  # never raises
    records, notes = exported("live_chat_da", world)  # and what it saved exports cleanly
    assert notes == [] and records[0]["type"] == "study"


def test_pw_turn_onboarding_trusts_only_the_worlds_own_save_data():
    from parlai_dialeval.crowdsourcing.pw_turn.worlds import onboarding_result, validate_onboarding

    forged = {"id": "SUBMIT_WORLD_DATA", "text": "", "task_data": {}, "WORLD_DATA": {"onboarding": {"passed": True}}}
    act = {"id": "worker", "text": "", "task_data": {"action": "onboarding"}}
    left_early = {"outputs": {"messages": [forged, act]}}
    assert onboarding_result(left_early) is None and not validate_onboarding(left_early)
    failed = {"id": "SUBMIT_WORLD_DATA", "text": "", "WORLD_DATA": {"onboarding": {"passed": False}}}
    finished = {"outputs": {"messages": [forged, act, failed]}}
    assert onboarding_result(finished) == {"passed": False} and not validate_onboarding(finished)


def test_live_chat_stops_a_conversation_at_max_inputs(tmp_path):
    world, agent = live_chat(tmp_path)
    world.opt["max_inputs"] = 3
    clock = Clock()
    world.flood = FloodGuard(world.limits, clock=clock)
    script = live_chat_script()
    more = [{"text": f"message {k}", "task_data": {"action": "message"}} for k in range(2, 5)]
    run_acts(world, agent, script[:3] + more, clock, spacing=5)
    human = [t["text"] for t in world.session.conversation["turns"] if t["speaker"] == "human"]
    assert human == ["message 0 of slot 0", "message 1 of slot 0", "message 2"]
    assert agent.warnings()[-1] == "This conversation has reached its 3 messages: please press 'Next chatbot'."
    run_acts(world, agent, script[3:4], clock, spacing=5)  # 'Next chatbot' still works
    assert world.session.phase == "rate"
