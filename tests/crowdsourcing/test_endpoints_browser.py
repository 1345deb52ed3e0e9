"""`dialeval launch live_chat_da conf=endpoints` against the fake OpenAI-compatible server, one worker in
headless Chromium at a person's pace: two endpoint bots and the QC bot; one endpoint answers 500 three
times, which ends only its conversation (the page says so and moves on); `dialeval export` keeps each
endpoint turn's latency and token counts."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.crowdsourcing.platform.speed import PROBE_REPLIES
from parlai_dialeval.testing.fake_openai import FakeOpenAI
from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, require_chromium
from .protocol_harness import CliRun, dialeval, set_slider

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(420)]
PAUSE_MS = 800  # between a person's actions


def say(page, text) -> str:
    """Type and send a message; 'reply' once the bot answered, 'failed' when the page says it stopped."""
    before = page.locator(".dialeval-msg-other").count()
    page.fill(".response-text-input", text)
    page.wait_for_timeout(PAUSE_MS)
    page.click(".submit-response")
    page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length > {before} || "
                           "document.querySelector('[data-testid=failed-panel]') !== null", timeout=30000)
    return "failed" if page.locator("[data-testid=failed-panel]").count() else "reply"


def test_endpoint_bots_in_a_real_hit(tmp_path, monkeypatch):
    require_chromium()
    # model_b answers the launch's ping and its timed replies (speed.PROBE_REPLIES), then fails three times in the chat
    script = {"model-a": {"latency": 0.2},
              "model-b": {"latency": 0.2, "faults": ["500"] * 3, "faults_after": 1 + PROBE_REPLIES}}
    with FakeOpenAI(script) as fake:
        monkeypatch.setenv("DIALEVAL_BASE_URL", fake.base_url)
        run = CliRun("live_chat_da", tmp_path, [
            "conf=endpoints", f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_endpoints_e2e",
            "mephisto.blueprint.num_conversations=1", "live_chat.seed=0", "live_chat.min_inputs=2",
            "live_chat.models.model_b.opt.retry_backoff=0.2"])
        outcomes = []
        try:
            with chromium_page(tmp_path) as page:
                page.goto(run.worker_url("e2e_worker"))
                for slot in range(3):
                    page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
                    page.fill("#topic-input", "jazz")
                    page.check("#attitude-like")
                    page.wait_for_timeout(PAUSE_MS)
                    page.click("[data-testid=start-chat]")
                    page.wait_for_selector("[data-testid=chat-panel]")
                    outcomes.append(say(page, "Do you like jazz?"))
                    if outcomes[-1] == "failed":
                        assert "stopped working" in page.locator("[data-testid=failed-panel]").inner_text()
                        page.wait_for_timeout(PAUSE_MS)
                        page.click("[data-testid=next-after-failure]")
                        continue
                    assert say(page, "Who is your favourite musician?") == "reply"
                    page.click("[data-testid=next-chatbot]")
                    page.wait_for_selector("[data-testid=rating-form]")
                    sliders = page.locator("[data-testid=rating-form] input[type=range]")
                    for k in range(7):
                        set_slider(sliders.nth(k), 40 + k)
                    page.wait_for_timeout(PAUSE_MS)
                    page.click("[data-testid=submit-ratings]")
                page.wait_for_selector("[data-testid=feedback-form]")
                page.fill("#feedback", "One bot broke.")
                page.click("[data-testid=send-feedback]")
                page.click("[data-testid=submit-hit]", timeout=30000)
                page.wait_for_timeout(1500)
            run.proc.wait(120)  # one unit: the run ends by itself once it is submitted
        finally:
            run.stop()
    assert sorted(outcomes) == ["failed", "reply", "reply"]
    out = tmp_path / "export.jsonl"
    dialeval("export", "lcda_endpoints_e2e", "--out", str(out), "--mephisto-data", str(run.data_dir))
    convs = {r["models"][0]: r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "conversation"}
    assert {m: c["status"] for m, c in convs.items()} == {"model_a": "complete", "qc": "complete", "model_b": "failed"}
    assert "failed 3 times, last: HTTP 500" in convs["model_b"]["meta"]["error"]
    bot_turns = [t for t in convs["model_a"]["turns"] if t["speaker"] == "model_a"]
    assert [t["text"] for t in bot_turns] == ["You said: Do you like jazz?", "You said: Who is your favourite musician?"]
    for turn in bot_turns:
        assert turn["meta"]["latency"] >= 0.2 and turn["meta"]["finish_reason"] == "stop"
        assert turn["meta"]["completion_tokens"] == len(turn["text"].split()) and turn["meta"]["prompt_tokens"] > 0
