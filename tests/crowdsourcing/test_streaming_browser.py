"""A live_chat_da launch whose chatbots are a real model behind a real OpenAI-compatible server
(``transformers serve``, the real_server fixture), one worker in headless Chromium at a person's pace:
the page shows the typing indicator, then the bot's text as it arrives, with sending blocked, and
finally the whole reply once as the bot's message; a reload while a reply streams ends the same way."""
from __future__ import annotations

import pytest

from .protocol_harness import CliRun, chromium_page, require_chromium

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
PAUSE_MS = 1500  # between a person's actions

# Polled every 50 ms in the page: what the worker sees while the reply arrives.
WATCH = """() => {
  window.__seen = [];
  setInterval(() => {
    const bubble = document.querySelector('[data-testid=bot-streaming]');
    window.__seen.push({
      typing: document.querySelector('[data-testid=bot-typing]') !== null,
      partial: bubble ? bubble.innerText : null,
      sendDisabled: document.querySelector('.submit-response').disabled,
      replies: document.querySelectorAll('.dialeval-msg-other').length,
    });
  }, 50);
}"""


def test_the_page_shows_the_reply_as_it_arrives(real_server, tmp_path, monkeypatch):
    require_chromium()
    monkeypatch.setenv("DIALEVAL_BASE_URL", real_server.base_url)
    monkeypatch.setenv("DIALEVAL_MODEL_A", real_server.model)
    monkeypatch.setenv("DIALEVAL_MODEL_B", real_server.model)
    run = CliRun("live_chat_da", tmp_path, [
        "conf=endpoints", "mephisto.architect.port=3172", "mephisto.task.task_name=lcda_streaming_e2e",
        "mephisto.blueprint.num_conversations=1", "live_chat.seed=0", "live_chat.min_inputs=1",
        "live_chat.models.model_a.opt.max_tokens=12", "live_chat.models.model_b.opt.max_tokens=12",
        "live_chat.models.model_a.opt.request_timeout=180", "live_chat.models.model_b.opt.request_timeout=180"])
    try:
        with chromium_page(tmp_path) as page:
            page.goto(run.worker_url("stream_worker"))
            page.wait_for_selector("[data-testid=topic-form]", timeout=120000)  # the QC bot is in the middle
            page.fill("#topic-input", "gardening")
            page.check("#attitude-like")
            page.wait_for_timeout(PAUSE_MS)
            page.click("[data-testid=start-chat]")
            page.wait_for_selector("[data-testid=chat-panel]")
            page.evaluate(WATCH)
            page.fill(".response-text-input", "What do you like to grow in your garden?")
            page.wait_for_timeout(PAUSE_MS)
            page.click(".submit-response")
            page.wait_for_function("document.querySelectorAll('.dialeval-msg-other').length > 0", timeout=240000)
            page.wait_for_timeout(500)
            final = page.locator(".dialeval-msg-other").last.inner_text()
            seen = page.evaluate("window.__seen")
            # a second message, and a reload while its reply streams: afterwards each whole reply shows
            # once, and no partial bubble is left
            page.wait_for_timeout(PAUSE_MS)
            page.fill(".response-text-input", "Do you grow tomatoes?")
            page.wait_for_timeout(PAUSE_MS)
            page.click(".submit-response")
            page.wait_for_selector("[data-testid=bot-streaming]", timeout=240000)
            page.reload()
            page.wait_for_selector("[data-testid=chat-panel]", timeout=60000)
            page.wait_for_function("document.querySelectorAll('.dialeval-msg-other').length >= 2", timeout=240000)
            page.wait_for_timeout(PAUSE_MS)
            after_reload = [page.locator(".dialeval-msg-other").nth(i).inner_text()
                            for i in range(page.locator(".dialeval-msg-other").count())]
            streaming_left = page.locator("[data-testid=bot-streaming]").count()
            send_enabled = page.locator(".submit-response").is_enabled()
    finally:
        run.stop()
    before_reply = [s for s in seen if s["replies"] == 0]
    partials = [s["partial"] for s in before_reply if s["partial"]]
    assert any(s["typing"] for s in before_reply), "no typing indicator before the first text"
    assert partials, "the page never showed partial text before the whole reply"
    assert all(s["sendDisabled"] for s in before_reply if s["typing"] or s["partial"])
    reply = final.split("\n")[-1].strip()
    assert any(len(p.strip()) < len(reply) and reply.startswith(p.split("\n")[-1].strip()) for p in partials), (
        partials, reply)
    assert len(after_reload) == 2 and sum(reply in text for text in after_reload) == 1, after_reload
    assert streaming_left == 0 and send_enabled
