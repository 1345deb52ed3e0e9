"""`dialeval self_chat -m dialeval:openai_chat` against the fake endpoint, its output feeding an ACUTE run
(MockArchitect in-process): a worker passes the onboarding, compares the two endpoint models, the
export names them and keeps the endpoint's per-turn costs."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.data import from_records
from parlai_dialeval.testing.fake_openai import FakeOpenAI
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun, dialeval
from .test_acute_mock import pass_acute_onboarding

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]
REPLIES = {"model-a": "I love books, what are you reading these days?", "model-b": "no."}


def test_self_chats_of_endpoint_models_feed_acute(tmp_path):
    folder = tmp_path / "self_chats"  # ACUTE's fast-eval layout: self_chats/<model>.<task>.jsonl names the model
    with FakeOpenAI({m: {"replies": [r]} for m, r in REPLIES.items()}) as fake:
        for endpoint_model in REPLIES:
            dialeval("self_chat", "-m", "dialeval:openai_chat", "--base-url", fake.base_url,
                     "--endpoint-model", endpoint_model, "--system-prompt", "You are a friendly chatbot.",
                     "--num-self-chats", "2", "--selfchat-max-turns", "4", "--save-format", "conversations",
                     "--outfile", str(folder / f"{endpoint_model.replace('-', '_')}.selfchat.jsonl"))
        assert {r["model"] for r in fake.requests} == set(REPLIES)
        assert all(r["body"]["messages"][0] == {"role": "system", "content": "You are a friendly chatbot."}
                   for r in fake.requests)
    files = sorted(folder.glob("*.jsonl"))
    first = json.loads(files[0].read_text().splitlines()[0])
    said = [m for exchange in first["dialog"] for m in exchange]
    assert said[0]["text"] == REPLIES["model-a"] and said[0]["completion_tokens"] == len(REPLIES["model-a"].split())

    run = MockRun("acute", tmp_path / "mephisto", port=free_port(), overrides=[
        f"acute.conversations=[{files[0]},{files[1]}]", "acute.seed=1", "acute.matchups_per_pair=2",
        "acute.subtasks_per_unit=2", "mephisto.task.task_name=acute_endpoints_test"])
    try:
        run.register("W1", "REG_1")
        pass_acute_onboarding(run, "W1")
        agent = run.unit_agent("W1")
        shown = run.unit_inputs(agent)["shown"]
        answers = [{"pair_id": p["pair_id"], "choice": "left" if p["left"][0]["text"] != "no." else "right",
                    "justification": "it talks", "duration": 5.0} for p in shown]
        run.submit(agent, {"answers": answers})
        run.wait(lambda: run.live_agent(agent).state.get_data()["outputs"] is not None, what="submission")
        from parlai_dialeval.crowdsourcing.platform.export import collect_from_db

        report, _ = collect_from_db(run.db, "acute_endpoints_test")
    finally:
        run.shutdown()
    result = from_records(report.records)
    comps = result.comparisons[~result.comparisons["onboarding"].eq(True)]
    assert len(comps) == 2 and {*comps["model_a"], *comps["model_b"]} == {"model_a", "model_b"}
    for row in comps.itertuples():
        assert (row.model_a if row.choice == "a" else row.model_b) == "model_a"
    convs = result.conversations.set_index("id")
    compared = convs.loc[list(comps["conversation_a"]) + list(comps["conversation_b"])]
    turn = compared.iloc[0]["turns"][0]
    assert {"latency", "prompt_tokens", "completion_tokens", "finish_reason"} <= set(turn["meta"])
