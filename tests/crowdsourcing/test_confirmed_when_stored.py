"""Every chat world confirms the participant's message to the page once it is stored, before the bots are asked
(issue 41): a reply may stream for a minute, and until the confirmation the page shows the message as not sent.
The worlds run in-process with test_hostile_participants' stand-in for Mephisto's agent and echo bots; the
confirmation (compat/mephisto_router.acknowledge_taken) is recorded where it happens."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.crowdsourcing.platform import session_world
from parlai_dialeval.crowdsourcing.platform.participant_input import FloodGuard

from .test_hostile_participants import WORLDS, Clock, run_acts

MESSAGE = "a message the participant typed"


def turns_of(world) -> list[dict]:
    conversation = getattr(world.session, "conversation", None)  # live chat: the current conversation
    return conversation["turns"] if conversation else world.session.turns


@pytest.mark.parametrize("task", sorted(WORLDS))
def test_the_message_is_confirmed_once_stored_and_before_any_reply(task, tmp_path, monkeypatch):
    make, script = WORLDS[task]
    world, agent = make(tmp_path)
    clock = Clock()
    world.flood = FloodGuard(world.limits, clock=clock)
    acts = script()
    first_message = next(i for i, act in enumerate(acts) if act["task_data"].get("action") == "message")
    run_acts(world, agent, acts[:first_message], clock, spacing=10)  # to where the participant chats

    confirmed = []

    def confirm(mephisto_agent):
        stored = (tmp_path / world.record_file).read_text()
        confirmed.append({"stored": MESSAGE in stored, "last": dict(turns_of(world)[-1]), "seen": len(agent.seen)})

    monkeypatch.setattr(session_world, "acknowledge_taken", confirm)
    run_acts(world, agent, [{"text": MESSAGE, "task_data": {"action": "message"}}], clock, spacing=10)

    assert confirmed, "the message was never confirmed before the world's parley ended"
    assert confirmed[0]["stored"] and confirmed[0]["last"]["speaker"] == "human", confirmed
    assert confirmed[0]["last"]["text"] == MESSAGE
    turns = turns_of(world)
    assert turns[-1]["speaker"] != "human" or task == "pw_turn"  # the reply came after (PW-Turn: two, pending)
    if task != "live_chat_da":  # these pages show the message from the history the world sends
        shown = [i for i, m in enumerate(agent.seen)
                 if ((m.get("task_data") or {}).get("history") or [{}])[-1].get("text") == MESSAGE]
        assert shown and shown[0] >= confirmed[0]["seen"], "the page was not shown the stored message"
        replies = [i for i, m in enumerate(agent.seen) if (m.get("task_data") or {}).get("phase") in ("annotate", "choose")]
        assert shown[0] < replies[-1], "the message was shown only with the reply"
    json.loads((tmp_path / world.record_file).read_text())  # and the record is whole afterwards
