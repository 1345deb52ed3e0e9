"""Issue 38 item 11: a right-to-left override (U+202E) in a worker name, a model name or a message turns no
text of the page around, in Chromium. A participant named ``EVIL<U+202E>_sandbox`` made the dashboard show
``xobdnas_``; the letters after the override are measured on the page (each letter's box from a DOM range):
their first letter must be left of their last, in the participant's name, the page's own words after a model
name, and a message. Served by waitress over the stand-in source of test_dashboard."""
from __future__ import annotations

import pytest

from . import test_dashboard
from .browser_page import CHROMIUM, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]
RLO = "\u202e"
WORKER, MODEL = f"EVIL{RLO}_sandbox", f"m{RLO}X"
TEXT = f"hello {RLO}world then more"

# [left of the first letter of ``needle``, left of its last] inside the element ``selector``
EDGES = """([selector, needle]) => {
  const root = document.querySelector(selector);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = []; let text = "";
  while (walker.nextNode()) { nodes.push([walker.currentNode, text.length]); text += walker.currentNode.data; }
  const at = text.indexOf(needle);
  if (at < 0) return text;
  const left = (i) => { for (const [node, start] of nodes) if (i >= start && i < start + node.data.length) {
    const range = document.createRange(); range.setStart(node, i - start); range.setEnd(node, i - start + 1);
    return range.getBoundingClientRect().left; } };
  return [left(at), left(at + needle.length - 1)];
}"""


def test_an_override_in_participant_text_reverses_nothing_after_it(monkeypatch):
    require_chromium()
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    from parlai_dialeval.dashboard.server import PASSWORD_ENV, start

    monkeypatch.setattr(test_dashboard, "HOSTILE", WORKER)  # the stand-in's participant
    source = test_dashboard.StandIn()
    source._records = [test_dashboard.conversation("c1", WORKER, MODEL, turns=[
        {"speaker": "human", "text": TEXT}, {"speaker": MODEL, "text": "hi"}], topic=f"books{RLO} and more")]
    monkeypatch.setenv(PASSWORD_ENV, test_dashboard.SECRET)
    dashboard = start(source, port=0)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_context(bypass_csp=True).new_page()
            page.goto(dashboard.url + "login")
            page.fill("#token", test_dashboard.SECRET)
            page.click("#sign-in")
            page.wait_for_selector("[data-testid=quality-row]")
            found = {("overview", "_sandbox"): page.evaluate(EDGES, ["[data-testid=quality-row] a", "_sandbox"])}
            page.goto(dashboard.url + "participant/" + quote(WORKER, safe=""))
            page.wait_for_selector("[data-testid=work]")
            for selector, needle in [("h2", "_sandbox"), ("summary", "complete"), (".turn", "then more"),
                                     ("[data-testid=work] .note", "and more")]:
                found[(selector, needle)] = page.evaluate(EDGES, [selector, needle])
            browser.close()
    finally:
        dashboard.stop()
    for where, edges in found.items():
        assert isinstance(edges, list), (where, edges)  # the text is on the page
        first, last = edges
        assert first < last, f"{where}: reversed (first letter at {first}, last at {last})"
