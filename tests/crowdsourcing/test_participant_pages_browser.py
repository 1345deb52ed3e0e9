"""A participant on a phone (390x844, touch) with only a keyboard completes a live-chat HIT in headless
Chromium at a person's pace: the task comes before the instructions, nothing scrolls sideways, axe-core
finds no serious or critical violation on any screen, Enter pressed twice sends one message, the go-on
note shows once the minimum is typed, the conversation can be reread while rating, every slider says
whether it was moved, and the last screen says what happens next. The export holds what was typed."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.testing.real_model import free_port

from .protocol_harness import (
    CliRun, chromium_page, horizontal_overflow, pause, require_chromium, serious_accessibility_violations, tab_to)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(420)]


def check_screen(page, screen: str, seen: dict) -> None:
    """What every screen must be: usable at phone width, and accessible."""
    assert horizontal_overflow(page) <= 0, f"{screen}: the page scrolls sideways"
    seen[screen] = serious_accessibility_violations(page)


def test_live_chat_on_a_phone_by_keyboard_alone(tmp_path):
    require_chromium()
    run = CliRun("live_chat_da", tmp_path, [
        f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=lcda_pages",
        "mephisto.blueprint.num_conversations=1", "live_chat.seed=0", "live_chat.num_slots=3",
        "live_chat.min_inputs=2"])
    violations = {}
    try:
        with chromium_page(tmp_path, phone=True) as page:
            page.goto(run.worker_url("phone_worker"))
            for slot in range(3):
                page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
                if slot == 0:
                    task_top = page.locator("[data-testid=topic-form]").bounding_box()["y"]
                    assert task_top < page.locator("aside").bounding_box()["y"], "the instructions come first"
                    assert task_top < 844, "the task starts below the first screen"
                    check_screen(page, "topic", violations)
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
                    check_screen(page, "chat", violations)
                tab_to(page, "[data-testid=next-chatbot]")
                page.keyboard.press("Enter")
                page.wait_for_selector("[data-testid=rating-form]")
                tab_to(page, ".dialeval-reread summary")  # the conversation, reread while rating
                page.keyboard.press("Enter")
                assert "message 1 about tomatoes" in page.locator(".dialeval-reread").inner_text()
                sliders = page.locator("[data-testid=rating-form] input[type=range]")
                assert sliders.count() == 7
                for k in range(7):
                    assert page.inner_text(f"[data-testid=slider-state-{k}]").startswith("Not answered yet")
                    tab_to(page, f"#slider-{k}")
                    page.keyboard.press("ArrowRight")
                    assert page.inner_text(f"[data-testid=slider-state-{k}]") == "Your answer: 51 of 100"
                if slot == 0:
                    check_screen(page, "rating", violations)
                tab_to(page, "[data-testid=submit-ratings]")
                page.keyboard.press("Enter")
            page.wait_for_selector("[data-testid=feedback-form]")
            check_screen(page, "feedback", violations)
            tab_to(page, "#feedback")
            page.keyboard.type("All fine.", delay=60)
            tab_to(page, "[data-testid=send-feedback]")
            page.keyboard.press("Enter")
            page.wait_for_selector("[data-testid=submit-panel]", timeout=30000)
            check_screen(page, "done", violations)
            tab_to(page, "[data-testid=submit-hit]")
            page.keyboard.press("Enter")
            assert "You can close this tab now" in page.inner_text("[data-testid=after-submit]")
        run.proc.wait(120)  # one unit: the run ends by itself once it is submitted
    finally:
        run.stop()
    assert violations and not any(violations.values()), violations
    out = tmp_path / "out.jsonl"
    run.export("lcda_pages", out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    convs = [r for r in records if r["type"] == "conversation"]
    assert len(convs) == 3
    for conv in convs:  # Enter twice sent each message once
        assert [t["text"] for t in conv["turns"] if t["speaker"] == "human"] == [
            "message 0 about tomatoes", "message 1 about tomatoes"]
    assert sorted({r["value"] for r in records if r["type"] == "rating"}) == [51]
