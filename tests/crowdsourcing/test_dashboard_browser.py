"""The dashboard in headless Chromium, at a person's pace, against the fake Prolific: `dialeval launch
live_chat_da conf=offline_small mephisto/provider=prolific ... --dashboard`; three participants arrive from
the study URL and do their HIT in their own browsers, one of them rating every bot alike (failing the
QC-bot check). The researcher's page: nothing but the login form without the token; then progress moving
(a unit in flight, units done), the failing participant flagged first, their conversation as text (their
feedback, HTML, shown as text), a rejection and a bonus through the page, each confirmed. Then `dialeval
review` shows the same decisions (it reads the same ledger), the fake Prolific holds them (paid once), and
`dialeval dashboard` started afterwards on the same data shows them too."""
from __future__ import annotations

import contextlib
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from parlai_dialeval.testing.ports import free_port

from .prolific_harness import TOKEN, fake_prolific, provider_overrides, register
from .browser_page import CHROMIUM, require_chromium
from .protocol_harness import DIALEVAL, CliRun, dialeval, live_chat_conversation, pause, start_in_session

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
TASK = "lcda_dashboard"
GOOD, KIND, CARELESS = "5f0c1d2e3a4b5c6d7e8f9a01", "5f0c1d2e3a4b5c6d7e8f9a02", "5f0c1d2e3a4b5c6d7e8f9a03"
HOSTILE = '<img src=x onerror=alert(1)>'
REASON = ("You rated every chatbot exactly the same on every statement, including the deliberately broken one, "
          "so we cannot use these ratings.")


class DashboardLaunch(CliRun):
    """`dialeval launch ... --dashboard` in its own process group: ready once the fake holds the published study
    and the dashboard's address is printed; ``stop`` as ``CliRun``."""

    def __init__(self, tmp_path: Path, fake):
        self.tmp_path, self.data_dir, self.log_path = tmp_path, tmp_path / "mephisto", tmp_path / "launch.log"
        self.proc = start_in_session([
            "launch", "live_chat_da", "conf=offline_small", *provider_overrides(fake, "3.00", 20),
            f"mephisto.architect.port={free_port()}", f"mephisto.task.task_name={TASK}", "live_chat.min_inputs=2",
            "mephisto.blueprint.num_conversations=4", "live_chat.seed=0",
            "mephisto.blueprint.router_lab_addresses=[127.0.0.1]",  # its three participants share this machine
            "--mephisto-data", str(self.data_dir),
            "--dashboard", "--dashboard-port", str(free_port()), "--dashboard-refresh", "2"], self.log_path)
        self.router_pid, self.dashboard, end = None, None, time.time() + 180
        while time.time() < end and self.proc.poll() is None and not (self.router_pid and self.dashboard):
            found = re.search(r"Server running locally with pid (\d+)", self.log())
            self.router_pid = int(found[1]) if found else None
            found = re.search(r"Dashboard: (http://127\.0\.0\.1:\d+/) \(sign in with the token in (\S+),", self.log())
            self.dashboard = (found[1], Path(found[2]).read_text().strip()) if found else None
            time.sleep(0.5)
        studies = [s for s in fake.state.studies.values() if s["status"] == "ACTIVE"]
        if not (self.dashboard and studies):
            self.stop()
            raise AssertionError("no study or no dashboard:\n" + self.log()[-3000:])
        self.study = studies[0]


def take_part(browser, fake, study_id: str, pid: str, ratings: list[int], feedback: str, researcher=None) -> None:
    """A participant's whole HIT in a browser context of their own: from Prolific's study link to the completion
    page. ``researcher``: called (with nothing) while the participant is in the middle of their first chat."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(fake.study_url(study_id, pid))
    page.wait_for_selector("[data-testid=instructions]", timeout=60000)
    pause(page, 1.5)  # reading the instructions
    for slot, rating in enumerate(ratings):
        live_chat_conversation(page, [f"hello, I am reading a book about {slot} whales", "what do you like to do?"],
                               rating, topic="books")
        if slot == 0 and researcher is not None:
            researcher()
        pause(page, 1)
    page.wait_for_selector("[data-testid=feedback-form]")
    page.fill("#feedback", feedback)
    page.click("[data-testid=send-feedback]")
    pause(page, 1)
    page.click("[data-testid=submit-hit]", timeout=30000)
    page.wait_for_url(re.compile(re.escape(fake.completion_url)), timeout=30000)
    assert "cc=" not in page.url  # the server completes the submission; the code never reaches the page
    context.close()


def figure(page, name: str) -> int:
    return int(page.locator(f"[data-testid={name}]").inner_text().split()[0])


def wait_for_figure(page, name: str, value: int, timeout: float = 40) -> None:
    """The overview reloads itself every 2 s: watch it until the figure shows ``value``."""
    end = time.time() + timeout
    while time.time() < end:
        with contextlib.suppress(Exception):  # a reload between the two reads
            if figure(page, name) == value:
                return
        page.wait_for_timeout(1000)
    raise AssertionError(f"{name} never showed {value}: {page.locator('main').inner_text()[:1500]}")


def act(page, button: str, fill: dict[str, str], screenshot: Path | None = None) -> str:
    """Fill a review form on the participant's page, press its button, read the confirmation, confirm.
    ``screenshot``: where to keep a picture of the filled form (docs/crowdsourcing.md shows it)."""
    for selector, value in fill.items():
        if selector.endswith("category"):
            page.select_option(f"[data-testid={selector}]", value)
        else:
            page.fill(f"[data-testid={selector}]", value)
        pause(page, 0.8)
    if screenshot is not None:
        page.screenshot(path=str(screenshot), full_page=True)
    page.click(f"[data-testid={button}]")
    page.wait_for_selector("[data-testid=confirm]")
    asked = page.locator("[data-testid=confirm]").inner_text()
    pause(page, 1.5)  # reading what is about to happen
    page.click("[data-testid=confirm-action]")
    page.wait_for_selector("[data-testid=message], [data-testid=error]")
    assert page.locator("[data-testid=error]").count() == 0, page.locator("[data-testid=error]").inner_text()
    return asked + "\n" + page.locator("[data-testid=message]").inner_text()


def test_dashboard_watches_and_reviews_a_live_chat_study(tmp_path, monkeypatch):
    require_chromium()
    from playwright.sync_api import sync_playwright

    data = tmp_path / "mephisto"
    with fake_prolific() as fake:
        register(data, fake, monkeypatch)
        launch = DashboardLaunch(tmp_path, fake)
        base, token = launch.dashboard
        study = launch.study["id"]
        dialogs: list[str] = []
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
                    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
                researcher = browser.new_context().new_page()
                researcher.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                # without the token: the login form and nothing else, at any address
                for path in ("", "participant/" + GOOD, "plot/certify.png"):
                    researcher.goto(base + path)
                    assert researcher.locator("[data-testid=login]").count() == 1
                    assert researcher.locator("[data-testid=progress], [data-testid=quality]").count() == 0
                    assert TASK not in researcher.content()
                pause(researcher, 1)
                researcher.fill("#token", "a guess")
                researcher.click("#sign-in")
                assert "not the dashboard" in researcher.locator("[data-testid=error]").inner_text()
                pause(researcher, 1)
                researcher.fill("#token", token)
                researcher.click("#sign-in")
                researcher.wait_for_selector("[data-testid=progress]")
                assert (figure(researcher, "units-done"), figure(researcher, "units-left")) == (0, 4)

                def watch_mid_chat():
                    wait_for_figure(researcher, "units-in-flight", 1)
                    wait_for_figure(researcher, "participants-active", 1)

                take_part(browser, fake, study, GOOD, [90, 5, 90], "Thanks, fun.", researcher=watch_mid_chat)
                wait_for_figure(researcher, "units-done", 1)
                take_part(browser, fake, study, KIND, [85, 10, 80], "The second bot was odd.")
                take_part(browser, fake, study, CARELESS, [70, 70, 70], HOSTILE)
                wait_for_figure(researcher, "units-done", 3)
                assert figure(researcher, "units-left") + figure(researcher, "units-in-flight") == 1
                # progress over time as the launch recorded it (crowdsourcing/platform/progress.py), not the page's
                # reloads: a line whenever the counts changed, and the chart drawn from them (issue 50, item 8)
                from parlai_dialeval.crowdsourcing.platform.progress import log_path, read_log

                recorded = read_log(log_path(data, TASK))
                assert len(recorded) >= 2 and max(r["done"] for r in recorded) >= 1, recorded
                researcher.wait_for_selector("[data-testid=progress-chart] svg", timeout=30000)

                # the careless participant is flagged, first
                rows = researcher.locator("[data-testid=quality-row]")
                assert rows.first.get_attribute("data-worker") == CARELESS
                assert rows.first.get_attribute("data-check") == "fail"
                assert "FLAGGED" in rows.first.inner_text()
                assert {rows.nth(k).get_attribute("data-check") for k in (1, 2)} == {"pass"}
                pause(researcher, 2)
                rows.first.locator("a").click()
                researcher.wait_for_selector("[data-testid=work]")
                assert "AWAITING REVIEW" in researcher.locator("[data-testid=participant]").inner_text()
                work = researcher.locator("[data-testid=work]").inner_text()
                assert "whales" in work and HOSTILE in work  # their words, shown as text
                assert researcher.locator("[data-testid=work] img").count() == 0
                assert "fun 70" in researcher.locator("[data-testid=ratings]").first.inner_text()

                done = act(researcher, "reject", {"reject-category": "FAILED_CHECK", "reject-message": REASON},
                           screenshot=tmp_path / "participant.png")
                assert "FAILED_CHECK" in done and f"rejected {CARELESS} (FAILED_CHECK)" in done
                researcher.goto(base + "participant/" + KIND)
                pause(researcher, 1.5)
                done = act(researcher, "bonus", {"bonus-amount": "0.75", "bonus-reason": "thoughtful feedback"})
                assert f"paid 0.75 GBP to {KIND} (thoughtful feedback)" in done
                researcher.goto(base)
                researcher.wait_for_selector("[data-testid=money]")
                money = researcher.locator("[data-testid=money]").inner_text()
                assert "REJECTED" in money and "0.75 GBP" in money
                researcher.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
                browser.close()
        finally:
            launch.stop()
        assert dialogs == []  # no script of a participant ran in the researcher's page
        assert TOKEN not in launch.log() and token not in launch.log()  # the dashboard's token: in its file only

        # the same decisions where `dialeval review` keeps them, and on (fake) Prolific, once
        review = dialeval("review", TASK, "--mephisto-data", str(data)).stdout
        row = {line.split()[0]: line for line in review.splitlines() if line[:24] in (GOOD, KIND, CARELESS)}
        assert "REJECTED" in row[CARELESS] and "fail" in row[CARELESS]
        assert "0.75" in row[KIND] and "pass" in row[KIND]
        careless = [s for s in fake.state.submissions.values() if s["participant_id"] == CARELESS][0]
        assert careless["status"] == "REJECTED"
        kind = [s for s in fake.state.submissions.values() if s["participant_id"] == KIND][0]
        assert len(kind["bonus_payments"]) == 1 and [b["pay_calls"] for b in fake.state.bonuses.values()] == [1]
        from parlai_dialeval.providers.prolific.datastore import ProlificDatastore

        ledger = ProlificDatastore(data / "prolific").decisions(task_name=TASK)
        assert [(d["participant_id"], d["kind"], d["category"], d["amount_minor"], d["state"]) for d in ledger] == [
            (CARELESS, "reject", "FAILED_CHECK", None, "done"), (KIND, "bonus", None, 75, "paid")]

        # `dialeval dashboard` afterwards, on the same data: the same decisions; still nothing without the token
        port = free_port()
        later = subprocess.Popen(DIALEVAL + ["dashboard", TASK, "--mephisto-data", str(data), "--port", str(port)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            line = later.stdout.readline()
            while line and "Dashboard:" not in line:
                line = later.stdout.readline()
            found = re.search(r"(http://\S+) \(sign in with the token in (\S+),", line)  # not printed into a log
            url = f"{found[1]}?token={Path(found[2]).read_text().strip()}"
            assert httpx.get(f"http://127.0.0.1:{port}/").status_code == 401
            # a researcher's browser waits for the first page (its charts drawn then) far past httpx's 5 s default,
            # which two suites at once on two cores exceeded
            with httpx.Client(follow_redirects=True, timeout=60) as client:
                page = client.get(url).text
            assert "REJECTED" in page and "0.75 GBP" in page and CARELESS in page
        finally:
            later.terminate()
            later.wait(20)
