"""The optional questionnaire in headless Chromium (issue 54): `dialeval launch arena arena.questionnaire.enabled=true`
with the offline bots, two participants, one battle each. The first, on a desktop 1280 wide, ticks the consent and
answers three of the four questions; the second, on a phone (390x844), chooses an answer without consenting (the
questions stay closed) and submits. `dialeval export` writes the votes unchanged and, apart from them, an owner-only
participants file with the first participant's answers alone; `analyze_pairwise --participants it --by age_band`
reads it, and `dialeval publish` of the export never copies it from beside it. The questionnaire screen is checked as
look_at checks every screen (axe-core, no sideways scroll, no control out of reach or over its label) and pictured
in the test's tmp folder (not the gallery: the screen belongs to no protocol)."""
from __future__ import annotations

import csv
import stat

import pytest

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.testing.ports import free_port

from .browser_page import (
    DESKTOP, PHONE, chromium_page, controls_out_of_reach, controls_over_labels, horizontal_overflow,
    require_chromium, serious_accessibility_violations)
from .protocol_harness import CliRun, dialeval, submit_hit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
# two participants, one battle each, the offline rehearsal bots, every question of the catalogue asked
ASKING_TWO = ["mephisto.task.task_name=arena_q", "mephisto.blueprint.num_conversations=2", "arena.seed=1",
              "arena.min_battles=1", "arena.questionnaire.enabled=true"]


def one_battle_to_the_questionnaire(page, url: str, prompt: str) -> None:
    page.goto(url)
    page.wait_for_selector(".response-text-input", timeout=120000)
    page.click(".response-text-input")
    page.keyboard.type(prompt, delay=40)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=vote-a]:not([disabled])", timeout=120000)
    page.click("[data-testid=vote-a]")
    page.click("[data-testid=end-battle]", timeout=30000)
    page.click("[data-testid=finish]", timeout=30000)
    page.wait_for_selector("[data-testid=questionnaire]", timeout=30000)


def checked_and_pictured(page, path) -> None:
    where = f"the questionnaire at {page.viewport_size}"
    assert horizontal_overflow(page) <= 0, f"{where}: the page scrolls sideways"
    assert not controls_out_of_reach(page), f"{where}: {controls_out_of_reach(page)}"
    assert not controls_over_labels(page), f"{where}: {controls_over_labels(page)}"
    assert not serious_accessibility_violations(page), f"{where}: {serious_accessibility_violations(page)}"
    page.screenshot(path=str(path), full_page=True)


def test_questionnaire_answered_with_consent_declined_by_another_exported_apart_and_analysed(tmp_path):
    require_chromium()
    run = CliRun("arena", tmp_path, [f"mephisto.architect.port={free_port()}", *ASKING_TWO])
    try:
        with chromium_page(tmp_path / "desktop") as page:
            page.set_viewport_size(DESKTOP)
            one_battle_to_the_questionnaire(page, run.worker_url("consents"), "What should I cook tonight?")
            assert page.is_disabled("[data-testid=questionnaire-age_band]")  # nothing answered before consent
            assert page.locator("label[for=questionnaire-country]").inner_text() == "The country you live in"
            # countries named by the browser, in the page's language
            assert page.locator("[data-testid=questionnaire-country] option[value=DE]").inner_text() == "Germany"
            page.check("[data-testid=questionnaire-consent]")
            page.select_option("[data-testid=questionnaire-age_band]", "25-34")
            page.select_option("[data-testid=questionnaire-country]", "DE")
            page.select_option("[data-testid=questionnaire-chatbot_use]", "weekly")  # the language left unanswered
            checked_and_pictured(page, tmp_path / "questionnaire-1280.png")
            submit_hit(page)
            assert page.locator("[data-testid=questionnaire]").count() == 0  # gone once sent
        with chromium_page(tmp_path / "phone", phone=PHONE) as page:
            one_battle_to_the_questionnaire(page, run.worker_url("declines"), "Tell me a joke about cats.")
            checked_and_pictured(page, tmp_path / "questionnaire-390x844.png")
            page.check("[data-testid=questionnaire-consent]")
            page.select_option("[data-testid=questionnaire-age_band]", "65+")
            page.uncheck("[data-testid=questionnaire-consent]")  # changed their mind: the answer goes nowhere
            assert page.is_disabled("[data-testid=questionnaire-age_band]")
            submit_hit(page)
        run.proc.wait(120)  # both units submitted: the run ends
    finally:
        run.stop()

    out = tmp_path / "export" / "arena.jsonl"
    exported = run.export("arena_q", out)
    assert "questionnaire: 1 participant(s) answered with consent, 1 submission(s) declined" in exported.stdout
    people = tmp_path / "export" / "arena.participants.csv"
    assert f"wrote {people} (the questionnaire's answers; keep it private)" in exported.stdout
    assert stat.S_IMODE(people.stat().st_mode) == 0o600
    with people.open(newline="") as handle:
        # the mock provider's worker name (a Prolific participant id on Prolific), as the votes have it
        assert list(csv.DictReader(handle)) == [{"Participant id": "consents_sandbox", "age_band": "25-34", "country": "DE",
                                                 "language": "", "chatbot_use": "weekly"}]
    assert b"25-34" not in out.read_bytes() and b"questionnaire" not in out.read_bytes()  # kept apart from the votes
    votes = read_jsonl([out]).comparisons
    assert sorted(votes["worker_id"]) == ["consents_sandbox", "declines_sandbox"] and set(votes["choice"]) == {"a"}

    report = tmp_path / "analysis"
    dialeval("analyze_pairwise", "--data", str(out), "--out", str(report), "--participants", str(people),
             "--by", "age_band", "--min-group-workers", "1", "--group-permutations", "19", "--bootstrap-rounds", "20")
    groups = (report / "group_rankings.csv").read_text()
    assert "25-34" in groups and "(not given)" in groups

    from parlai_dialeval.scripts.publish import run as publish

    published = publish({"data": [str(out)], "out": str(tmp_path / "published"), "statement": "consented",
                         "license": "cc-by-4.0", "language": "en", "phone_region": "US", "alpha": 0.05,
                         "pairs_ties": "drop", "pairs_votes": "every", "pairs_workers": "all", "pairs_style": "raw",
                         "data_format": None, "include_unverified": False,
                         "key_file": str(tmp_path / "keys" / "study.key")}, log=None)
    files = [p for p in published.folder.rglob("*") if p.is_file()]
    assert files and not [p for p in files if "participants" in p.name]
    assert not [p for p in files if b"25-34" in p.read_bytes()]
