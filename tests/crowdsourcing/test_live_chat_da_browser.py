"""End to end in a real browser: `dialeval launch` (LocalArchitect + node router + MockProvider), a
worker driven through a whole live-chat HIT in headless Chromium, `dialeval export`, then
`dialeval analyze_live_chat` on the export. Offline bots only: `dialeval build_offline_bots` (QC bot,
TF-IDF retrieval, a tiny GPT-2 trained for 30 steps on CPU) into the test's folder.
"""
from __future__ import annotations

import json
import re

import pytest

from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, look_at, require_chromium
from .protocol_harness import CliRun, dialeval, set_slider, submit_hit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(420)]
XSS = "<img src=x onerror=alert(1)>"


def _launch(tmp_path):
    bots = tmp_path / "bots"
    dialeval("build_offline_bots", "--out", str(bots), "--max-steps", "30", "--evaluate", "false", timeout=300)
    return CliRun("live_chat_da", tmp_path, [
        "conf=offline_trained", f"live_chat.bots_dir={bots}", f"mephisto.architect.port={free_port()}",
        "mephisto.task.task_name=lcda_e2e", "mephisto.blueprint.num_conversations=1", "live_chat.seed=0"])


def _chat(page, slot, n, start=0):
    log = page.locator("[data-testid=chat-log]")
    for i in range(start, start + n):
        text = XSS if (slot == 0 and i == 0) else f"slot {slot} message {i}: I like reading books"
        before = page.locator(".dialeval-msg-other").count()
        page.fill(".response-text-input", text)
        page.click(".submit-response")
        page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length > {before}", timeout=30000)
        if slot == 0 and i == 0:
            assert XSS in log.inner_text()  # shown literally...
            assert log.locator("img").count() == 0  # ...and never turned into an element


def test_live_chat_hit_in_chromium_then_export_and_analyze(tmp_path):
    require_chromium()
    run = _launch(tmp_path)
    dialogs = []
    try:
        with chromium_page(tmp_path) as page:
            page.on("dialog", lambda dialog: dialogs.append(dialog.message))  # chromium_page accepts them
            page.goto(run.worker_url("e2e_worker"))
            assert "strongly" not in page.locator("[data-testid=instructions]").inner_text(timeout=60000)
            for slot in range(3):
                page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
                if slot == 0:
                    look_at(page, "live_chat_topic")
                page.fill("#topic-input", "books" if slot != 1 else "football")
                page.check("#attitude-like" if slot != 2 else "#attitude-dislike")
                page.click("[data-testid=start-chat]")
                page.wait_for_selector("[data-testid=chat-panel]")
                _chat(page, slot, 9)
                if slot == 0:
                    page.click("[data-testid=next-chatbot]")  # 9 < 10 inputs: refused with a warning
                    assert "at least 10 inputs" in page.locator("[data-testid=warning]").inner_text()
                    page.click("[data-testid=topic-button]")
                    page.fill("[data-testid=topic-change-form] input", "films")
                    # Enter, as a person sends what they typed (the box had no form: Enter lost the change)
                    page.press("[data-testid=topic-change-form] input", "Enter")
                    page.wait_for_function("document.querySelector('[data-testid=current-topic]').textContent === 'films'")
                _chat(page, slot, 1, start=9)
                if slot == 0:
                    look_at(page, "live_chat_chat")
                page.click("[data-testid=next-chatbot]")
                page.wait_for_selector("[data-testid=rating-form]")
                form_text = page.locator("[data-testid=rating-form]").inner_text()
                assert "strongly disagree" in form_text and "strongly agree" in form_text
                assert not re.search(r"\b(Robotic|Interesting|Fluent|Repetitive)\b", form_text)  # labels hidden
                sliders = page.locator("[data-testid=rating-form] input[type=range]")
                assert sliders.count() == 7
                if slot == 0:
                    look_at(page, "live_chat_rating")
                for k in range(7):
                    set_slider(sliders.nth(k), 10 * slot + k + 1)
                page.click("[data-testid=submit-ratings]")
            page.wait_for_selector("[data-testid=feedback-form]")
            look_at(page, "live_chat_feedback")
            page.fill("#feedback", "Fine, thanks. " + XSS)
            page.click("[data-testid=send-feedback]")
            submit_hit(page)
        assert not any(d == "1" for d in dialogs), f"a script ran in the worker page: {dialogs}"
        run.proc.wait(120)  # one unit: the run ends by itself once it is submitted
    finally:
        run.stop()

    out = tmp_path / "lcda_e2e.jsonl"
    done = run.export("lcda_e2e", out)
    assert "1 unit(s) read (1 completed)" in done.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    convs = sorted((r for r in records if r["type"] == "conversation"), key=lambda r: r["slot"])
    assert [c["status"] for c in convs] == ["complete"] * 3 and convs[1]["models"] == ["qc"]
    assert sorted(c["models"][0] for c in convs) == ["lm", "qc", "retrieval"]
    assert [c["topic"] for c in convs] == ["books", "football", "books"]
    assert [c["topic_attitude"] for c in convs] == ["like", "like", "dislike"]
    assert convs[0]["meta"]["topic_changes"][0]["topic"] == "films"
    assert all(sum(t["speaker"] == "human" for t in c["turns"]) >= 10 for c in convs)
    assert convs[0]["turns"][0]["text"] == XSS and convs[0]["feedback"] == "Fine, thanks. " + XSS
    ratings = {(r["conversation_id"], r["criterion"]): r["value"] for r in records if r["type"] == "rating"}
    assert len(ratings) == 21
    # the page lists statements in the order of Figure 1 (robotic first, topic last): values 10*slot + k + 1
    assert ratings[(convs[2]["id"], "robotic")] == 21 and ratings[(convs[2]["id"], "topic")] == 27

    report = tmp_path / "report"
    dialeval("analyze_live_chat", "--data", str(out), "--out", str(report))
    assert (report / "report.html").is_file()
