"""Endpoint bots (dialeval:openai_chat against the stdlib fake server) and ParlAI model_opts / zoo paths
in every task with models, through Mephisto in-process (MockArchitect + MockProvider)."""
from __future__ import annotations

import json

import pytest
from parlai.agents.repeat_query.repeat_query import RepeatQueryAgent

import parlai_dialeval  # noqa: F401  (Python 3.11 fix before mephisto)
from parlai_dialeval.crowdsourcing.platform import runner
from parlai_dialeval.crowdsourcing.platform.speed import PROBE_REPLIES
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing.fake_openai import FakeOpenAI
from parlai_dialeval.testing.ports import free_port

from .protocol_harness import MockRun
from .test_live_chat_da_world import MockWorker, export_records
from .test_pw_turn_mock import pass_pw_turn_onboarding

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
COST_KEYS = {"latency", "prompt_tokens", "completion_tokens", "finish_reason", "attempts"}
# ParlAI's published example shapes: model_chat's task_config/model_opts.yaml and conf/example.yaml
# ("blender_90M:10"), pairwise_per_turn_eval's model_opts.yaml and its "blender_90M:blender_3B:100".
PARLAI_MODEL_OPTS = """blender_90M: >
    --model-file zoo:blender/blender_90M/model
    --beam-block-full-context False
    --beam-block-ngram 3
    --beam-context-block-ngram 3
    --beam-min-length 20
    --beam-size 10
    --inference beam

blender_3B: >
    --model-file zoo:blender/blender_3B/model
    --beam-block-full-context False
    --beam-size 10
    --inference beam
"""
ZOO_VERSIONS = {"blender_90M": "v1.0", "blender_3B": "v1.0"}  # parlai/zoo/blender/<name>.py VERSION


@pytest.fixture
def fake(monkeypatch):
    # model-b answers the launch ping and timing replies, then fails three times: one turn's requests with max_retries 2
    with FakeOpenAI({"model-a": {"latency": 0.05},
                     "model-b": {"latency": 0.05, "faults": ["500"] * 3, "faults_after": 1 + PROBE_REPLIES}}) as fake:
        monkeypatch.setenv("DIALEVAL_BASE_URL", fake.base_url)
        yield fake


class BlenderStandIn(RepeatQueryAgent):
    """Echoes the worker; declares the generation flags of the model_opts above, as a built Blender does."""

    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        from parlai.core.torch_generator_agent import TorchGeneratorAgent

        TorchGeneratorAgent.add_cmdline_args(parser, partial_opt)
        return parser


def build_zoo(datapath, names=("blender_90M",)):
    """Stand-ins 'built' under a ParlAI datapath exactly where the zoo would put them (echo agents)."""
    from parlai.core.build_data import mark_done

    for name in names:
        folder = datapath / "models" / "blender" / name
        folder.mkdir(parents=True)
        (folder / "model").write_text("stand-in")
        (folder / "model.opt").write_text(json.dumps({"model": f"{__name__}:BlenderStandIn"}))
        mark_done(str(folder), ZOO_VERSIONS[name])


def hit_where_model_b_fails(run, tmp_path, task_name: str, inputs: int):
    """One worker's live_chat_da HIT: model_b's conversation fails at its first message (the page says
    so), the others get ``inputs`` messages and ratings; returns (slot plan, exported data, records)."""
    worker = MockWorker(run, "W1")
    plan = [c["model"] for c in worker._wait(worker.record)["conversations"]]
    for slot, model in enumerate(plan):
        if model == "model_b":
            worker.wait_phase("topic", slot)
            worker.send({"action": "topic", "topic": "jazz", "attitude": "like"})
            worker.wait_phase("chat", slot)
            worker.send({"action": "message"}, "do you like jazz?")
            assert "stopped working" in worker.wait_phase("failed", slot)["failure_text"]
            worker.send({"action": "next"})
        else:
            worker.chat(slot, inputs, topic="jazz")
            worker.rate(slot, [60] * 7)
    worker.wait_phase("feedback")
    worker.send({"action": "feedback", "feedback": "ok"})
    worker._wait(lambda: worker.record()["finished"])
    worker.server.submit_mock_unit(worker.agent_id, {"final_data": {}})
    worker._wait(lambda: worker.agent.get_status() == "completed")
    report, data, lines = export_records(run, tmp_path, task_name)
    return plan, data, lines


def test_live_chat_endpoints_costs_in_meta_and_a_500_bot_ends_only_its_conversation(tmp_path, fake):
    run = runner.start("live_chat_da", [
        "conf=endpoints", "mephisto/architect=mock", "mephisto.architect.should_run_server=true",
        f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_endpoints", "live_chat.min_inputs=2",
        "live_chat.seed=0", "live_chat.models.model_b.opt.retry_backoff=0.05"], data_dir=tmp_path / "mephisto")
    try:
        assert {r["model"] for r in fake.requests} == {"model-a", "model-b"}  # each pinged once at launch
        plan, data, lines = hit_where_model_b_fails(run, tmp_path, "lcda_endpoints", inputs=2)
        assert plan[1] == "qc" and sorted(plan) == ["model_a", "model_b", "qc"]
    finally:
        run.shutdown()
    convs = {c["models"][0]: c for c in lines if c["type"] == "conversation"}
    assert convs["model_a"]["status"] == "complete" and convs["qc"]["status"] == "complete"
    assert convs["model_b"]["status"] == "failed"
    assert "failed 3 times, last: HTTP 500" in convs["model_b"]["meta"]["error"]
    bot_turns = [t for t in convs["model_a"]["turns"] if t["speaker"] == "model_a"]
    assert [t["text"] for t in bot_turns] == ["You said: message 0 in slot %d" % plan.index("model_a"),
                                              "You said: message 1 in slot %d" % plan.index("model_a")]
    for turn in bot_turns:
        assert COST_KEYS <= set(turn["meta"]) and turn["meta"]["latency"] >= 0.05
        assert turn["meta"]["completion_tokens"] == len(turn["text"].split()) and turn["meta"]["finish_reason"] == "stop"
    # the topic reached the endpoint in the system message; the history grew turn by turn
    last = fake.requests_for("model-a")[-1]["messages"]
    assert last[0]["role"] == "system" and last[0]["content"].endswith("jazz") and len(last) == 4
    assert bot_turns[1]["meta"]["prompt_tokens"] == sum(len(m["content"].split()) for m in last)
    # the ping and the timing replies, then one turn's three attempts
    assert len(fake.requests_for("model-b")) == 1 + PROBE_REPLIES + 3
    assert set(data.ratings["model"]) == {"model_a", "qc"}


def test_live_chat_streams_and_a_stream_breaking_mid_reply_fails_with_its_partial_text(tmp_path, monkeypatch):
    # model-b answers the launch ping and timing replies, then its reply's stream breaks off after half of its words
    script = {"model-a": {"chunk_delay": 0.02}, "model-b": {"faults": ["break"], "faults_after": 1 + PROBE_REPLIES,
                                                            "replies": ["one two three four five six"]}}
    with FakeOpenAI(script) as fake:
        monkeypatch.setenv("DIALEVAL_BASE_URL", fake.base_url)
        run = runner.start("live_chat_da", [
            "conf=endpoints", "mephisto/architect=mock", "mephisto.architect.should_run_server=true",
            f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_stream", "live_chat.min_inputs=1",
            "live_chat.seed=0"], data_dir=tmp_path / "mephisto")
        try:
            _, _, lines = hit_where_model_b_fails(run, tmp_path, "lcda_stream", inputs=1)
        finally:
            run.shutdown()
    convs = {c["models"][0]: c for c in lines if c["type"] == "conversation"}
    assert convs["model_b"]["status"] == "failed"
    assert "stream ended without finishing the reply" in convs["model_b"]["meta"]["error"]
    assert "partial text: 'one two three'" in convs["model_b"]["meta"]["error"]
    turn = [t for t in convs["model_a"]["turns"] if t["speaker"] == "model_a"][0]
    assert turn["meta"]["streamed"] is True and 0 < turn["meta"]["first_token_latency"] <= turn["meta"]["latency"]
    assert turn["meta"]["tokens_per_second"] > 0


def test_parlai_model_opts_and_quota_in_live_chat(tmp_path, monkeypatch):
    monkeypatch.setenv("PARLAI_DATAPATH", str(tmp_path / "parlai_data"))
    build_zoo(tmp_path / "parlai_data")
    (tmp_path / "model_opts.yaml").write_text(PARLAI_MODEL_OPTS)
    run = runner.start("live_chat_da", [
        "conf=offline_small", "mephisto/architect=mock", "mephisto.architect.should_run_server=true",
        f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_parlai", "live_chat.min_inputs=1",
        # the two lines of ParlAI's model_chat example config, unchanged
        f"mephisto.blueprint.model_opt_path={tmp_path / 'model_opts.yaml'}",
        "mephisto.blueprint.conversations_needed_string='blender_90M:10'"], data_dir=tmp_path / "mephisto")
    try:
        worker = MockWorker(run, "W1")
        plan = [c["model"] for c in worker._wait(worker.record)["conversations"]]
        # only models with a quota are used (as ParlAI's model_chat), plus the QC bot
        assert plan == ["blender_90M", "qc", "blender_90M"]
        worker.chat(0, 1)
        worker._wait(lambda: len(worker.record()["conversations"][0]["turns"]) == 2)
        turns = worker.record()["conversations"][0]["turns"]
    finally:
        run.shutdown()
    assert (turns[1]["speaker"], turns[1]["text"]) == ("blender_90M", "message 0 in slot 0")


def test_a_zoo_model_not_built_is_refused_with_where_and_how(tmp_path, monkeypatch):
    datapath = tmp_path / "parlai_data"
    monkeypatch.setenv("PARLAI_DATAPATH", str(datapath))
    build_zoo(datapath)  # blender_90M built, blender_3B not
    (tmp_path / "model_opts.yaml").write_text(PARLAI_MODEL_OPTS)
    with pytest.raises(DialevalError) as refused:
        runner.start("live_chat_da", [
            "conf=offline_small", "mephisto/architect=mock", f"mephisto.architect.port={free_port()}",
            f"mephisto.blueprint.model_opt_path={tmp_path / 'model_opts.yaml'}",
            "mephisto.blueprint.conversations_needed_string='blender_90M:5,blender_3B:5'"],
            data_dir=tmp_path / "mephisto")
    message = str(refused.value)
    assert "bot 'blender_3B': model_file 'zoo:blender/blender_3B/model' is not built" in message
    assert f"into {datapath}/models/blender/blender_3B" in message and "modelzoo_path(" in message
    assert not (datapath / "models" / "blender" / "blender_3B").exists()  # nothing was downloaded


def test_pw_turn_parlai_pairwise_model_opts_and_pair_quota(tmp_path, monkeypatch):
    monkeypatch.setenv("PARLAI_DATAPATH", str(tmp_path / "parlai_data"))
    build_zoo(tmp_path / "parlai_data", ("blender_90M", "blender_3B"))
    (tmp_path / "model_opts.yaml").write_text(PARLAI_MODEL_OPTS)
    run = MockRun("pw_turn", tmp_path / "mephisto", port=free_port(), overrides=[
        "mephisto.blueprint.num_conversations=1", "pw_turn.num_turns=1",
        f"mephisto.blueprint.model_opt_path={tmp_path / 'model_opts.yaml'}",
        "mephisto.blueprint.conversations_needed_string='blender_90M:blender_3B:100'"])
    try:
        agent = pw_turn_worker(run)
        shown = run.last_task_data(agent)
        assert shown["phase"] == "choose" and shown["left"] == shown["right"] == "Hi!"  # both echo the opening
        run.act(agent, {"action": "choose", "choice": "left", "justification": "same"})
        run.last_task_data(agent, key="task_done")
        from parlai_dialeval.crowdsourcing.platform.export import read_units

        record = read_units(run.db, "pw_turn", run.spec.extra["export_files"])[0].files["dialeval_pw_turn.json"]
    finally:
        run.shutdown()
    assert sorted(record["models"]) == ["blender_3B", "blender_90M"]


def pw_turn_worker(run):
    """A worker who passes PW-Turn's onboarding and reaches the chat."""
    run.register("W1", "REG_1")
    pass_pw_turn_onboarding(run, "W1")
    return run.unit_agent("W1")


def chat_turns(record):
    return [t for t in record["turns"] if t["speaker"] != "human"]


def test_pw_turn_and_sm_eval_with_endpoint_bots(tmp_path, fake):
    from parlai_dialeval.crowdsourcing.platform.export import read_units

    run = MockRun("pw_turn", tmp_path / "pw", port=free_port(), overrides=[
        "conf=endpoints", "mephisto.blueprint.num_conversations=1", "pw_turn.num_turns=1", "pw_turn.seed=0",
        "~pw_turn.models.qc", "~pw_turn.models.model_b"
        ] + ["+pw_turn.models.model_c.opt.model=repeat_query"])
    try:
        agent = pw_turn_worker(run)
        shown = run.last_task_data(agent)
        assert sorted([shown["left"], shown["right"]]) == ["Hi!", "You said: Hi!"]
        run.act(agent, {"action": "choose", "choice": "left" if shown["left"] != "Hi!" else "right",
                        "justification": "it answers"})
        run.last_task_data(agent, key="task_done")
        pw = read_units(run.db, "pw_turn_endpoints", run.spec.extra["export_files"])[0].files["dialeval_pw_turn.json"]
    finally:
        run.shutdown()
    (bot,) = chat_turns(pw)
    assert (bot["speaker"], bot["text"]) == ("model_a", "You said: Hi!") and COST_KEYS <= set(bot["meta"])
    assert bot["meta"]["rejected"] == {"model": "model_c", "text": "Hi!"}

    run = MockRun("sm_eval", tmp_path / "sm", port=free_port(), overrides=[
        "conf=endpoints", "mephisto.blueprint.num_conversations=1", "sm_eval.num_turns=1",
        "~sm_eval.models.qc", "~sm_eval.models.model_b"])
    try:
        run.register("W1", "REG_1")
        agent = run.unit_agent("W1")
        assert run.last_task_data(agent)["history"][-1] == {"speaker": "bot", "text": "You said: Hi!"}
        run.act(agent, {"checked": ["engaging"]})
        run.act(agent, {"ratings": {"engaging": 4, "humanlike": 4, "interesting": 4}})
        run.last_task_data(agent, key="task_done")
        sm = read_units(run.db, "sm_eval_endpoints", run.spec.extra["export_files"])[0].files["dialeval_sm_eval.json"]
    finally:
        run.shutdown()
    (bot,) = chat_turns(sm)
    assert bot["text"] == "You said: Hi!" and COST_KEYS <= set(bot["meta"])


def test_ab_and_acute_build_their_items_from_endpoint_bots(tmp_path, monkeypatch):
    with FakeOpenAI({"model-a": {}, "model-b": {"replies": ["I would rather talk about cats."]}}) as fake:
        monkeypatch.setenv("DIALEVAL_BASE_URL", fake.base_url)
        run = MockRun("ab_next_utterance", tmp_path / "ab", port=free_port(), overrides=[
            "conf=endpoints", "ab.max_items=4", "ab.per_hit=4", "mephisto.blueprint.units_per_assignment=1"])
        try:
            run.register("W1", "REG_1")
            shown = run.unit_inputs(run.unit_agent("W1"))["shown"]
        finally:
            run.shutdown()
        run = MockRun("acute", tmp_path / "acute", port=free_port(), overrides=[
            "conf=endpoints", "acute.self_chats_per_model=2", "acute.self_chat_turns=2", "acute.matchups_per_pair=2",
            "acute.subtasks_per_unit=2", "~acute.self_chat_models.qc", f"acute.self_chat_out={tmp_path / 'chats.jsonl'}"])
        run.shutdown()
    assert len(shown) == 4
    for item in shown:  # one reply of each endpoint model to each ChatEval prompt, in either order
        replies = sorted([item["response_a"], item["response_b"]])
        assert replies[0] == "I would rather talk about cats." and replies[1] == "You said: " + item["context"][-1]
    chats = [json.loads(line) for line in (tmp_path / "chats.jsonl").read_text().splitlines()]
    assert sorted(c["models"][0] for c in chats) == ["model_a", "model_a", "model_b", "model_b"]
    b_chat = next(c for c in chats if c["models"] == ["model_b"])
    assert {t["text"] for t in b_chat["turns"]} == {"I would rather talk about cats."}
