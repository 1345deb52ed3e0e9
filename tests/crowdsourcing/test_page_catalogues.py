"""The worker pages' catalogues (crowdsourcing/frontend/src/i18n): every language has every text of every page, with
the same {placeholders}; every text the server sends a participant in English (warnings, refusals, the protocols'
questions, labels and statements) has its "server.*" entry, which the page matches to show its translation
(components/i18n.js serverText, the same pattern as here); every task takes the study's language."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from parlai_dialeval.crowdsourcing.platform.registry import get_task

I18N = Path(__file__).resolve().parents[2] / "crowdsourcing" / "frontend" / "src" / "i18n"
EN = json.loads((I18N / "en.json").read_text())
TASKS = ["live_chat_da", "sm_eval", "pw_turn", "acute", "ab_next_utterance", "scale_designs", "arena"]


def placeholders(text) -> set[str]:
    items = text if isinstance(text, list) else [text]
    return {name for item in items for name in re.findall(r"\{(\w+)\}", item)}


def server_key(text: str) -> str | None:
    """The "server.*" entry whose English pattern the text matches (as serverText does in the page)."""
    for key, template in EN.items():
        if key.startswith("server."):
            pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>.+?)", re.escape(template))
            if re.fullmatch(pattern, text):
                return key
    return None


def server_texts() -> list[str]:
    """Every text the Python side shows a participant, as it sends it (values filled in where it fills them)."""
    from parlai_dialeval.crowdsourcing.ab_next_utterance.protocol import QUESTION
    from parlai_dialeval.crowdsourcing.arena import protocol as arena, worlds as arena_worlds
    from parlai_dialeval.crowdsourcing.acute.protocol import QUESTIONS as ACUTE_QUESTIONS
    from parlai_dialeval.crowdsourcing.live_chat_da import protocol as live_chat, worlds as live_chat_worlds
    from parlai_dialeval.crowdsourcing.live_chat_da.criteria import STATEMENTS
    from parlai_dialeval.crowdsourcing.platform import participant_input, session_world
    from parlai_dialeval.crowdsourcing.pw_turn import worlds as pw_turn_worlds
    from parlai_dialeval.crowdsourcing.pw_turn.protocol import QUESTIONS as PW_QUESTIONS
    from parlai_dialeval.crowdsourcing.scale_designs.protocol import CRITERION_QUESTIONS, PRIOR_EXPERIENCE_QUESTIONS
    from parlai_dialeval.crowdsourcing.sm_eval import protocol as sm_eval, worlds as sm_eval_worlds

    with pytest.raises(participant_input.Refused) as too_long:
        participant_input.bounded_text("x" * 3000, 2000, "message")
    return [participant_input.TOO_FAST, participant_input.UNREADABLE, str(too_long.value), session_world.BOT_FAILED,
            live_chat_worlds.TOO_MANY_INPUTS.format(limit=100), live_chat_worlds.FAILURE_TEXT,
            live_chat.TOPIC_MISSING, live_chat.RATING_MISSING,
            live_chat.TOO_FEW_INPUTS.format(minimum=10, inputs=1), sm_eval_worlds.TICK_ONE,
            sm_eval_worlds.RATE_ALL, pw_turn_worlds.CHOOSE_EVERY, pw_turn_worlds.LAST_TRY, pw_turn_worlds.CHOOSE_WHY,
            *sm_eval.TURN_LABELS.values(), sm_eval.LIKERT_PROMPT, *sm_eval.LIKERT_QUESTIONS.values(),
            *PW_QUESTIONS.values(), *ACUTE_QUESTIONS.values(), QUESTION, *CRITERION_QUESTIONS.values(),
            *PRIOR_EXPERIENCE_QUESTIONS.values(), *STATEMENTS,
            arena.NO_NEW_BATTLE, arena.TURNS_DONE.format(turns=3), arena.VOTE_FIRST, arena.REPLIES_FIRST,
            arena.CHOOSE_ONE, arena.NOTHING_TO_END, arena.LAST_VOTE_FIRST, arena.MORE_BATTLES.format(minimum=3),
            arena_worlds.BATTLE_FAILED, arena_worlds.CERTIFIED, arena_worlds.ALL_BATTLES.format(battles=10),
            arena_worlds.WRITE_FIRST, arena_worlds.UNREADABLE_ACTION, arena_worlds.SAME_PROMPT_MINE,
            arena_worlds.SAME_PROMPT_STUDY]


@pytest.mark.parametrize("language", sorted(path.stem for path in I18N.glob("*.json") if path.stem != "en"))
def test_every_catalogue_has_every_text_of_every_page(language):
    catalogue = json.loads((I18N / f"{language}.json").read_text())
    assert set(catalogue) == set(EN), {"missing": set(EN) - set(catalogue), "unknown": set(catalogue) - set(EN)}
    for key, english in EN.items():
        text = catalogue[key]
        assert text and type(text) is type(english), key
        assert placeholders(text) == placeholders(english), key
        if isinstance(english, list):
            assert len(text) == len(english), key


@pytest.mark.parametrize("path", sorted(I18N.glob("*.json")), ids=lambda path: path.name)
def test_no_catalogue_names_a_text_twice(path):
    """JSON keeps the last of two same keys without a word: a translator's edit to the first would be lost."""
    keys = json.loads(path.read_text(), object_pairs_hook=lambda pairs: [key for key, _ in pairs])
    assert sorted({key for key in keys if keys.count(key) > 1}) == []


def test_every_text_the_server_shows_a_participant_has_its_catalogue_entry():
    texts = server_texts()
    missing = [text for text in texts if server_key(text) is None]
    assert not missing, missing
    assert server_key("Please type at least 10 inputs before moving on (you have typed 1).") == "server.too_few_inputs"
    assert server_key("a participant's own words") is None


@pytest.mark.parametrize("task", TASKS)
def test_every_task_takes_the_studys_language(task):
    from parlai_dialeval.crowdsourcing.platform import blueprint  # noqa: F401  (registers our blueprints)
    from parlai_dialeval.crowdsourcing.platform.config import compose

    spec = get_task(task)
    section = next(name for name in ("live_chat", "sm_eval", "pw_turn", "acute", "ab", "scale_designs", "arena")
                   if name in compose(spec))
    assert compose(spec, [f"{section}.language=he"])[section]["language"] == "he"
    assert compose(spec)[section]["language"] == "en"
