"""SM-Turn + SM-Dialog end to end in a real browser: `dialeval launch sm_eval`, a worker in headless
Chromium chats at a person's pace (2-3 s to read or think before each action, and once 35 s away from
the tab), ticks every partner message and rates; `dialeval export` writes a valid canonical file;
`dialeval analyze_single_model` reports on it. Issue 20: the task once timed out any worker who paused
for about one second. Again in Hebrew (sm_eval.language=he) on a small phone (360x740): the page runs right to
left with its words, the server's questions and labels translated by the catalogue (issue 41)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.testing.ports import free_port

from .browser_page import SMALL_PHONE, chromium_page, look_at, require_chromium
from .protocol_harness import CliRun, assert_still_active, dialeval, pause, rate_partner_and_submit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(400)]
MARKS = [["engaging"], ["none"], ["humanlike", "interesting"]]
LOOK_AWAY = 35  # seconds: longer than Mephisto's heartbeat and reconnect windows (6-20 s)
HEBREW = json.loads((Path(__file__).resolve().parents[2] / "crowdsourcing" / "frontend" / "src" / "i18n" / "he.json").read_text())


@pytest.mark.parametrize("language", ["en", "he"])
def test_sm_eval_in_chromium_then_export_and_analyze(tmp_path, language):
    require_chromium()
    hebrew = language == "he"
    run = CliRun("sm_eval", tmp_path, [f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=sm_e2e",
                                       "mephisto.blueprint.num_conversations=1", "sm_eval.seed=0",
                                       "sm_eval.num_turns=3", "~sm_eval.models.retrieval", f"sm_eval.language={language}"])
    try:
        # on a phone, the desktop is the other tests'; Hebrew on a smaller one
        with chromium_page(tmp_path, phone=SMALL_PHONE if hebrew else True) as page:
            page.goto(run.worker_url("e2e_worker"))
            for turn, marks in enumerate(MARKS):
                page.wait_for_selector("[data-testid=annotate]", timeout=60000)
                if turn == 0 and hebrew:
                    assert page.evaluate("[document.documentElement.dir, document.documentElement.lang]") == ["rtl", "he"]
                    annotate = page.inner_text("[data-testid=annotate]")
                    assert HEBREW["sm_eval.annotate"] in annotate and HEBREW["server.label_engaging"] in annotate
                    look_at(page, "sm_eval_annotate_hebrew")
                elif turn == 0:
                    look_at(page, "sm_eval_annotate")
                assert page.locator("[data-testid=persona] li").count() == 2  # a persona to play
                pause(page, LOOK_AWAY if turn == 1 and not hebrew else 3)  # reading; once called away mid-task
                assert_still_active(page)
                for mark in marks:
                    page.check(f"[data-testid=mark-{mark}]")
                pause(page, 2)
                page.click("[data-testid=submit-marks]")
                if turn < 2:
                    page.wait_for_selector(".response-text-input", timeout=30000)
                    if turn == 0:
                        look_at(page, "sm_eval_chat_hebrew" if hebrew else "sm_eval_chat")
                    pause(page, 3)  # thinking of a reply
                    page.fill(".response-text-input", f"I really enjoy cooking pasta dish {turn}")
                    pause(page, 1)
                    page.click(".submit-response")
            page.wait_for_selector("[data-testid=rate]", timeout=30000)
            if hebrew:
                assert HEBREW["server.likert_engaging"] in page.inner_text("[data-testid=rate]")
                look_at(page, "sm_eval_rate_hebrew")
            else:
                look_at(page, "sm_eval_rate")
                assert ("How much would you like to talk to your partner for a long conversation?"
                        in page.inner_text("[data-testid=rate]"))
            rate_partner_and_submit(page, {"engaging": 4, "humanlike": 2, "interesting": 5}, think=2)
        run.proc.wait(120)
    finally:
        run.stop()

    out = tmp_path / "sm.jsonl"
    run.export("sm_e2e", out)
    data = read_jsonl([out])
    conv = data.conversations.iloc[0]
    # repeat_query echoes: Hi! Hi! then each typed message twice
    assert [t["text"] for t in conv["turns"]][:2] == ["Hi!", "Hi!"] and len(conv["turns"]) == 6
    assert conv["personas"]["human"] and conv["duration"] > 0
    binary = data.ratings[data.ratings["scale"] == "binary"]
    assert binary.groupby("turn_index")["value"].sum().to_dict() == {1: 1, 3: 0, 5: 2}
    likert = data.ratings[data.ratings["scale"] == "likert"].set_index("criterion")["value"].to_dict()
    assert likert == {"engaging": 4, "humanlike": 2, "interesting": 5}
    report = tmp_path / "analysis"
    dialeval("analyze_single_model", "--data", str(out), "--out", str(report), "--n-boot", "50")
    assert (report / "report.html").is_file()
