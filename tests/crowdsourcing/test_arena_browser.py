"""The arena end to end in headless Chromium at a person's pace: `dialeval launch arena conf=endpoints` with the
real SmolLM2 model behind `transformers serve` (the real_server fixture) against an offline bot. On a desktop: both
replies side by side, the real model's streaming in as the offline bot's column waits, the vote locked until both
have ended, a message typed meanwhile queued and sent as the battle's second turn once voted, the names shown when
the battle ends, then a new battle; on a phone a third participant completes a battle by keyboard alone; then
`dialeval export` and `dialeval analyze_pairwise`. Every screen passes look_at (axe-core, no sideways scroll) and,
with DIALEVAL_GALLERY set, is pictured in docs/participant_pages.md; the Hebrew page with the offline bots too."""
from __future__ import annotations

import json

import pytest

from parlai_dialeval.testing.ports import free_port

from .browser_page import PHONE, chromium_page, look_at, require_chromium, tab_to
from .protocol_harness import CliRun, dialeval, pause, submit_hit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

# Polled every 100 ms while the models answer: what each column shows and whether a vote could be cast.
WATCH = """() => {
  window.__seen = [];
  setInterval(() => {
    const text = (id) => { const e = document.querySelector(`[data-testid=${id}]`); return e ? e.innerText : null; };
    window.__seen.push({
      streaming_a: text('streaming-a'), streaming_b: text('streaming-b'),
      typing: document.querySelectorAll('[data-testid=bot-typing]').length,
      finished_a: text('finished-a') !== null, finished_b: text('finished-b') !== null,
      reply_a: text('reply-a') !== null, reply_b: text('reply-b') !== null,
      vote_enabled: [...document.querySelectorAll('[data-testid^=vote-]')].some((b) => b.tagName === 'BUTTON' && !b.disabled),
    });
  }, 100);
}"""


def type_and_send(page, text: str) -> None:
    page.click(".response-text-input")
    page.keyboard.type(text, delay=60)
    pause(page, 1)
    page.keyboard.press("Enter")


def wait_for_vote(page, timeout_ms: int = 300000) -> None:
    page.wait_for_selector("[data-testid=vote-a]:not([disabled])", timeout=timeout_ms)


def test_arena_with_a_real_streaming_model_against_an_offline_bot(real_server, tmp_path, monkeypatch):
    require_chromium()
    monkeypatch.setenv("DIALEVAL_BASE_URL", real_server.base_url)
    monkeypatch.setenv("DIALEVAL_MODEL_A", real_server.model)
    run = CliRun("arena", tmp_path, [
        "conf=endpoints", f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=arena_e2e",
        "mephisto.blueprint.num_conversations=2", "~arena.models.model_b", "arena.seed=0", "arena.min_battles=1",
        "arena.max_battles=2", "arena.max_turns=2", "arena.models.model_a.opt.max_tokens=16",
        "arena.models.model_a.opt.request_timeout=240", "+arena.display_names.model_a=SmolLM2-135M",
        "+arena.display_names.retrieval=Retrieval bot"])
    try:
        with chromium_page(tmp_path / "desktop") as page:
            page.set_viewport_size({"width": 1280, "height": 900})
            page.goto(run.worker_url("desktop_worker"))
            page.wait_for_selector(".response-text-input", timeout=120000)
            look_at(page, "arena_prompt")
            pause(page, 3)  # reading the instructions
            page.evaluate(WATCH)
            type_and_send(page, "What is a good name for a small black cat?")
            page.wait_for_selector("[data-testid=vote-panel]", timeout=60000)
            assert page.is_disabled("[data-testid=vote-a]")  # locked while the models answer
            pause(page, 2)
            type_and_send(page, "Why that name?")  # typed while the replies come: it waits for the vote
            queued = page.inner_text("[data-testid=msg-queued]")
            wait_for_vote(page)
            seen = page.evaluate("window.__seen")
            sides = [page.locator(f"[data-testid=side-{side}]").first.bounding_box() for side in "ab"]
            look_at(page, "arena_vote")
            pause(page, 4)  # reading both replies
            page.click("[data-testid=vote-a]")
            page.wait_for_selector("[data-testid=your-vote]", timeout=30000)
            wait_for_vote(page)  # the queued message went out as the second turn, and was answered
            turns = page.locator("[data-testid=prompt]").all_inner_texts()
            names_before_end = page.locator("[data-testid=revealed]").count()
            pause(page, 3)
            page.click("[data-testid=vote-both_bad]")
            page.wait_for_selector("[data-testid=end-battle]", timeout=30000)
            pause(page, 2)
            page.click("[data-testid=end-battle]")
            page.wait_for_selector("[data-testid=revealed]", timeout=30000)
            revealed = {side: page.inner_text(f"[data-testid=name-{side}]") for side in "ab"}
            look_at(page, "arena_revealed")
            pause(page, 3)
            type_and_send(page, "Suggest a weekend hobby for a rainy day.")  # a new battle
            wait_for_vote(page)
            new_battle = page.inner_text("[data-testid=battle-count]")
            cut = page.locator("[data-testid=reply-cut]").count()
            pause(page, 3)
            page.click("[data-testid=vote-b]")
            page.click("[data-testid=end-battle]", timeout=30000)
            page.click("[data-testid=finish]", timeout=30000)
            submit_hit(page)
        with chromium_page(tmp_path / "phone", phone=PHONE) as page:  # keyboard alone, on a phone
            page.goto(run.worker_url("phone_worker"))
            page.wait_for_selector(".response-text-input", timeout=120000)
            tab_to(page, ".response-text-input")
            page.keyboard.type("Tell me a fun fact about owls.", delay=60)
            page.keyboard.press("Enter")
            wait_for_vote(page)
            look_at(page, "arena_vote")
            for control, then in (("vote-tie", "end-battle"), ("end-battle", "revealed"), ("finish", "submit-hit"),
                                  ("submit-hit", None)):
                tab_to(page, f"[data-testid={control}]")
                page.keyboard.press("Enter")
                if then:
                    page.wait_for_selector(f"[data-testid={then}]", timeout=30000)
                if then == "revealed":
                    look_at(page, "arena_revealed")
                if then == "submit-hit":  # the end page is headed as one, not with the vote's question
                    assert page.inner_text("h1") == "All your battles are done"
            pause(page, 1.5)
        run.proc.wait(120)  # both units submitted: the run ends by itself
    finally:
        run.stop()
    # both columns side by side, and what the participant saw while they came
    assert abs(sides[0]["y"] - sides[1]["y"]) < 2 and sides[1]["x"] > sides[0]["x"] + sides[0]["width"] / 2
    answering = [s for s in seen if s["typing"] or s["streaming_a"] or s["streaming_b"]]
    assert any(s["streaming_a"] or s["streaming_b"] for s in seen), "no reply was ever shown as it streamed"
    assert any(s["typing"] for s in seen)  # a column waiting shows the typing note
    assert answering and not any(s["vote_enabled"] for s in answering)  # locked while either comes
    assert all(s["reply_a"] and s["reply_b"] for s in seen if s["vote_enabled"])
    # the offline bot's whole reply shows beside the real model's, still streaming
    assert any((s["finished_a"] and (s["streaming_b"] or s["typing"])) or (s["finished_b"] and (s["streaming_a"] or
               s["typing"])) for s in seen)
    assert "Why that name?" in queued and turns == ["What is a good name for a small black cat?", "Why that name?"]
    assert names_before_end == 0 and set(revealed.values()) == {"SmolLM2-135M", "Retrieval bot"}
    assert new_battle.startswith("Battle 2") and cut >= 1  # 16 tokens cut the real model's reply: marked
    out = tmp_path / "arena.jsonl"
    run.export("arena_e2e", out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    votes = [r for r in records if r["type"] == "comparison"]
    assert [v.get("tie_kind") for v in votes].count("both_bad") == 1 and len(votes) == 4
    assert {frozenset((v["model_a"], v["model_b"])) for v in votes} == {frozenset(("model_a", "retrieval"))}
    assert all(v["sampling_probability"] == 1.0 and v["weight"] == 1.0 for v in votes)
    # what Mephisto kept of the messages each page was sent (a ParlAI-chat agent's state.json) holds the prompts
    # but never a model's system prompt
    page_data = [path.read_text() for path in (tmp_path / "mephisto").rglob("state.json")]
    assert any("small black cat" in text for text in page_data)
    assert not any("Answer in a few sentences" in text for text in page_data)
    report = tmp_path / "report"
    dialeval("analyze_pairwise", "--data", str(out), "--out", str(report), "--bootstrap-rounds", "20")
    assert (report / "rankings.csv").read_text().count("\n") == 3  # header and the two models


def test_arena_in_hebrew_offline(tmp_path):
    """The page right to left (arena.language=he) with the offline rehearsal bots: pictured at both sizes."""
    require_chromium()
    run = CliRun("arena", tmp_path, [f"mephisto.architect.port={free_port()}", "mephisto.task.task_name=arena_he",
                                     "mephisto.blueprint.num_conversations=2", "arena.seed=1", "arena.min_battles=1",
                                     "arena.language=he"])
    try:
        for size, phone in (("desktop", False), ("phone", PHONE)):
            with chromium_page(tmp_path / size, phone=phone) as page:
                if not phone:
                    page.set_viewport_size({"width": 1280, "height": 900})
                page.goto(run.worker_url(f"he_{size}"))
                page.wait_for_selector(".response-text-input", timeout=120000)
                assert page.evaluate("document.documentElement.dir") == "rtl"
                type_and_send(page, "מה כדאי לבשל לארוחת ערב?")
                wait_for_vote(page, 120000)
                look_at(page, "arena_vote_hebrew")
                page.click("[data-testid=vote-a]")
                page.click("[data-testid=end-battle]", timeout=30000)
                page.wait_for_selector("[data-testid=revealed]", timeout=30000)
                look_at(page, "arena_revealed_hebrew")
                assert "מודל A" in page.inner_text("[data-testid=revealed]")
    finally:
        run.stop()
