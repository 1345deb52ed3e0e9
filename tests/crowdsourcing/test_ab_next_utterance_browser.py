"""A/B next-utterance end to end in a real browser: `dialeval launch ab_next_utterance` with a file of
12 response pairs (2 identical), a scripted worker in headless Chromium answers the HIT of 10,
`dialeval export` writes a valid file with the automatic ties, `dialeval analyze_pairwise` reports. The first
submission is lost on the way: the page says the answers were not sent and sends them again at a press. Again in
Hebrew (ab.language=he, a static task's language) on a small phone (360x740): right to left, the page's words and
the server's question from the catalogue (issue 41)."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.testing.ports import free_port

from .browser_page import SMALL_PHONE, chromium_page, look_at, require_chromium
from .protocol_harness import CliRun, dialeval
from .test_page_catalogues import EN
from .test_sm_eval_browser import HEBREW

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(400)]


@pytest.mark.parametrize("language", ["en", "he"])
def test_ab_in_chromium_then_export_and_analyze(tmp_path, language):
    require_chromium()
    hebrew = language == "he"
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({
        "item_id": f"q{i}", "context": [f"first line {i}", f"second line {i}"], "model_a": "parrot",
        "model_b": "echo", "response_a": f"second line {i}" if i in (2, 7) else f"the answer is {i}",
        "response_b": f"second line {i}"}) + "\n" for i in range(12)))
    port = free_port()
    run = CliRun("ab_next_utterance", tmp_path, [
        f"mephisto.architect.port={port}", "mephisto.task.task_name=ab_e2e", "mephisto.blueprint.units_per_assignment=1",
        f"ab.items_file={items}", "ab.seed=1", f"ab.language={language}"])
    try:
        # on a phone, the desktop is the other tests'; Hebrew on a smaller one
        with chromium_page(tmp_path, phone=SMALL_PHONE if hebrew else True) as page:
            page.goto(run.worker_url("e2e_worker"))
            page.wait_for_selector("[data-testid=ab-item]", timeout=60000)
            if hebrew:
                assert page.evaluate("[document.documentElement.dir, document.documentElement.lang]") == ["rtl", "he"]
                assert page.inner_text("[data-testid=question]") == HEBREW["server.ab_question"]
                assert HEBREW["ab.a_better"] in page.inner_text("[data-testid=ab-item]")
                look_at(page, "ab_items_hebrew")
            else:
                look_at(page, "ab_items")
            shown = page.locator("[data-testid=ab-item]")
            assert shown.count() == 10  # 12 pairs, 2 automatic ties never shown
            for i in range(10):
                a_text = shown.nth(i).locator("[data-testid=response-a]").inner_text()
                choice = "tie" if i == 0 else ("a" if a_text.startswith("the answer") else "b")
                page.check(f"[data-testid=ab-{i}-{choice}]")
            page.route("**/submit_task", lambda route: route.abort(), times=1)  # lost on the way to the server
            page.click("[data-testid=submit-ab]")
            failed = page.wait_for_selector("[data-testid=not-sent]", timeout=30000).inner_text()
            assert (HEBREW if hebrew else EN)["submit.not_sent"] in failed
            page.click("[data-testid=send-again]")
            page.wait_for_selector("[data-testid=done]", timeout=30000)
            look_at(page, "ab_done_hebrew" if hebrew else "ab_done")
            page.wait_for_timeout(1500)
    finally:
        run.stop()

    out = tmp_path / "ab.jsonl"
    dialeval("export", "ab_e2e", "--out", str(out), "--mephisto-data", str(run.data_dir))  # task read from the run
    comps = read_jsonl([out]).comparisons
    auto = comps[comps["automatic"] == True]  # noqa: E712  (True or null)
    assert len(auto) == 2 and set(auto["choice"]) == {"tie"}
    worker = comps[comps["worker_id"] == "e2e_worker_sandbox"]
    assert len(worker) == 10 and (worker["choice"] == "tie").sum() == 1
    for row in worker[worker["choice"] != "tie"].itertuples():
        assert (row.model_a if row.choice == "a" else row.model_b) == "parrot"  # the worker always picked "the answer ..."
    report = tmp_path / "analysis"
    dialeval("analyze_pairwise", "--data", str(out), "--out", str(report), "--bootstrap-rounds", "50")
    rates = (report / "win_rates.csv").read_text()
    assert "parrot" in rates and (report / "report.html").is_file()
