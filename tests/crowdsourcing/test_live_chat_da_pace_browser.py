"""Live chat at a person's pace with the tab closed and reopened mid-chat (issue 20), in headless Chromium:
`dialeval launch live_chat_da conf=offline_small` (LocalArchitect + node router + MockProvider) and a
worker who reads and thinks for 2-4 s between actions. After the reopening the page must show the
server's state (who said what, the server's input count) and accept "Next chatbot" once the server has
the inputs; the HIT completes and exports with nothing lost or doubled. Answers typed but not sent yet (the topic and
attitude, the sliders, the feedback) are still there after a reload or Back and Forward. A page held 30 s (a phone's
browser in the background) carries on without telling the participant that the server is not answering. (The SM-Eval
and PW-Turn browser tests act at a person's pace too; the SM-Eval one has the pause longer than 30 s.)
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, held, require_chromium, showing
from .protocol_harness import CliRun, pause, set_slider, submit_hit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(400)]


FEEDBACK = "I took my time with every chatbot and read each reply twice."  # longer than the record's slack


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
        pause(page, 2)  # reading the reply


def rate(page, value: int, reload: bool = False) -> None:
    """Every slider at ``value``; with ``reload``, the page is reloaded before the answer is sent: it keeps them."""
    page.wait_for_selector("[data-testid=rating-form]", timeout=30000)
    sliders = page.locator("[data-testid=rating-form] input[type=range]")
    for k in range(sliders.count()):
        set_slider(sliders.nth(k), value)
    if reload:  # in place of the pause before sending
        page.reload()
        page.wait_for_selector("[data-testid=rating-form]", timeout=60000)
        states = page.locator("[data-testid=rating-form] [data-testid^=slider-state-]").all_inner_texts()
        assert states == [f"Your answer: {value} of 100"] * 7
    else:
        pause(page, 2)
    page.click("[data-testid=submit-ratings]")


def start_topic(page, topic: str, reload: bool = False) -> None:
    page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
    pause(page, 2)
    page.fill("#topic-input", topic)
    page.check("#attitude-like")
    if reload:  # the topic and attitude typed are kept across a reload (in place of the pause before starting)
        # beside them, what another participant's page left on this computer two days ago (a shared computer)
        page.evaluate("""localStorage.setItem('dialeval_kept:topic:0?worker_id=someone_else',
                                              JSON.stringify({value: 'their topic', at: Date.now() - 2 * 86400000}))""")
        page.reload()
        page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
        assert page.input_value("#topic-input") == topic and page.is_checked("#attitude-like")
        kept = page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('dialeval_kept:'))")
        assert kept and not [k for k in kept if "someone_else" in k], kept  # forgotten when a page loads
    else:
        pause(page, 2)
    page.click("[data-testid=start-chat]")
    page.wait_for_selector("[data-testid=chat-panel]")


def test_live_chat_at_human_pace_with_the_tab_reopened(tmp_path):
    require_chromium()
    run = CliRun("live_chat_da", tmp_path, [
        "conf=offline_small", f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_pace",
        "mephisto.blueprint.num_conversations=1", "live_chat.seed=0", "live_chat.min_inputs=3"])
    first = ["I have been reading a lot of books lately", "Mostly crime novels and some history"]
    try:
        with chromium_page(tmp_path) as page:
            url = run.worker_url("pace_worker")
            page.goto(url)
            start_topic(page, "books", reload=True)
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
            rate(tab, 70, reload=True)
            for slot, topic in ((1, "football"), (2, "cooking")):
                start_topic(tab, topic)
                if slot == 1:  # the participant looks at another app for 30 s: the phone holds the page meanwhile
                    held(tab, 30)
                    pause(tab, 2)  # the page's overdue heartbeat check has run (mephisto-task: "server not answering")
                    assert "not answering" not in tab.inner_text("body"), showing(tab)
                chat(tab, [f"{topic} is great {i}" for i in range(3)])
                tab.click("[data-testid=next-chatbot]")
                rate(tab, 40 + slot)
            tab.wait_for_selector("[data-testid=feedback-form]")
            pause(tab, 1)
            tab.fill("#feedback", FEEDBACK)
            tab.go_back()  # away from the study and back to it: the feedback typed is still there
            tab.go_forward()
            assert tab.wait_for_selector("#feedback", timeout=60000).input_value() == FEEDBACK
            tab.click("[data-testid=send-feedback]")
            submit_hit(tab)
        run.proc.wait(120)
    finally:
        run.stop()

    out = tmp_path / "lcda.jsonl"
    done = run.export("lcda_pace", out)
    assert "1 unit(s) read (1 completed)" in done.stdout
    data = read_jsonl([out])
    convs = data.conversations.sort_values("slot")
    assert list(convs["status"]) == ["complete"] * 3
    human = [t["text"] for t in convs.iloc[0]["turns"] if t["speaker"] == "human"]
    assert human == first + ["What else would you recommend?"]  # nothing lost or doubled by the reopening
    assert len(data.ratings) == 21
    # the feedback brought back by Back and Forward is accounted for as typed (its record was kept with it), not a
    # text the page never saw written: that doubt would count against an honest participant's integrity
    feedback = convs.iloc[0]
    assert feedback["feedback"] == FEEDBACK
    assert feedback["provenance"]["feedback"]["typed"] == len(FEEDBACK) and "doubts" not in feedback["provenance"]["feedback"]


def test_a_page_held_while_its_server_stopped_answering_says_so_once_let_go(tmp_path):
    # the other side of the held page above: the patience after a pause has an end (mephisto-task's 20 s, then 13 s)
    require_chromium()
    run = CliRun("live_chat_da", tmp_path, [
        "conf=offline_small", f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_held",
        "mephisto.blueprint.num_conversations=1", "live_chat.seed=0", "live_chat.min_inputs=3"])
    try:
        with chromium_page(tmp_path) as page:
            page.goto(run.worker_url("held_worker"))
            start_topic(page, "books")
            run.freeze(True, router=False)
            try:
                held(page, 25)
                page.wait_for_function("document.body.innerText.includes('not answering')", timeout=30000)
            finally:
                run.freeze(False, router=False)
    finally:
        run.stop()
