"""PW-Turn world logic (Smith et al. 2022, 3.1.2 and Appendix A) and its canonical export."""
from __future__ import annotations

import random

import pytest
from parlai.core.agents import Agent

from parlai_dialeval.crowdsourcing.pw_turn import export, protocol
from parlai_dialeval.data import from_records


class RecordingAgent(Agent):
    """Answers '<name> reply N' and keeps every observation it received."""

    def __init__(self, name):
        super().__init__({})
        self.id, self.seen, self.count = name, [], 0

    def observe(self, observation):
        self.seen.append(observation["text"])
        self.observation = observation

    def act(self):
        self.count += 1
        return {"id": self.id, "text": f"{self.id} reply {self.count}", "episode_done": False}


def run_session(seed=0, picks=None):
    agents = {"alpha": RecordingAgent("alpha"), "beta": RecordingAgent("beta")}
    session = protocol.PairwiseTurnSession(agents, "humanness", num_turns=6, rng=random.Random(seed))
    picks = picks or ["left", "right", "left", "left", "right", "right"]
    session.human_says(protocol.FIXED_OPENING, fixed=True)
    for turn, side in enumerate(picks):
        session.choose(side, f"because {turn}")
        if not session.done:
            session.human_says(f"human message number {turn + 1} here")
    return session, agents


def test_both_models_see_identical_histories_and_the_choice_continues_the_dialogue():
    session, agents = run_session()
    assert agents["alpha"].seen == agents["beta"].seen
    assert len(agents["alpha"].seen) == 6
    for turn, choice in enumerate(session.choices):
        bot_turn = session.turns[choice["turn_index"]]
        assert bot_turn["speaker"] == choice[choice["choice"]]
        assert bot_turn["text"] == choice["responses"][choice["winner"]]
        # the next observation both models got is the dialogue including that chosen text
        if turn + 1 < len(session.choices):
            expected = "\n".join(t["text"] for t in session.turns[: choice["turn_index"] + 2])
            assert agents["alpha"].seen[turn + 1] == agents["beta"].seen[turn + 1] == expected
    assert session.turns[0]["text"] == "Hi!" and len(session.turns) == 12


def test_display_order_is_randomised_and_seeded():
    lefts = [run_session(seed)[0].choices[0]["left"] for seed in range(40)]
    assert 10 < lefts.count("alpha") < 30  # binomial(40, 0.5): outside this range has p < 0.002
    assert [c["left"] for c in run_session(3)[0].choices] == [c["left"] for c in run_session(3)[0].choices]


def test_choice_needs_pending_responses_and_a_justification():
    session = protocol.PairwiseTurnSession({"a": RecordingAgent("a"), "b": RecordingAgent("b")})
    with pytest.raises(RuntimeError):
        session.choose("left", "x")
    session.human_says("Hi!")
    with pytest.raises(ValueError):
        session.choose("left", "  ")
    with pytest.raises(RuntimeError):
        session.human_says("again")
    with pytest.raises(ValueError):
        protocol.PairwiseTurnSession({"a": RecordingAgent("a"), "b": RecordingAgent("b")}, "fun")


def test_onboarding_two_tries_then_fail():
    task = protocol.onboarding_task(random.Random(1))
    answers = task["answers"]
    wrong = ["right" if a == "left" else "left" for a in answers]
    grader = protocol.OnboardingGrader(answers)
    assert grader.submit(wrong) == "retry"
    assert grader.submit(answers) == "pass"
    grader = protocol.OnboardingGrader(answers)
    assert [grader.submit(wrong), grader.submit(answers[:3] + wrong[3:])] == ["retry", "fail"]
    # the shown pairs hide which side is good, but the answer key points at the good text
    for pair, answer, (_human, truth) in zip(task["pairs"], answers, protocol.ONBOARDING_CONVERSATION):
        assert pair[answer] == truth.good


def test_export_is_canonical_and_matches_the_session():
    session, _ = run_session()
    records = [export.study_record("s", "humanness")] + export.unit_records(
        session.state(), study="s", worker_id="w1", assignment_id="as1", conversation_id="c1")
    data = from_records(records)
    conv = data.conversations.iloc[0]
    comps = data.comparisons
    assert len(comps) == 6 and set(comps["item_id"]) == {"c1"}
    assert comps["question"].iloc[0] == "Which next response from your partner sounds more human?"
    for row in comps.itertuples():
        chosen = row.response_a if row.choice == "a" else row.response_b
        assert conv["turns"][row.turn_index]["text"] == chosen
        assert row.context[-1]["speaker"] == "human" and len(row.context) == row.turn_index
    assert conv["meta"]["worker_checks"]["short_messages"] is False
