"""Headless Chromium for the browser tests: a page (``chromium_page``: Debian's chromium, a fresh profile, a phone's
screen on request; a failure says what the page showed) and what every worker screen must be (``look_at``: no sideways
scroll, no control out of reach or over its label, no serious axe-core violation, right-to-left pages at every size).
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"


def require_chromium() -> None:
    from needs import needs

    needs(None if Path(CHROMIUM).exists() else f"{CHROMIUM} not found: install Debian's chromium to run the browser tests")


@contextlib.contextmanager
def chromium_page(tmp_path: Path, phone: bool | dict = False, pw=None):
    """A headless Debian Chromium page (fresh profile) that accepts the mock provider's alert(); ``phone``:
    390x844, touch, mobile (an iPhone 12-14's CSS size), or another phone's screen (SMALL_PHONE). ``pw``: a running
    sync_playwright() to launch it with, for two browsers open at once (else one of its own)."""
    from playwright.sync_api import sync_playwright

    screen = phone if isinstance(phone, dict) else PHONE if phone else {}
    with contextlib.nullcontext(pw) if pw is not None else sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium"), executable_path=CHROMIUM, headless=True, **screen, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        try:
            yield page
        except Exception as error:  # a wait that timed out says no more than the selector: what the page showed
            error.add_note(showing(page))
            raise
        finally:
            browser.close()


def held(page, seconds: float) -> None:
    """The page's JavaScript held for ``seconds`` and then let go, timers overdue, as a phone's browser holds a page
    in the background or behind a locked screen (CDP's Debugger.pause: Page.setWebLifecycleState's "frozen" holds
    no timer in headless Chromium)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Debugger.enable")
    cdp.send("Debugger.pause")
    time.sleep(seconds)
    cdp.send("Debugger.resume")
    cdp.detach()


def showing(page) -> str:
    """What a page shows a reader now (its address and the first 2,000 characters of its text), for a failure."""
    try:
        return f"the page at {page.url} showed:\n" + page.inner_text("body", timeout=3000)[:2000]
    except Exception as error:  # a page that crashed or closed: said so, the test's own failure kept
        return f"the page's text could not be read: {error}"


PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
SMALL_PHONE = {**PHONE, "viewport": {"width": 360, "height": 740}}  # a small Android phone's CSS size
AXE = Path(__file__).resolve().parents[2] / "crowdsourcing" / "frontend" / "node_modules" / "axe-core" / "axe.min.js"


def serious_accessibility_violations(page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now (npm axe-core, installed with the
    worker pages' lockfile), one line each: rule, impact, the first offending elements."""
    from needs import needs

    needs(None if AXE.is_file() else f"{AXE} not found: run install.sh (the worker pages' npm ci installs axe-core)")
    if not page.evaluate("typeof axe !== 'undefined'"):  # once a document: parsing axe costs as much as a run
        page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")
    return [f"{v['id']} ({v['impact']}): {v['help']}: " + "; ".join(str(n["target"]) for n in v["nodes"][:3])
            for v in found if v["impact"] in ("serious", "critical")]


def tab_to(page, selector: str, limit: int = 40) -> None:
    """Press Tab, as a keyboard-only participant does, until the element ``selector`` has the focus."""
    for _ in range(limit):
        if page.evaluate("s => document.activeElement && document.activeElement.matches(s)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{selector} never took the focus after {limit} Tab presses")


def horizontal_overflow(page) -> int:
    """How many CSS pixels the page is wider than its window (0: no horizontal scroll)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def controls_out_of_reach(page) -> list[str]:
    """The visible buttons, fields, choices and folds that stick out of the window sideways (a control a
    participant on a narrow screen cannot reach), one line each; vertical scrolling reaches the rest."""
    return page.evaluate("""() => [...document.querySelectorAll('button, input, select, textarea, summary, a[href]')]
      .filter((e) => e.offsetParent !== null || e.getClientRects().length)
      .map((e) => [e, e.getBoundingClientRect()])
      .filter(([e, r]) => r.width > 0 && (r.left < -1 || r.right > window.innerWidth + 1))
      .map(([e, r]) => `${e.outerHTML.slice(0, 80)} at ${Math.round(r.left)}..${Math.round(r.right)}`)""")


def controls_over_labels(page) -> list[str]:
    """Each visible radio, checkbox, slider or field that covers a letter of its own label (measured: the control's
    box against the boxes of the label's text; axe-core does not see a radio sitting on an answer's first letter in a
    right-to-left page), one line each."""
    return page.evaluate("""() => {
      const found = [];
      for (const input of document.querySelectorAll('input, select, textarea')) {
        if (input.type === 'hidden' || !input.getClientRects().length) continue;
        const box = input.getBoundingClientRect();
        for (const label of input.labels || []) {
          const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
          while (walker.nextNode()) {
            const text = walker.currentNode;
            if (!text.textContent.trim()) continue;
            const range = document.createRange();
            range.selectNodeContents(text);
            for (const r of range.getClientRects()) {
              const w = Math.min(r.right, box.right) - Math.max(r.left, box.left);
              const h = Math.min(r.bottom, box.bottom) - Math.max(r.top, box.top);
              if (w > 1 && h > 1) {
                found.push(`${input.outerHTML.slice(0, 70)} covers ${Math.round(w)}x${Math.round(h)} px of ` +
                           `"${text.textContent.trim().slice(0, 30)}"`);
              }
            }
          }
        }
      }
      return found;
    }""")


DESKTOP = {"width": 1280, "height": 900}


def look_at(page, screen: str) -> None:
    """What every worker screen must be: no sideways scroll, no control out of reach or covering its label's text,
    no serious or critical axe-core violation; a phone's screen is checked at both phone sizes (390x844 and
    360x740), and a right-to-left page at those and on a desktop (1280 wide) whatever size it was reached at. With
    DIALEVAL_GALLERY set, its screenshot goes there (docs/participant_pages.md is made this way): a right-to-left
    page's at 390x844 and 1280 wide both."""
    size = page.viewport_size
    rtl = page.evaluate("document.documentElement.dir") == "rtl"
    phone = size["width"] < 600
    phones = [s["viewport"] for s in (PHONE, SMALL_PHONE) if s["viewport"] != size] if phone or rtl else []
    sizes = [size, *phones, *([DESKTOP] if rtl and size != DESKTOP else [])]
    pictures = {"phone": PHONE["viewport"], "desktop": DESKTOP} if rtl else {"phone" if phone else "desktop": size}
    for viewport in sizes:
        page.set_viewport_size(viewport)
        where = f"{screen} at {viewport['width']}x{viewport['height']}"
        assert horizontal_overflow(page) <= 0, f"{where}: the page scrolls sideways"
        assert not controls_out_of_reach(page), f"{where}: {controls_out_of_reach(page)}"
        assert not controls_over_labels(page), f"{where}: {controls_over_labels(page)}"
        found = serious_accessibility_violations(page)
        assert not found, f"{where}: {found}"
    gallery = os.environ.get("DIALEVAL_GALLERY")
    for name, viewport in pictures.items() if gallery else ():
        page.set_viewport_size(viewport)
        page.screenshot(path=str(Path(gallery) / f"{screen}-{name}.png"), full_page=True)
    page.set_viewport_size(size)
