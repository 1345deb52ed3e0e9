"""Votes worth trusting, in headless Chromium (issue 51): every task with two attention checks per unit
(`<task>.checks.attention=2`), a participant who ignores their instructions is listed in the evidence table with the
rejection `dialeval review` accepts (FAILED_CHECK and a message of 100+ characters: Prolific's rules for two failed
checks); in live chat also a participant who pastes messages copied in another tab (the export records the pastes
and the tab switches; the evidence table names them and the signals) and one who types the same messages by hand
(not flagged). One launch per task, short units, everything else at a quick pace (the tasks' own browser tests act
at a person's pace)."""
from __future__ import annotations

import json
import re

import pytest

from parlai_dialeval.crowdsourcing.platform.checks import GOLD_REPLIES
from parlai_dialeval.crowdsourcing.pw_turn.protocol import ONBOARDING_CONVERSATION
from parlai_dialeval.data import read_jsonl
from parlai_dialeval.providers.prolific.review import check_rejection
from parlai_dialeval.testing.ports import free_port

from .browser_page import chromium_page, look_at, require_chromium
from .protocol_harness import CliRun, dialeval, set_slider, submit_hit
from .test_acute_browser import GOOD_MARKERS, judge, self_chats

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(420)]
ATTENTION = ["+checks.attention=2", "+checks.attention_fail=2"]
COPIED = ["Autumn hikes are lovely because the cooler air and golden leaves make every trail feel new.",
          "Reading before bed helps me unwind, and historical novels are my favourite kind of story.",
          "Cooking with friends is wonderful since everyone brings a dish and a story to share."]
OWN = ["do you like walking in the hills", "what do you read in the evenings", "which meal do you cook most"]


def overrides(task: str, port: int, name: str, extra: list[str]) -> list[str]:
    group = {"ab_next_utterance": "ab", "live_chat_da": "live_chat"}.get(task, task)
    return [f"mephisto.architect.port={port}", f"mephisto.task.task_name={name}",
            *[o.replace("+checks", f"{group}.checks") for o in ATTENTION], *extra]


def exported(run: CliRun, name: str):
    """`dialeval export` of the run, into the test's folder."""
    out = run.tmp_path / f"{name}.jsonl"
    run.export(name, out)
    return out


def evidence_rows(path) -> dict:
    """The evidence table of an export, as the analysis commands build it (scripts/evidence_option.py)."""
    from parlai_dialeval.scripts.command_line import load_data
    from parlai_dialeval.scripts.evidence_option import build

    found = build(load_data({"data": [str(path)]}, log=None), {}, log=None)
    return {row["worker_id"]: row for row in found.table.to_dict("records")}


def assert_rejectable(row: dict) -> None:
    """Listed as failing two attention checks, with grounds `dialeval review --reject` accepts."""
    assert row["flagged"] and "attention" in row["signals"].split(", "), row
    assert row["rejection"] == "FAILED_CHECK" and float(row["attention_items"]) == 2 and float(row["attention_right"]) == 0
    check_rejection(row["rejection_message"], row["rejection"])  # raises if review would refuse it


# ---------------------------------------------------------------- live chat: the pasting participant and the typist
def unfocused(page) -> None:
    """The page as a person's browser has it: it loses focus when another tab comes to the front (Playwright
    gives every page focus by default; the setting lasts until the page navigates)."""
    page.context.new_cdp_session(page).send("Emulation.setFocusEmulationEnabled", {"enabled": False})


def send(page, text: str, how: str, elsewhere=None) -> None:
    """One chat message: typed at a person's pace, or copied from another tab and pasted (Ctrl+C there, Ctrl+V here)."""
    before = page.locator(".dialeval-msg-other").count()
    if how == "paste":
        paste(page, text, elsewhere)
    else:
        page.locator(".response-text-input").click()
        page.keyboard.type(text, delay=25 if how == "quick" else 70)
    page.click(".submit-response")
    page.wait_for_function(f"document.querySelectorAll('.dialeval-msg-other').length > {before}", timeout=30000)


def paste(page, text: str, elsewhere) -> None:
    """``text`` copied in the tab ``elsewhere`` (Ctrl+C there) and pasted into the page's text box (Ctrl+V)."""
    elsewhere.bring_to_front()
    elsewhere.fill("#source", text)
    elsewhere.click("#source")
    elsewhere.keyboard.press("Control+A")
    elsewhere.keyboard.press("Control+C")
    page.wait_for_timeout(600)  # reading the other tab
    page.bring_to_front()
    page.locator(".response-text-input").click()
    page.keyboard.press("Control+V")


def other_tab(page):
    """A second tab to copy text from, the task's tab in front again (as when the participant opens it)."""
    elsewhere = page.context.new_page()
    elsewhere.set_content("<textarea id=source></textarea>")
    page.bring_to_front()
    return elsewhere


def live_chat_participant(page, url: str, style: str, elsewhere=None) -> None:
    """A whole live-chat HIT: per slot two messages (the pasting participant pastes the first of each, copied in
    ``elsewhere``; the typist types the same texts), every statement rated; attention sliders set as instructed,
    except by the ``inattentive`` participant."""
    page.goto(url)
    unfocused(page)
    for slot in range(3):
        page.wait_for_selector("[data-testid=topic-form]", timeout=60000)
        page.fill("#topic-input", "hobbies")
        page.check("#attitude-like")
        page.click("[data-testid=start-chat]")
        page.wait_for_selector("[data-testid=chat-panel]")
        send(page, COPIED[slot], "paste" if style == "paste" else "quick" if style == "inattentive" else "type",
             elsewhere)
        send(page, OWN[slot], "quick" if style == "inattentive" else "type")
        page.click("[data-testid=next-chatbot]")
        page.wait_for_selector("[data-testid=rating-form]")
        page.wait_for_timeout(800 if style == "inattentive" else 8000)  # reading seven statements takes a while
        sliders = page.locator("[data-testid=rating-form] input[type=range]")
        for k in range(sliders.count()):
            # the middle slot's chatbot is the QC bot (never first or last), which careful people rate low;
            # never 50, where an untouched slider rests
            set_slider(sliders.nth(k), (12 if slot == 1 else 70) + 3 * k)
        if page.locator("[data-testid=slider-state-attention]").count():
            if style == "type" and slot == 1:
                look_at(page, "live_chat_rating_attention")  # the eighth slider, its instruction, the notice
                assert "What this page records" in page.inner_text("[data-testid=recording-notice]")
            asked = int(re.search(r"to (\d+)", page.inner_text("[data-criterion-slot=attention]"))[1])
            set_slider(page.locator("#slider-attention"), (asked + 45) % 100 if style == "inattentive" else asked)
        page.click("[data-testid=submit-ratings]")
    page.wait_for_selector("[data-testid=feedback-form]")
    page.click("[data-testid=send-feedback]")
    submit_hit(page)


def test_live_chat_paste_and_tab_switch_named_typist_not_flagged_inattentive_rejectable(tmp_path):
    require_chromium()
    run = CliRun("live_chat_da", tmp_path, overrides("live_chat_da", free_port(), "integrity_lc", [
        "conf=offline_small", "mephisto.blueprint.num_conversations=3", "live_chat.min_inputs=2",
        "live_chat.seed=0"]))
    try:
        for worker, style in (("paster", "paste"), ("typist", "type"), ("careless", "inattentive")):
            with chromium_page(tmp_path / worker) as page:
                live_chat_participant(page, run.worker_url(worker), style, other_tab(page))
        run.proc.wait(120)
    finally:
        run.stop()
    out = exported(run, "integrity_lc")
    data = read_jsonl([out])
    messages = {w: [t for turns in part["turns"] for t in turns if t["speaker"] == "human"]
                for w, part in data.conversations.groupby("worker_id")}
    pasted = [t for t in messages["paster_sandbox"] if t["provenance"].get("pasted")]
    assert [t["text"] for t in pasted] == COPIED  # the export records each paste, its size, and the tab switch
    assert all(t["provenance"]["pastes"] == [len(t["text"])] and t["provenance"]["away"] >= 1 for t in pasted)
    typed = [t for t in messages["typist_sandbox"] if t["text"] in COPIED]
    assert len(typed) == 3 and all(t["provenance"]["pasted"] == 0 and t["provenance"]["typed"] >= len(t["text"])
                                   and t["provenance"]["away"] == 0 for t in typed)
    report = tmp_path / "report"
    dialeval("analyze_live_chat", "--data", str(out), "--out", str(report))  # evidence.csv, as a researcher reads it
    rows = {r["worker_id"]: r for r in _csv(report / "evidence.csv")}
    paster, typist = rows["paster_sandbox"], rows["typist_sandbox"]
    assert paster["flagged"] == "True" and {"pasted", "away"} <= set(paster["signals"].split(", ")), paster
    assert "pasted 3 of" in paster["reasons"] and "left the page" in paster["reasons"]
    assert typist["flagged"] == "False" and "pasted" not in typist["signals"] and "away" not in typist["signals"]
    assert_rejectable({**rows["careless_sandbox"], "flagged": rows["careless_sandbox"]["flagged"] == "True"})
    assert "Evidence about each participant" in (report / "report.html").read_text()


def _csv(path) -> list[dict]:
    import csv

    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# ---------------------------------------------------------------- the other tasks: one inattentive participant each
def sm_eval(page, tmp_path) -> None:
    for turn in range(3):
        page.wait_for_selector("[data-testid=annotate]", timeout=60000)
        if page.locator("[data-testid=attention-instruction]").count():
            page.check("[data-testid=mark-none]")  # told to tick one quality alone
        else:
            page.check("[data-testid=mark-engaging]")
        page.click("[data-testid=submit-marks]")
        if turn < 2:
            page.wait_for_selector(".response-text-input", timeout=30000)
            page.fill(".response-text-input", f"tell me about your weekend {turn}")
            page.click(".submit-response")
    page.wait_for_selector("[data-testid=rate]", timeout=30000)
    for criterion in ("engaging", "humanlike", "interesting"):
        page.check(f"[data-testid=likert-{criterion}-4]")
    page.click("[data-testid=submit-ratings]")
    submit_hit(page)


def pw_turn(page, tmp_path) -> None:
    good = {pair.good for _, pair in ONBOARDING_CONVERSATION}
    page.wait_for_selector("[data-testid=onboarding]", timeout=60000)
    for i in range(page.locator("[data-testid=onboarding-pair]").count()):
        left = page.inner_text(f"[data-testid=onboarding-{i}-left-text]").strip() in good
        page.check(f"[data-testid=onboarding-{i}-{'left' if left else 'right'}]")
    page.click("[data-testid=submit-onboarding]")
    page.click("[data-testid=finish-onboarding]", timeout=30000)
    for turn in range(3):
        page.wait_for_selector("[data-testid=choose-panel]", timeout=60000)
        instruction = page.locator("[data-testid=attention-instruction]")
        told = instruction.inner_text() if instruction.count() else ""
        page.check("[data-testid=choose-left]" if "2" in told or not told else "[data-testid=choose-right]")
        page.fill("[data-testid=justification]", "sounds better")
        page.click("[data-testid=submit-choice]")
        if turn < 2:
            page.wait_for_selector(".response-text-input", timeout=30000)
            page.fill(".response-text-input", f"what else do you like {turn}")
            page.click(".submit-response")
    submit_hit(page)


def acute(page, tmp_path) -> None:
    judge(page)  # the practice round, every answer right (test_acute_browser.py)
    page.wait_for_function("!document.body.innerText.includes('Practice round')", timeout=60000)
    total = int(re.search(r"Pair 1 of (\d+)", page.inner_text("[data-testid=pair]", timeout=60000))[1])
    looked = False
    for number in range(1, total + 1):
        page.wait_for_function(f"document.body.innerText.includes('Pair {number} of {total}')", timeout=30000)
        told = page.locator("[data-testid=attention-instruction]")
        if told.count():  # told which speaker: the other one
            if not looked:
                look_at(page, "acute_attention_pair")
                looked = True
            side = "left" if "2" in told.inner_text() else "right"
        else:
            side = "left" if any(m in page.inner_text("[data-testid=conversation-left]") for m in GOOD_MARKERS) \
                else "right"
        page.check(f"[data-testid=choose-{side}]")
        page.fill("[data-testid=justification]", "more engaging")
        page.click("[data-testid=next-pair]")
    page.wait_for_selector("[data-testid=done]", timeout=30000)
    page.wait_for_timeout(1500)


def ab(page, tmp_path) -> None:
    page.wait_for_selector("[data-testid=ab-item]", timeout=60000)
    items = page.locator("[data-testid=ab-item]")
    for i in range(items.count()):
        told = items.nth(i).locator("[data-testid=attention-instruction]")
        text = told.inner_text() if told.count() else ""
        page.check(f"[data-testid=ab-{i}-{'b' if 'A is better' in text else 'a'}]")
    page.click("[data-testid=submit-ab]")
    page.wait_for_selector("[data-testid=done]", timeout=30000)
    page.wait_for_timeout(1500)


def scale_designs(page, tmp_path) -> None:
    for _ in range(4):  # two items and two attention checks
        page.wait_for_selector("[data-testid=scale-item]", timeout=60000)
        told = page.locator("[data-testid=attention-instruction]")
        asked = int(re.search(r"give every response (\d+)", told.first.inner_text())[1]) if told.count() else None
        value = 1 if asked == 6 else 6 if asked else 4
        for criterion in ("readability", "coherence"):
            for i in range(3):
                page.check(f"[data-testid={criterion}-value-{i}-{value}]")
        page.click("[data-testid=next-item]")
    page.wait_for_selector("[data-testid=prior-questions]")
    page.check("[data-testid=prior_experience_evaluating-no]")
    page.check("[data-testid=prior_experience_agents-no]")
    page.click("[data-testid=submit-scales]")
    page.wait_for_selector("[data-testid=done]", timeout=30000)
    page.wait_for_timeout(1500)


def _items(tmp_path, kind: str) -> str:
    path = tmp_path / "items.jsonl"
    if kind == "ab":
        rows = [{"item_id": f"q{i}", "context": [f"what do you do on sundays {i}"], "model_a": "parrot",
                 "model_b": "echo", "response_a": f"I go cycling by the river {i}", "response_b": f"sundays {i}"}
                for i in range(6)]
    else:
        rows = [{"item_id": f"i{n}", "context": ["How was your day?"], "reference": "It was great, thanks.",
                 "responses": {"s2s": "i i i", "hred": "Good, I went hiking by the lake.", "vhred": "Fine."}}
                for n in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _task_overrides(task: str, tmp_path) -> list[str]:
    if task == "sm_eval":
        return ["mephisto.blueprint.num_conversations=1", "sm_eval.num_turns=3", "~sm_eval.models.retrieval",
                "sm_eval.seed=0"]
    if task == "pw_turn":
        return ["mephisto.blueprint.num_conversations=1", "pw_turn.num_turns=3", "pw_turn.seed=0"]
    if task == "acute":
        convs = tmp_path / "self_chats.jsonl"
        self_chats(convs)
        return [f"acute.conversations=[{convs}]", "acute.seed=2", "acute.matchups_per_pair=2",
                "acute.subtasks_per_unit=2", "acute.model_pairs=[[good_bot,bad_bot]]"]
    if task == "ab_next_utterance":
        return [f"ab.items_file={_items(tmp_path, 'ab')}", "ab.per_hit=3", "ab.seed=1",
                "mephisto.blueprint.units_per_assignment=1"]
    return [f"scale_designs.items_file={_items(tmp_path, 'scales')}", "scale_designs.design=likert",
            "scale_designs.items_per_unit=2", "scale_designs.seed=0", "mephisto.blueprint.units_per_assignment=1"]


@pytest.mark.parametrize("task, drive", [("sm_eval", sm_eval), ("pw_turn", pw_turn), ("acute", acute),
                                         ("ab_next_utterance", ab), ("scale_designs", scale_designs)],
                         ids=["sm_eval", "pw_turn", "acute", "ab_next_utterance", "scale_designs"])
def test_an_inattentive_participant_is_listed_with_grounds_review_accepts(tmp_path, task, drive):
    require_chromium()
    name = f"integrity_{task}"
    run = CliRun(task, tmp_path, overrides(task, free_port(), name, _task_overrides(task, tmp_path)))
    try:
        with chromium_page(tmp_path) as page:
            page.goto(run.worker_url("careless"))
            drive(page, tmp_path)
    finally:
        run.stop()
    out = exported(run, name)
    checks = [r for r in map(json.loads, out.read_text().splitlines()) if r.get("check")]
    assert {r["check"]["kind"] for r in checks} == {"attention"} and not any(r["check"]["passed"] for r in checks)
    assert_rejectable(evidence_rows(out)["careless_sandbox"])


# ---------------------------------------------------------------- the arena: records, checks, markdown
ARENA_PROMPTS = ["Tell me about **owls** please", "What should I cook tonight?", "Suggest a name for a boat",
                 "Where should I travel in spring?"]
ARENA_VOTES = {"A is better": "a", "B is better": "b", "Tie": "tie", "Both are bad": "both_bad"}


def arena_participant(page, url: str, careful: bool, elsewhere, shown: dict) -> None:
    """Four one-turn battles. The careful participant types each prompt at a person's pace, reads both replies,
    gives the answer an attention battle asks for and never prefers a broken reply; the careless one pastes each
    prompt copied in another tab, votes at once, ignores the instructions and picks the broken reply. ``shown``
    gets what the careful one saw: the first reply's bold words, the attention instruction, a test reply's name, the
    instructions and after the last battle whether a text box was still offered."""
    page.goto(url)
    unfocused(page)
    if careful:  # nothing to frame yet; four battles of one turn each, said without "between 4 and 4", "1 turns"
        page.wait_for_selector(".response-text-input", timeout=60000)
        shown["empty_log_height"] = page.eval_on_selector("[data-testid=battle]", "e => e.offsetHeight")
        shown["instructions"] = page.inner_text(".dialeval-task")
    for prompt in ARENA_PROMPTS:
        page.wait_for_selector(".response-text-input", timeout=60000)
        if careful:
            page.click(".response-text-input")
            page.keyboard.type(prompt, delay=70)
        else:
            paste(page, prompt, elsewhere)
        page.keyboard.press("Enter")
        page.wait_for_selector("[data-testid=vote-a]:not([disabled])", timeout=60000)
        replies = {side: page.inner_text(f"[data-testid=reply-{side}]").strip() for side in "ab"}
        broken = [side for side, text in replies.items() if text in GOLD_REPLIES]
        told = page.locator("[data-testid=attention-instruction]")
        if told.count():
            asked = ARENA_VOTES[re.search(r'choose "([^"]+)"', told.inner_text())[1]]
            choice = asked if careful else "a" if asked != "a" else "tie"
            if careful and "attention" not in shown:
                look_at(page, "arena_vote_attention")
                shown["attention"] = told.inner_text()
        elif broken:
            choice = ("b" if broken == ["a"] else "a") if careful else broken[0]
        else:
            choice = "a"
        if careful:
            page.wait_for_timeout(2500)  # reading both replies
            if prompt == ARENA_PROMPTS[0]:
                shown["bold"] = page.locator("[data-testid^=reply-] strong").all_inner_texts()
        page.click(f"[data-testid=vote-{choice}]")
        if careful:
            shown["saved"] = page.inner_text("[data-testid=vote-saved]", timeout=30000)
        page.click("[data-testid=end-battle]", timeout=30000)
        page.wait_for_selector("[data-testid=revealed]", timeout=30000)
        if careful and broken:
            shown["test_reply"] = page.inner_text(f"[data-testid=name-{broken[0]}]")
    page.wait_for_selector("[data-testid=finish]", timeout=30000)
    shown["box_after_last"] = page.locator(".response-text-input").count()
    page.click("[data-testid=finish]", timeout=30000)
    submit_hit(page)


def test_arena_records_each_prompt_and_vote_careless_voter_listed_careful_one_not(tmp_path):
    """Four battles of the echo bot (repeat_query) against the retrieval bot per participant, two of them attention
    checks and one gold (a broken bot on one side). The export keeps how each prompt and vote was made (the pastes
    and the tab switches of the careless participant); `dialeval analyze_pairwise`'s evidence table lists the
    careless one with the attention checks and gold battle missed, the pastes and grounds `dialeval review` accepts,
    and not the careful one; the echoed markdown is rendered, the broken side named a test reply when it ends."""
    require_chromium()
    name = "integrity_arena"
    run = CliRun("arena", tmp_path, overrides("arena", free_port(), name, [
        "mephisto.blueprint.num_conversations=2", "arena.seed=0", "arena.min_battles=4", "arena.max_battles=4",
        "arena.max_turns=1", "arena.checks.gold=1", "~arena.models.random", "~arena.models.degraded",
        "+arena.models.echo.opt.model=repeat_query"]))
    shown = {}
    try:
        for worker, careful in (("careless", False), ("careful", True)):
            with chromium_page(tmp_path / worker) as page:
                arena_participant(page, run.worker_url(worker), careful, other_tab(page), shown)
    finally:
        run.stop()
    assert shown["bold"] == ["owls"]  # the echo bot's markdown rendered, the participant's own stars shown as typed
    assert shown["test_reply"].startswith("a test reply") and "Attention check" in shown["attention"]
    assert shown["empty_log_height"] == 0 and shown["box_after_last"] == 0  # no message box once none can be sent
    assert "Do 4 battles." in shown["instructions"] and "Then end the battle" in shown["instructions"]
    assert shown["saved"] == "Your vote is saved. End this battle to see which models they were."
    out = exported(run, name)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    votes = {w: [r for r in records if r["type"] == "comparison" and r["worker_id"] == f"{w}_sandbox"]
             for w in ("careless", "careful")}
    assert {w: len(v) for w, v in votes.items()} == {"careless": 4, "careful": 4}
    # the time on the vote screen, in tenths of a second: a vote the instant both replies end reads 0.0
    seconds = {w: [x["provenance"]["seconds"] for x in v] for w, v in votes.items()}
    assert min(seconds["careful"]) > 2 and min(seconds["careless"]) >= 0, seconds
    prompts = {w: [t for r in records if r["type"] == "conversation" and r["worker_id"] == f"{w}_sandbox"
                   and r["meta"]["side"] == "a" for t in r["turns"] if t["speaker"] == "human"]
               for w in ("careless", "careful")}
    assert [t["text"] for t in prompts["careless"]] == [t["text"] for t in prompts["careful"]] == ARENA_PROMPTS
    assert all(t["provenance"]["pastes"] == [len(t["text"])] and t["provenance"]["away"] >= 1
               for t in prompts["careless"])
    assert all(t["provenance"]["typed"] >= len(t["text"]) and t["provenance"]["pasted"] == 0
               and t["provenance"]["away"] == 0 for t in prompts["careful"])
    graded = {w: sorted((x["check"]["kind"], x["check"]["passed"]) for x in v if x.get("check"))
              for w, v in votes.items()}
    assert graded == {"careless": [("attention", False), ("attention", False), ("gold", False)],
                      "careful": [("attention", True), ("attention", True), ("gold", True)]}
    report = tmp_path / "report"
    dialeval("analyze_pairwise", "--data", str(out), "--out", str(report))  # evidence.csv, as a researcher reads it
    rows = {r["worker_id"]: r for r in _csv(report / "evidence.csv")}
    careless, careful = rows["careless_sandbox"], rows["careful_sandbox"]
    assert_rejectable({**careless, "flagged": careless["flagged"] == "True"})
    assert {"pasted", "away"} <= set(careless["signals"].split(", ")) and "pasted 4 of 4" in careless["reasons"]
    assert (float(careless["gold_items"]), float(careless["gold_right"])) == (1, 0)
    assert careful["flagged"] == "False" and not careful["signals"], careful
    assert (float(careful["attention_right"]), float(careful["gold_right"])) == (2, 1)
