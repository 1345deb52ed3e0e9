"""Issue 20: real people at a person's pace, in headless Chromium behind the node router.

Each test launches a task (`dialeval launch`, LocalArchitect + node router + MockProvider) and a worker
who reads and thinks for 2-4 s between actions; the SM-Eval worker once looks away for 35 s. Every task
must still complete and export, and never show Mephisto's "timed out" screen. The live-chat worker also
closes the tab mid-chat and opens it again: the page must show the server's state (who said what, the
server's input count) and accept "Next chatbot" once the server has the inputs.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from parlai_dialeval.data import read_jsonl

from .protocol_harness import CliRun, chromium_page, dialeval, pause, require_chromium, set_slider
from .test_pw_turn_browser import onboarding

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
LOOK_AWAY = 35  # seconds: longer than any poll, heartbeat or reconnect window of Mephisto's router (15 s)


def assert_still_active(page) -> None:
    assert page.locator("[data-testid=inactive]").count() == 0, page.inner_text("[data-testid=inactive]")


def server_inputs(data_dir: Path, slot: int) -> int:
    """The worker's messages in conversation ``slot`` as the live-chat world recorded them."""
    records = list(data_dir.rglob("dialeval_live_chat.json"))
    assert len(records) == 1, records
    turns = json.loads(records[0].read_text())["conversations"][slot]["turns"]
    return sum(turn["speaker"] == "human" for turn in turns)


def chat(page, texts) -> None:
    for text in texts:
        replies = page.locator(".dialeval-msg-other").count()
        page.fill(".response-text-input", text)
        pause(page, 1)
        page.click(".submit-response")
        page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length > {replies}", timeout=30000)
        pause(page, 2.5)  # reading the reply


def rate(page, value: int) -> None:
    page.wait_for_selector("[data-testid=rating-form]", timeout=30000)
    sliders = page.locator("[data-testid=rating-form] input[type=range]")
    for k in range(sliders.count()):
        set_slider(sliders.nth(k), value)
    pause(page, 2)
    page.click("[data-testid=submit-ratings]")


def start_topic(page, topic: str) -> None:
    page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
    pause(page, 2)
    page.fill("#topic-input", topic)
    page.check("#attitude-like")
    pause(page, 2)
    page.click("[data-testid=start-chat]")
    page.wait_for_selector("[data-testid=chat-panel]")


def test_live_chat_at_human_pace_with_the_tab_reopened(tmp_path):
    require_chromium()
    run = CliRun("live_chat_da", tmp_path, [
        "conf=offline_small", "mephisto.architect.port=3311", "mephisto.task.task_name=lcda_pace",
        "mephisto.blueprint.num_conversations=1", "live_chat.seed=0", "live_chat.min_inputs=3"])
    first = ["I have been reading a lot of books lately", "Mostly crime novels and some history"]
    try:
        with chromium_page(tmp_path) as page:
            url = run.worker_url("pace_worker")
            page.goto(url)
            start_topic(page, "books")
            chat(page, first)
            tab = page.context.new_page()  # the worker closes the tab by mistake and opens the link again
            tab.on("dialog", lambda dialog: dialog.accept())
            page.close()
            pause(tab, 3)
            tab.goto(url)
            tab.wait_for_selector("[data-testid=chat-panel]", timeout=60000)
            tab.wait_for_function("document.querySelectorAll('.dialeval-msg-other').length >= 2")
            # the worker's own messages are theirs again, in order, and the bot's replies are the bot's
            assert [t.strip() for t in tab.locator(".dialeval-msg-self").all_inner_texts()] == [
                f"You: {text}" for text in first]
            assert all(t.strip().startswith("Chatbot: ") for t in tab.locator(".dialeval-msg-other").all_inner_texts())
            assert tab.locator(".dialeval-msg-other").count() == 2
            assert tab.inner_text("[data-testid=input-count]") == "Your inputs: 2 (minimum 3)"
            assert server_inputs(run.data_dir, 0) == 2
            pause(tab, 2)
            tab.click("[data-testid=next-chatbot]")  # the server has 2 of 3 inputs: refused, and it says why
            assert "(you have typed 2)" in tab.inner_text("[data-testid=warning]")
            chat(tab, ["What else would you recommend?"])
            assert tab.inner_text("[data-testid=input-count]") == "Your inputs: 3 (minimum 3)"
            assert tab.locator("[data-testid=warning]").count() == 0  # the old refusal is gone
            tab.click("[data-testid=next-chatbot]")
            rate(tab, 70)
            for slot, topic in ((1, "football"), (2, "cooking")):
                start_topic(tab, topic)
                chat(tab, [f"{topic} is great {i}" for i in range(3)])
                tab.click("[data-testid=next-chatbot]")
                rate(tab, 40 + slot)
            tab.wait_for_selector("[data-testid=feedback-form]")
            pause(tab, 3)
            tab.fill("#feedback", "took my time")
            tab.click("[data-testid=send-feedback]")
            tab.click("[data-testid=submit-hit]", timeout=30000)
            pause(tab, 1.5)
            assert_still_active(tab)
        run.proc.wait(120)
    finally:
        run.stop()

    out = tmp_path / "lcda.jsonl"
    done = dialeval("export", "lcda_pace", "--out", str(out), "--mephisto-data", str(run.data_dir))
    assert "1 unit(s) read (1 completed)" in done.stdout
    data = read_jsonl([out])
    convs = data.conversations.sort_values("slot")
    assert list(convs["status"]) == ["complete"] * 3
    human = [t["text"] for t in convs.iloc[0]["turns"] if t["speaker"] == "human"]
    assert human == first + ["What else would you recommend?"]  # nothing lost or doubled by the reopening
    assert len(data.ratings) == 21


def test_sm_eval_at_human_pace_with_a_long_pause(tmp_path):
    require_chromium()
    run = CliRun("sm_eval", tmp_path, ["mephisto.architect.port=3312", "mephisto.task.task_name=sm_pace",
                                       "mephisto.blueprint.num_conversations=1", "sm_eval.seed=0",
                                       "sm_eval.num_turns=3", "~sm_eval.models.retrieval"])
    try:
        with chromium_page(tmp_path) as page:
            page.goto(run.worker_url("pace_worker"))
            for turn, mark in enumerate(["engaging", "interesting", "none"]):
                page.wait_for_selector("[data-testid=annotate]", timeout=60000)
                pause(page, LOOK_AWAY if turn == 0 else 3)  # the worker is called away once, mid-task
                assert_still_active(page)
                page.check(f"[data-testid=mark-{mark}]")
                pause(page, 2)
                page.click("[data-testid=submit-marks]")
                if turn < 2:
                    page.wait_for_selector(".response-text-input", timeout=30000)
                    pause(page, 3)  # thinking of a reply
                    page.fill(".response-text-input", f"I went hiking with my dogs on day {turn}")
                    pause(page, 1)
                    page.click(".submit-response")
            page.wait_for_selector("[data-testid=rate]", timeout=30000)
            for criterion, value in (("engaging", 4), ("humanlike", 3), ("interesting", 5)):
                pause(page, 2)
                page.check(f"[data-testid=likert-{criterion}-{value}]")
            page.click("[data-testid=submit-ratings]")
            page.click("[data-testid=submit-hit]", timeout=60000)
            pause(page, 1.5)
            assert_still_active(page)
        run.proc.wait(120)
    finally:
        run.stop()

    out = tmp_path / "sm.jsonl"
    dialeval("export", "sm_pace", "--out", str(out), "--mephisto-data", str(run.data_dir))
    data = read_jsonl([out])
    assert list(data.conversations["status"]) == ["complete"] and len(data.conversations.iloc[0]["turns"]) == 6
    binary = data.ratings[data.ratings["scale"] == "binary"]
    assert binary.groupby("turn_index")["value"].sum().to_dict() == {1: 1, 3: 1, 5: 0}
    likert = data.ratings[data.ratings["scale"] == "likert"].set_index("criterion")["value"].to_dict()
    assert likert == {"engaging": 4, "humanlike": 3, "interesting": 5}


def test_pw_turn_with_onboarding_at_human_pace(tmp_path):
    require_chromium()
    run = CliRun("pw_turn", tmp_path, ["mephisto.architect.port=3313", "mephisto.task.task_name=pwt_pace",
                                       "mephisto.blueprint.num_conversations=1", "pw_turn.seed=0",
                                       "pw_turn.num_turns=2"])
    try:
        with chromium_page(tmp_path) as page:
            page.goto(run.worker_url("pace_worker"))
            page.wait_for_selector("[data-testid=onboarding]", timeout=60000)
            pause(page, 4)  # reading the practice dialogue
            onboarding(page, correct=False)
            page.wait_for_function("document.querySelector('[data-testid=warning]') && "
                                   "document.querySelector('[data-testid=warning]').textContent.includes('last try')")
            pause(page, 4)
            onboarding(page, correct=True)
            finish = page.locator("[data-testid=finish-onboarding]")
            finish.wait_for(timeout=30000)
            pause(page, 2)
            finish.click()
            assert finish.is_disabled()  # a second click cannot submit the onboarding twice
            for turn in range(2):
                page.wait_for_selector("[data-testid=choose-panel]", timeout=60000)
                pause(page, 3)  # reading both candidates
                page.check("[data-testid=choose-left]")
                page.fill("[data-testid=justification]", f"more natural {turn}")
                pause(page, 2)
                page.click("[data-testid=submit-choice]")
                if turn < 1:
                    page.wait_for_selector(".response-text-input", timeout=30000)
                    pause(page, 3)
                    page.fill(".response-text-input", f"what do you do at weekends {turn}")
                    page.click(".submit-response")
            page.click("[data-testid=submit-hit]", timeout=60000)
            pause(page, 1.5)
            assert_still_active(page)
        run.proc.wait(120)
    finally:
        run.stop()

    out = tmp_path / "pwt.jsonl"
    dialeval("export", "pwt_pace", "--out", str(out), "--mephisto-data", str(run.data_dir))
    data = read_jsonl([out])
    is_onboarding = data.comparisons["onboarding"].eq(True)
    assert sorted(m["try"] for m in data.comparisons[is_onboarding]["meta"]) == [1] * 4 + [2] * 4
    comps = data.comparisons[~is_onboarding]
    assert list(comps.sort_values("turn_index")["justification"]) == ["more natural 0", "more natural 1"]
    assert list(data.conversations["status"]) == ["complete"]
