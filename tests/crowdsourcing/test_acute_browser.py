"""ACUTE-Eval end to end in a real browser: `dialeval launch acute` over a file of self-chats, a scripted
worker in headless Chromium passes onboarding and judges a unit of pairs (the browser receives no model
name), `dialeval export` (task read from the run) writes a valid file with the compared conversations and
the onboarding attempt, `dialeval analyze_pairwise` reports on it, onboarding set aside. Again in Hebrew
(acute.language=he): each screen looked at right to left on a desktop and a phone."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from parlai_dialeval.data import read_jsonl, write_jsonl
from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, look_at, require_chromium
from .protocol_harness import CliRun, assert_blind, dialeval

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(400)]
GOOD_TEXT = "I love talking about books, what are you reading?"
HEBREW = json.loads((Path(__file__).resolve().parents[2] / "crowdsourcing" / "frontend" / "src" / "i18n" / "he.json").read_text())


def self_chats(path):
    rows = []
    for model, text in (("good_bot", GOOD_TEXT), ("bad_bot", "no.")):
        for i in range(3):
            rows.append({"type": "conversation", "id": f"{model}_{i}", "models": [model], "task": "self_chat",
                         "turns": [{"speaker": model, "text": f"Hi number {i}"}, {"speaker": model, "text": text}]})
    write_jsonl(rows, path)


GOOD_MARKERS = ("Yes, I have two cats", "I baked bread", GOOD_TEXT)  # onboarding pairs 0 and 1, then ours


def judge(page, good: bool = True, pause_ms: int = 200, submit: str = "Submit") -> None:
    """Pick the side whose conversation holds a good speaker's line (``good=False``: the other side), for
    every pair shown, reading each for ``pause_ms``; submit (the last pair's button reads ``submit``)."""
    while True:
        page.wait_for_selector("[data-testid=pair]", timeout=60000)
        page.wait_for_timeout(pause_ms)
        left = page.inner_text("[data-testid=conversation-left]")
        good_left = any(marker in left for marker in GOOD_MARKERS)
        page.check("[data-testid=choose-left]" if good_left == good else "[data-testid=choose-right]")
        page.fill("[data-testid=justification]", "more engaging")
        last = page.inner_text("[data-testid=next-pair]") == submit
        page.click("[data-testid=next-pair]")
        if last:
            return
        page.wait_for_timeout(200)


def launch(tmp_path, port: int, task_name: str, *extra: str) -> CliRun:
    """`dialeval launch acute` over two models' self-chats: one unit of three pairs (``extra``: more overrides)."""
    require_chromium()
    convs = tmp_path / "self_chats.jsonl"
    self_chats(convs)
    return CliRun("acute", tmp_path, [f"mephisto.architect.port={port}", f"mephisto.task.task_name={task_name}",
                                      f"acute.conversations=[{convs}]", "acute.seed=2", "acute.matchups_per_pair=3",
                                      "acute.subtasks_per_unit=3", *extra])


@pytest.mark.parametrize("language", ["en", "he"])
def test_acute_in_chromium_then_export_and_analyze(tmp_path, language):
    hebrew = language == "he"
    submit = HEBREW["common.submit"] if hebrew else "Submit"
    practice = HEBREW["acute.practice"] if hebrew else "Practice round"
    run = launch(tmp_path, free_port(), "acute_e2e", f"acute.language={language}")
    try:
        with chromium_page(tmp_path) as page:
            # the router's answers that carry init data: the onboarding's, then the unit's
            answers = []
            page.on("response", lambda r: answers.append(r) if r.url.endswith(("/request_agent",
                                                                              "/submit_onboarding")) else None)
            page.goto(run.worker_url("e2e_worker"))
            page.wait_for_selector("[data-testid=pair]", timeout=60000)
            assert practice in page.inner_text("body")
            look_at(page, "acute_practice_hebrew" if hebrew else "acute_practice")
            judge(page, submit=submit)  # onboarding, all right: the unit follows on the same page
            page.wait_for_function(f"!document.body.innerText.includes({json.dumps(practice)})", timeout=60000)
            look_at(page, "acute_pair_hebrew" if hebrew else "acute_pair")
            judge(page, submit=submit)
            page.wait_for_selector("[data-testid=done]", timeout=30000)
            look_at(page, "acute_done_hebrew" if hebrew else "acute_done")
            page.wait_for_timeout(1500)
            received = [r.text() for r in answers]
        assert len(received) == 2 and all("init_task_data" in text for text in received), received
        assert_blind(received, ("good_bot", "bad_bot", "onboarding_good", "onboarding_bad"))
        run.proc.wait(120)
    finally:
        run.stop()

    out = tmp_path / "acute.jsonl"
    exported = dialeval("export", "acute_e2e", "--out", str(out), "--mephisto-data", str(run.data_dir))
    assert "1 onboarding attempt(s) read" in exported.stdout
    data = read_jsonl([out])
    onboarding = data.comparisons["onboarding"].eq(True)
    assert onboarding.sum() == 2  # the two known-answer pairs, both right
    for row in data.comparisons[onboarding].itertuples():
        assert (row.model_a if row.choice == "a" else row.model_b) == "onboarding_good"
    comps = data.comparisons[~onboarding]
    assert len(comps) == 3 and set(comps["worker_id"]) == {"e2e_worker_sandbox"}
    for row in comps.itertuples():
        assert (row.model_a if row.choice == "a" else row.model_b) == "good_bot"
    every = data.comparisons  # onboarding comparisons' dialogues are exported too
    assert set(every["conversation_a"]) | set(every["conversation_b"]) <= set(data.conversations["id"])
    report = tmp_path / "analysis"
    analysed = dialeval("analyze_pairwise", "--data", str(out), "--out", str(report), "--bootstrap-rounds", "50")
    assert "2 onboarding excluded" in analysed.stdout + analysed.stderr
    assert "good_bot" in (report / "win_rates.csv").read_text()
