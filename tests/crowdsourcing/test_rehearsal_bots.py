"""The default offline bots of every pairwise protocol with bots (PW-Turn, A/B next utterance) give visibly
different candidates on every turn of a rehearsal, the first included (issue 41: the old pair showed "Hi!" vs
"Hi", then the same text twice). Distance: 1 - difflib's ratio of the two texts lowercased without
punctuation (0: the same words, 1: nothing in common)."""
from __future__ import annotations

import difflib
import random
import re
from pathlib import Path

from omegaconf import OmegaConf

from parlai_dialeval.crowdsourcing.ab_next_utterance.protocol import generate_responses
from parlai_dialeval.crowdsourcing.platform.bots import BotPool
from parlai_dialeval.crowdsourcing.pw_turn.protocol import FIXED_OPENING, PairwiseTurnSession

CROWDSOURCING = Path(__file__).resolve().parents[2] / "crowdsourcing"
VISIBLY_DIFFERENT = 0.5  # "Hi!" vs "Hi": 0.0; "Hello" vs "Hi": 0.71
# what a researcher types when trying the task out
REHEARSAL = ["Hello, how are you?", "Do you like music?", "What did you have for dinner?", "Are you a robot?",
             "hello"]


def distance(a: str, b: str) -> float:
    def words(text):
        return re.sub(r"[^\w ]", "", text.lower()).strip()
    return 1 - difflib.SequenceMatcher(None, words(a), words(b)).ratio()


def default_models(task: str, section: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(CROWDSOURCING / task / "conf" / "example.yaml")[section]["models"])


def test_the_distance_tells_near_identical_replies_from_different_ones():
    assert distance("Hi!", "Hi") == 0 and distance("Are you a robot?", "are you a robot") == 0
    assert distance("Hi", "I like to count in binary.") > VISIBLY_DIFFERENT


def test_pw_turns_default_pair_differs_visibly_on_every_turn():
    models = default_models("pw_turn", "pw_turn")
    pool = BotPool(models, seed=0)
    session = PairwiseTurnSession({name: pool.new_bot(name) for name in models}, num_turns=len(REHEARSAL) + 1,
                                  rng=random.Random(0))
    shown = [session.human_says(FIXED_OPENING, fixed=True)]
    for message in REHEARSAL:
        session.choose("left", "a reason")
        shown.append(session.human_says(message))
    far = [(pair["left"], pair["right"], round(distance(pair["left"], pair["right"]), 2)) for pair in shown]
    assert all(d > VISIBLY_DIFFERENT for _, _, d in far), far


def test_ab_next_utterances_default_pair_differs_visibly_on_every_item():
    models = default_models("ab_next_utterance", "ab")
    contexts = [[FIXED_OPENING]] + [[FIXED_OPENING, "Hello!", message] for message in REHEARSAL]
    pool = BotPool(models, seed=0)
    first, second = (generate_responses(contexts, pool.new_bot(name)) for name in models)
    far = [(a, b, round(distance(a, b), 2)) for a, b in zip(first, second)]
    assert all(d > VISIBLY_DIFFERENT for _, _, d in far), far
