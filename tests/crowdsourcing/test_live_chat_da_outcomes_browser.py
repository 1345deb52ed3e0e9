"""Issue 40, must show: two participants in headless Chromium at a person's pace on one live-chat launch
(`conf=offline_small`): one finishes the HIT, the other chats a little and closes the tab. The dashboard,
the export, workers.csv and the report count them as finished and did-not-finish: the one who left is
never a HIT that failed quality control."""
from __future__ import annotations

import csv

import pytest

from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, require_chromium
from .protocol_harness import CliRun, dialeval, pause, rate_this_chatbot, start_live_chat, submit_hit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
TASK = "lcda_outcomes"


def chat(page, texts: list[str]) -> None:
    """Type each message as a person does (a pause to write it, another to read the reply)."""
    for text in texts:
        replies = page.locator(".dialeval-msg-other").count()
        pause(page, 1)
        page.fill(".response-text-input", text)
        page.click(".submit-response")
        page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length > {replies}", timeout=30000)
        pause(page, 1.5)


def test_a_participant_who_finished_and_one_who_closed_the_tab(tmp_path):
    require_chromium()
    from parlai_dialeval.dashboard.source import TaskSource

    run = CliRun("live_chat_da", tmp_path, [
        "conf=offline_small", f"mephisto.architect.port={free_port()}", f"mephisto.task.task_name={TASK}",
        "mephisto.blueprint.num_conversations=2", "live_chat.seed=0", "live_chat.min_inputs=2"])
    try:
        with chromium_page(tmp_path / "leaver") as leaver:  # a browser of their own
            leaver.goto(run.worker_url("leaver"))
            start_live_chat(leaver, "music")
            chat(leaver, ["I play the piano a little"])
            leaver.close()  # the tab closed for good: no Submit
        with chromium_page(tmp_path / "finisher") as page:
            page.goto(run.worker_url("finisher"))
            for slot, topic in enumerate(("books", "football", "cooking")):
                start_live_chat(page, topic)
                chat(page, [f"I like {topic}", f"Tell me more about {topic}"])
                pause(page, 1)
                rate_this_chatbot(page, 80 - 20 * slot)
            page.wait_for_selector("[data-testid=feedback-form]")
            pause(page, 1)
            page.fill("#feedback", "fine")
            page.click("[data-testid=send-feedback]")
            submit_hit(page)
    finally:
        run.stop()

    rows = {row["worker"].removesuffix("_sandbox"): row for row in TaskSource(TASK, run.data_dir, ttl=0).snapshot()["quality"]}
    assert rows["finisher"]["state"] == "done"
    assert rows["leaver"]["state"].startswith("did not finish") and rows["leaver"]["check"] == "did not submit"

    out = tmp_path / "lcda.jsonl"
    run.export(TASK, out)
    report = tmp_path / "report"
    dialeval("analyze_live_chat", "--data", str(out), "--out", str(report))
    with open(report / "workers.csv", newline="") as handle:
        outcomes = {row["worker_id"].removesuffix("_sandbox"): row["outcome"] for row in csv.DictReader(handle)}
    assert outcomes["finisher"].endswith("quality control") and outcomes["leaver"].startswith("did not submit")
    html = (report / "report.html").read_text()
    assert "1 worker submitted 1 assignment (HITs)" in html and "started and not submitted" in html
    assert "failed quality control" not in outcomes["leaver"]
