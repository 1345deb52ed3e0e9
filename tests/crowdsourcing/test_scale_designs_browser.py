"""Rating-scale designs end to end in a real browser: `dialeval launch scale_designs` (the RME design;
the others are covered without a browser), a scripted worker in headless Chromium rates the items and answers the prior-experience
questions on a small phone (360x740; look_at checks each screen at 390x844 too), `dialeval export` writes a
valid file, `dialeval analyze_scales` reports on it. Again in Hebrew (scale_designs.language=he): each screen looked
at right to left on a desktop and a phone."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.testing.ports import free_port

from .browser_page import SMALL_PHONE, chromium_page, look_at, require_chromium
from .protocol_harness import CliRun, dialeval

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(400)]
# hred's reply in markdown: the page shows it rendered ("hiking" in bold, issue 50 item 14), not "**hiking**"
RESPONSES = {"s2s": "i i i", "hred": "Good, I went **hiking** by the lake.", "vhred": "Fine."}
RME_VALUE = {"Good, I went hiking by the lake.": 250, "Fine.": 90, "i i i": 3}
HEBREW = json.loads((Path(__file__).resolve().parents[2] / "crowdsourcing" / "frontend" / "src" / "i18n" / "he.json").read_text())
ENGLISH = json.loads((Path(__file__).resolve().parents[2] / "crowdsourcing" / "frontend" / "src" / "i18n" / "en.json").read_text())


@pytest.mark.parametrize("language", ["en", "he"])
def test_rme_in_chromium_then_export_and_analyze(tmp_path, language):
    require_chromium()
    hebrew = language == "he"
    words = HEBREW if hebrew else ENGLISH
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"i{n}", "context": ["How was your day?"],
                                         "reference": "It was great, thanks.", "responses": RESPONSES}) + "\n"
                             for n in range(2)))
    port = free_port()
    run = CliRun("scale_designs", tmp_path, [
        f"mephisto.architect.port={port}", "mephisto.task.task_name=sd_e2e", "mephisto.blueprint.units_per_assignment=1",
        f"scale_designs.items_file={items}", "scale_designs.design=rme", "scale_designs.seed=0",
        f"scale_designs.language={language}"])
    try:
        with chromium_page(tmp_path, phone=SMALL_PHONE) as page:  # on a phone: the desktop is the other tests'
            page.goto(run.worker_url("e2e_worker"))
            for n in range(2):
                page.wait_for_selector("[data-testid=scale-item]", timeout=60000)
                if n == 0:
                    look_at(page, "scale_designs_rme_hebrew" if hebrew else "scale_designs_rme")
                assert page.inner_text("[data-testid=anchor-readability]") == words["scale.anchor"].format(
                    anchor=100, min=0, max=999)
                if n == 0:  # out-of-range numbers are refused with the allowed range shown next to them
                    page.fill("[data-testid=readability-value-0]", "-5")
                    page.fill("[data-testid=readability-value-1]", "1500")
                    for i in (0, 1):
                        assert page.inner_text(f"[data-testid=readability-value-{i}-error]") == (
                            words["scale.out_of_range"].format(min=0, max=999))
                    assert page.locator("[data-testid=readability-value-2-error]").count() == 0  # still empty
                    assert page.is_disabled("[data-testid=next-item]")
                    assert page.inner_text("[data-testid=next-hint]") == words["scale.hint_values"].format(min=0, max=999)
                for criterion in ("readability", "coherence"):
                    box = f"[data-testid=criterion-{criterion}]"
                    for i in range(3):
                        text = page.inner_text(f"{box} [data-testid=response-{i}]").strip()
                        if "hiking" in text:
                            assert page.inner_text(f"{box} [data-testid=response-{i}] strong") == "hiking"
                        page.fill(f"[data-testid={criterion}-value-{i}]", str(RME_VALUE[text]))
                assert page.locator("[data-testid=readability-value-0-error]").count() == 0
                assert page.locator("[data-testid=next-hint]").count() == 0
                page.click("[data-testid=next-item]")
            page.wait_for_selector("[data-testid=prior-questions]")
            look_at(page, "scale_designs_prior_questions_hebrew" if hebrew else "scale_designs_prior_questions")
            page.check("[data-testid=prior_experience_evaluating-no]")
            page.check("[data-testid=prior_experience_agents-yes]")
            page.click("[data-testid=submit-scales]")
            page.wait_for_selector("[data-testid=done]", timeout=30000)
            page.wait_for_timeout(1500)
        run.proc.wait(120)
    finally:
        run.stop()

    out = tmp_path / "sd.jsonl"
    dialeval("export", "sd_e2e", "--out", str(out), "--mephisto-data", str(run.data_dir))  # task read from the run
    ratings = read_jsonl([out]).ratings
    assert len(ratings) == 12 and set(ratings["reference_value"]) == {100}
    assert ratings.groupby("model")["value"].agg(set).to_dict() == {"hred": {250}, "s2s": {3}, "vhred": {90}}
    meta = ratings["meta"].iloc[0]
    assert meta["prior_experience_evaluating"] is False and meta["prior_experience_agents"] is True
    assert meta["task_duration"] > 0 and ratings["duration"].sum() > 0
    report = tmp_path / "analysis"
    dialeval("analyze_scales", "--data", str(out), "--out", str(report))
    assert (report / "report.html").is_file()
