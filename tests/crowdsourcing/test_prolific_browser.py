"""End to end on (fake) Prolific in headless Chromium: `dialeval launch live_chat_da conf=offline_small
mephisto/provider=prolific`; a participant opens the study URL the fake hands out, chats with the three
bots, rates them, submits and lands on Prolific's completion page; the fake holds the submission awaiting
review; `dialeval review --approve-passing` approves it (the QC-bot check passes); `dialeval export`
writes it with the Prolific participant id as worker_id."""
from __future__ import annotations

import json
import re

import pytest

from parlai_dialeval.testing.ports import free_port

from .prolific_harness import TOKEN, ProlificCliRun, fake_prolific, provider_overrides, register
from .browser_page import chromium_page, require_chromium
from .protocol_harness import dialeval, pause, set_slider

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(480)]
PID = "5f0c1d2e3a4b5c6d7e8f9a0b"  # Prolific participant ids are 24 hex characters
QC_SLOT = 1  # offline_small: the QC bot sits between the two genuine models


def _conversation(page, slot: int) -> None:
    page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
    page.fill("#topic-input", "books")
    page.check("#attitude-like")
    page.click("[data-testid=start-chat]")
    page.wait_for_selector("[data-testid=chat-panel]")
    for i in range(10):
        before = page.locator(".dialeval-msg-other").count()
        page.fill(".response-text-input", f"message {i}: I like reading books about the sea")
        page.click(".submit-response")
        page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length > {before}", timeout=30000)
    page.click("[data-testid=next-chatbot]")
    page.wait_for_selector("[data-testid=rating-form]")
    pause(page, 1)
    sliders = page.locator("[data-testid=rating-form] input[type=range]")
    for k in range(sliders.count()):
        set_slider(sliders.nth(k), 5 if slot == QC_SLOT else 90)  # the QC bot rated clearly lower
    page.click("[data-testid=submit-ratings]")


def test_live_chat_on_prolific_in_chromium(tmp_path, monkeypatch):
    require_chromium()
    data = tmp_path / "mephisto"
    with fake_prolific() as fake:
        register(data, fake, monkeypatch)
        launch = ProlificCliRun(tmp_path, fake, [
            "conf=offline_small", *provider_overrides(fake, "3.00", 20), f"mephisto.architect.port={free_port()}",
            "mephisto.task.task_name=lcda_prolific", "mephisto.blueprint.num_conversations=1", "live_chat.seed=0"])
        study = launch.study
        try:
            with chromium_page(tmp_path) as page:
                page.goto(fake.study_url(study["id"], PID))  # Prolific's "start" button: redirected to the task
                assert f"PROLIFIC_PID={PID}" in page.url and f"STUDY_ID={study['id']}" in page.url
                page.wait_for_selector("[data-testid=instructions]", timeout=60000)
                for slot in range(3):
                    _conversation(page, slot)
                page.wait_for_selector("[data-testid=feedback-form]")
                page.fill("#feedback", "Fine, thanks.")
                page.click("[data-testid=send-feedback]")
                page.click("[data-testid=submit-hit]", timeout=30000)
                page.wait_for_url(re.compile(re.escape(fake.completion_url)), timeout=30000)
                assert "cc=" not in page.url  # the code never reaches the page: the server completed it
                page.wait_for_selector("#complete", timeout=30000)
            (submission,) = [s for s in fake.state.submissions.values() if s["participant_id"] == PID]
            assert submission["status"] == "AWAITING REVIEW"
            assert submission["study_code"] == study["completion_codes"][0]["code"]
            launch.proc.wait(120)  # one unit: the run ends by itself once it is submitted
        finally:
            launch.stop()
        assert "Prolific: 1 place(s) x 3.00 GBP" in launch.log() and TOKEN not in launch.log()

        done = dialeval("review", "lcda_prolific", "--approve-passing", "--mephisto-data", str(data))
        assert f"approved {PID}" in done.stdout
        row = [line for line in done.stdout.splitlines() if line.startswith(PID)][0]
        assert "APPROVED" in row and "pass" in row
        assert submission["status"] == "APPROVED"

    out = tmp_path / "lcda_prolific.jsonl"
    dialeval("export", "lcda_prolific", "--out", str(out), "--mephisto-data", str(data))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    conversations = [r for r in records if r["type"] == "conversation"]
    assert len(conversations) == 3 and {c["worker_id"] for c in conversations} == {PID}
    assert all(c["status"] == "complete" for c in conversations)
    assert TOKEN not in out.read_text()
