"""A participant on a small phone (360x740, touch; each screen also checked at 390x844) with only a keyboard
completes a live-chat HIT in headless Chromium at a person's pace: the task comes before the instructions, nothing scrolls sideways, axe-core
finds no serious or critical violation on any screen, Enter pressed twice sends one message, the go-on
note shows once the minimum is typed, the conversation can be reread while rating, every slider says
whether it was moved (with no arrow keys to mention on a phone), and the last screen says what happens next (and,
once sent, no longer asks for the press). The export holds what was typed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from parlai_dialeval.testing.ports import free_port

from .browser_page import SMALL_PHONE, chromium_page, look_at, require_chromium, tab_to
from .protocol_harness import CliRun, pause, set_slider, start_live_chat, submit_hit

FRONTEND = Path(__file__).resolve().parents[2] / "crowdsourcing" / "frontend"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(420)
def test_live_chat_on_a_phone_by_keyboard_alone(tmp_path):
    require_chromium()
    run = CliRun("live_chat_da", tmp_path, [
        f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_pages",
        "mephisto.blueprint.num_conversations=1", "live_chat.seed=0", "live_chat.num_slots=3",
        "live_chat.min_inputs=2"])
    try:
        with chromium_page(tmp_path, phone=SMALL_PHONE) as page:
            page.goto(run.worker_url("phone_worker"))
            for slot in range(3):
                page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
                if slot == 0:
                    task_top = page.locator("[data-testid=topic-form]").bounding_box()["y"]
                    assert task_top < page.locator("aside").bounding_box()["y"], "the instructions come first"
                    assert task_top < 740, "the task starts below the first screen"
                    look_at(page, "live_chat_topic")
                tab_to(page, "#topic-input")
                page.keyboard.type("gardening", delay=60)
                tab_to(page, "#attitude-like")
                page.keyboard.press("Space")
                tab_to(page, "[data-testid=start-chat]")
                pause(page, 1)
                page.keyboard.press("Enter")
                page.wait_for_selector("[data-testid=chat-panel]")
                for i in range(2):
                    tab_to(page, ".response-text-input")
                    page.keyboard.type(f"message {i} about tomatoes", delay=60)
                    before = page.locator(".dialeval-msg-other").count()
                    page.keyboard.press("Enter")
                    page.keyboard.press("Enter")  # pressed twice: the box is empty, nothing more is sent
                    page.wait_for_function(
                        f"document.querySelectorAll('.dialeval-msg-other').length > {before}", timeout=60000)
                    pause(page, 1)
                assert page.locator(".dialeval-msg-self").count() == 2
                assert page.locator("[data-testid=msg-pending]").count() == 0
                page.wait_for_selector("[data-testid=may-go-on]")
                if slot == 0:
                    mine = page.locator(".dialeval-msg-self .dialeval-bubble").first.bounding_box()
                    theirs = page.locator(".dialeval-msg-other .dialeval-bubble").first.bounding_box()
                    assert mine["x"] + mine["width"] > theirs["x"] + theirs["width"], "both bubbles on one side"
                    look_at(page, "live_chat_chat")
                tab_to(page, "[data-testid=next-chatbot]")
                page.keyboard.press("Enter")
                page.wait_for_selector("[data-testid=rating-form]")
                tab_to(page, ".dialeval-reread summary")  # the conversation, reread while rating
                page.keyboard.press("Enter")
                assert "message 1 about tomatoes" in page.locator(".dialeval-reread").inner_text()
                sliders = page.locator("[data-testid=rating-form] input[type=range]")
                assert sliders.count() == 7
                for k in range(7):
                    hint = page.inner_text(f"[data-testid=slider-state-{k}]")
                    assert hint.startswith("Not answered yet") and "arrow keys" not in hint  # a phone has none
                    tab_to(page, f"#slider-{k}")
                    page.keyboard.press("ArrowRight")
                    assert page.inner_text(f"[data-testid=slider-state-{k}]") == "Your answer: 51 of 100"
                if slot == 0:
                    look_at(page, "live_chat_rating")
                tab_to(page, "[data-testid=submit-ratings]")
                page.keyboard.press("Enter")
            page.wait_for_selector("[data-testid=feedback-form]")
            look_at(page, "live_chat_feedback")
            tab_to(page, "#feedback")
            page.keyboard.type("All fine.", delay=60)
            tab_to(page, "[data-testid=send-feedback]")
            page.keyboard.press("Enter")
            page.wait_for_selector("[data-testid=submit-panel]", timeout=30000)
            look_at(page, "live_chat_done")
            tab_to(page, "[data-testid=submit-hit]")
            page.keyboard.press("Enter")
            assert "You can close this tab now" in page.inner_text("[data-testid=after-submit]")
            assert "Press the button" not in page.inner_text("[data-testid=submit-panel]")  # sent: nothing to press
        run.proc.wait(120)  # one unit: the run ends by itself once it is submitted
    finally:
        run.stop()
    out = tmp_path / "out.jsonl"
    run.export("lcda_pages", out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    convs = [r for r in records if r["type"] == "conversation"]
    assert len(convs) == 3
    for conv in convs:  # Enter twice sent each message once
        assert [t["text"] for t in conv["turns"] if t["speaker"] == "human"] == [
            "message 0 about tomatoes", "message 1 about tomatoes"]
    assert sorted({r["value"] for r in records if r["type"] == "rating"}) == [51]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(420)
def test_live_chat_in_hebrew_reads_right_to_left(tmp_path):
    """The study's language is Hebrew (live_chat.language=he, the shipped right-to-left catalogue): the page's
    words come from it, the page runs right to left (text aligned to the right, each attitude radio beside its
    answer rather than on its first letter: issue 50, item 12; the participant's bubbles on the left, the chatbot's
    on the right), an English message keeps its own direction, and a participant completes the HIT, every screen
    looked at on a desktop and a phone (look_at). Their first press of Submit is lost on the way: the page says the
    work was not sent and they press again; reloaded, the finished page says the work was sent already (also when
    it has forgotten it and the router refuses the second submission). A second participant is mid-chat when the
    researcher stops the study: their page says so in Hebrew, in the catalogue's words, not Mephisto's English (issue 50, item 11)."""
    require_chromium()
    he = json.loads((FRONTEND / "src" / "i18n" / "he.json").read_text())
    run = CliRun("live_chat_da", tmp_path, [
        f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_hebrew",
        "mephisto.blueprint.num_conversations=2", "live_chat.seed=0", "live_chat.num_slots=3",
        "live_chat.min_inputs=1", "live_chat.language=he"])
    try:
        with chromium_page(tmp_path / "first", phone=True) as page:  # touch: the slider hints of a phone
            page.goto(run.worker_url("hebrew_worker"))
            for slot in range(3):
                page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
                assert page.evaluate("[document.documentElement.dir, document.documentElement.lang]") == ["rtl", "he"]
                assert page.inner_text("label[for=topic-input]") == he["live_chat.topic_question"]
                if slot == 0:
                    assert page.evaluate("getComputedStyle(document.querySelector('legend')).textAlign") == "right"
                    look_at(page, "live_chat_topic_hebrew")
                page.fill("#topic-input", "גינון")
                page.check("#attitude-like")
                pause(page, 1)
                page.click("[data-testid=start-chat]")
                page.wait_for_selector("[data-testid=chat-panel]")
                page.fill(".response-text-input", "What grows well in the shade?")
                page.click(".submit-response")
                page.wait_for_selector(".dialeval-msg-other", timeout=60000)
                if slot == 0:
                    mine = page.locator(".dialeval-msg-self .dialeval-bubble").first.bounding_box()
                    theirs = page.locator(".dialeval-msg-other .dialeval-bubble").first.bounding_box()
                    assert mine["x"] < theirs["x"], "right to left: the participant's bubble is on the left"
                    assert page.locator(".dialeval-msg-self bdi").first.inner_text() == "What grows well in the shade?"
                    assert he["live_chat.go_on"] in page.inner_text("[data-testid=may-go-on]")
                    look_at(page, "live_chat_chat_hebrew")
                page.click("[data-testid=next-chatbot]")
                page.wait_for_selector("[data-testid=rating-form]")
                if slot == 0:
                    statement = page.locator(".dialeval-statement").first
                    assert statement.evaluate("e => getComputedStyle(e).textAlign") == "right"
                    look_at(page, "live_chat_rating_hebrew")
                sliders = page.locator("[data-testid=rating-form] input[type=range]")
                for k in range(sliders.count()):
                    set_slider(sliders.nth(k), 30)
                page.click("[data-testid=submit-ratings]")
            page.wait_for_selector("[data-testid=feedback-form]")
            look_at(page, "live_chat_feedback_hebrew")
            page.click("[data-testid=send-feedback]")
            page.wait_for_selector("[data-testid=submit-panel]", timeout=30000)
            look_at(page, "live_chat_done_hebrew")
            assert page.locator("[data-testid=resume-code]").count() == 1  # the way back, while the work is not sent
            # the first submission never reaches the server (the network dropped it): the page says it was not sent
            # and the same button sends it again
            page.route("**/submit_task", lambda route: route.abort(), times=1)
            page.click("[data-testid=submit-hit]")
            assert page.wait_for_selector("[data-testid=not-sent]").inner_text().strip() == he["submit.not_sent"]
            assert page.locator("[data-testid=after-submit]").count() == 0
            look_at(page, "live_chat_not_sent_hebrew")
            submit_hit(page)
            panel = page.inner_text("[data-testid=submit-panel]")
            assert he["submit.sent"] in panel and he["submit.press"] not in panel  # issue 50, item 14
            assert page.locator("[data-testid=resume-code]").count() == 0  # nothing left to come back to
            # the finished page reloaded: it says the work went, and offers no button to send it again
            page.reload()
            assert page.wait_for_selector("[data-testid=after-submit]", timeout=60000).inner_text() == he["submit.already_sent"]
            assert page.locator("[data-testid=submit-hit]").count() == 0
            look_at(page, "live_chat_already_sent_hebrew")
            # the same without what the page kept (another tab, storage cleared): the button, and the router's
            # refusal of a second submission is said as the work having been sent already
            page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('dialeval_kept:sent:'))"
                          ".forEach((k) => localStorage.removeItem(k))")
            page.reload()
            page.click("[data-testid=submit-hit]", timeout=60000)
            assert page.wait_for_selector("[data-testid=after-submit]").inner_text() == he["submit.already_sent"]
            assert page.locator("[data-testid=submit-hit]").count() == 0
            # on Prolific (its wrapper names the way back) the finished page links back there: a tab closed before
            # the redirect would otherwise leave the participant without the way to their completion
            back = "https://app.prolific.com/submissions/complete?cc=ABC"
            page.add_init_script(f"window.DIALEVAL_PROLIFIC = {{completionUrl: {json.dumps(back)}}};")
            page.reload()
            link = page.wait_for_selector("[data-testid=back-to-prolific]", timeout=60000)
            assert link.get_attribute("href") == back and link.inner_text() == he["submit.back_to_prolific"]
            assert he["submit.already_sent_prolific"] in page.inner_text("[data-testid=after-submit]")
            look_at(page, "live_chat_back_to_prolific_hebrew")
        with chromium_page(tmp_path / "second") as page:
            page.goto(run.worker_url("stopped_worker"))
            start_live_chat(page, "גינון")
            page.fill(".response-text-input", "שלום")
            page.click(".submit-response")
            page.wait_for_selector(".dialeval-msg-other", timeout=60000)
            run.stop()  # the researcher stops the study (Ctrl-C twice) while this participant chats
            ended = page.wait_for_selector("[data-testid=inactive]", timeout=30000).inner_text()
            assert ended == he["ended.stopped"]
            look_at(page, "live_chat_ended_hebrew")
    finally:
        run.stop()
    out = tmp_path / "out.jsonl"
    run.export("lcda_hebrew", out)
    convs = [r for line in out.read_text().splitlines() for r in [json.loads(line)] if r["type"] == "conversation"]
    done = [c for c in convs if c["worker_id"] == "hebrew_worker_sandbox"]
    assert [c["status"] for c in done] == ["complete"] * 3 and {c["topic"] for c in done} == {"גינון"}
    assert {c["submission"] for c in done} == {"submitted"} and len({c["assignment_id"] for c in done}) == 1
    assert run.log().count("unit already submitted (replay)") == 1  # the second press, refused by the router
    stopped = [c for c in convs if c["worker_id"] == "stopped_worker_sandbox"]
    assert [t["text"] for c in stopped for t in c["turns"] if t["speaker"] == "human"] == ["שלום"]  # kept


def test_a_language_without_a_catalogue_is_refused_with_the_ones_there_are():
    from parlai_dialeval.crowdsourcing.platform.frontend import page_language
    from parlai_dialeval.errors import DialevalError

    assert page_language("he") == "he"
    with pytest.raises(DialevalError, match=r"no worker-page catalogue for language 'xx': the pages have en, he"):
        page_language("xx")
