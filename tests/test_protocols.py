"""parlai_dialeval.protocols: one source of every protocol's wordings, read by the tasks and analyses."""
import pytest

from parlai_dialeval.protocols import (PROTOCOLS, ProtocolError, criterion_of, find_question, get_protocol,
                                       protocol_names)


def test_tasks_read_their_wordings_from_the_protocols():
    from parlai_dialeval.crowdsourcing.ab_next_utterance import protocol as ab
    from parlai_dialeval.crowdsourcing.acute import protocol as acute
    from parlai_dialeval.crowdsourcing.live_chat_da import criteria
    from parlai_dialeval.crowdsourcing.pw_turn import protocol as pw
    from parlai_dialeval.crowdsourcing.scale_designs import protocol as scales
    from parlai_dialeval.crowdsourcing.sm_eval import protocol as sm

    assert pw.question_text("humanness") == get_protocol("pw_turn").wording("humanness")
    assert acute.question_text("preference") == get_protocol("acute").wording("engaging")
    assert ab.QUESTION == get_protocol("ab").questions[0].wording
    assert sm.LIKERT_QUESTIONS == {q.criterion: q.wording for q in get_protocol("sm_dialog").questions}
    assert criteria.STATEMENTS[0].startswith("It was obvious")
    assert scales.CRITERION_QUESTIONS["coherence"] == get_protocol("likert").wording("coherence")


def test_sm_dialog_asks_about_one_partner_not_a_choice_between_two():
    # issue 20 item 8: "Which speaker sounds more human?" on a 1-5 scale made no sense for one model
    sm_dialog, pw_dialog = get_protocol("sm_dialog"), get_protocol("pw_dialog")
    for question in sm_dialog.questions:
        assert question.kind == "likert" and question.scale == (1, 5)
        assert "partner" in question.wording and "which" not in question.wording.lower()
        assert question.wording != pw_dialog.wording(question.criterion)


def test_a_stored_wording_maps_back_to_its_criterion():
    assert criterion_of("  which speaker SOUNDS more human? ") == "humanlike"
    assert criterion_of("Which next response from your partner would you prefer in a long conversation?") == "engaging"
    assert criterion_of("How was your day?") is None
    protocol, question = find_question("The chatbot stays on topic.")
    assert (protocol.name, question.criterion, question.scale) == ("live_chat_da", "topic", (0, 100))
    assert not get_protocol("live_chat_da").question("robotic").positive


def test_wordings_are_unique_within_each_kind():
    seen = {}
    for protocol in PROTOCOLS.values():
        if protocol.meta.get("family") == "scale_designs":
            continue  # the four designs ask the same two questions on different scales
        for question in protocol.questions:
            key = question.wording.lower()
            assert key not in seen, f"{protocol.name} repeats the wording of {seen[key]}"
            seen[key] = protocol.name


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ProtocolError, match="expected one of ab, .*sm_turn"):
        get_protocol("pw_turns")
    with pytest.raises(ProtocolError, match="expected one of preference, humanness, interestingness"):
        get_protocol("pw_turn").question("fun")
    assert {"acute", "ab", "sm_turn", "sm_dialog", "live_chat_da", "likert", "pw_turn"} <= set(protocol_names(True))


def test_study_criteria_match_the_live_chat_export():
    criteria = get_protocol("live_chat_da").study_criteria(get_protocol("live_chat_da").meta["table_order"],
                                                           labels=True)
    assert [c["name"] for c in criteria][:2] == ["interesting", "fun"]
    assert criteria[-1] == {"name": "repetitive", "positive": False, "scale": "continuous", "label": "Repetitive",
                            "question": "I felt that the chatbot kept being repetitive during the conversation.",
                            "min": 0, "max": 100}
