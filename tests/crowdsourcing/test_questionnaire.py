"""The optional participant questionnaire (crowdsourcing/platform/questionnaire.py): what a page may send and what is
kept of it (closed lists only, with consent), the task option, and the participants file the export writes, read back
by parlai_dialeval.data.participants. The page itself and the whole path through `dialeval export` and
`analyze_pairwise --by`: tests/crowdsourcing/test_questionnaire_browser.py."""
from __future__ import annotations

import csv
import json
import stat
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from parlai_dialeval.crowdsourcing.platform import questionnaire as q
from parlai_dialeval.crowdsourcing.platform.export import UnitData
from parlai_dialeval.data.participants import read_participants
from parlai_dialeval.errors import DialevalError

ALL = list(q.CATALOGUE)
I18N = Path(__file__).resolve().parents[2] / "crowdsourcing" / "frontend" / "src" / "i18n"


def unit(worker: str, submitted, unit_id: str = "1") -> UnitData:
    final = None if submitted is None else {q.KEY: submitted}
    return UnitData(worker_id=worker, mephisto_worker_id="m" + worker, unit_id=unit_id, assignment_id="a",
                    task_run_id="1", agent_id=worker + unit_id, agent_status="completed",
                    state={"outputs": {"messages": [], "final_submission": final}}, task_start=0.0, task_end=1.0)


def test_answers_on_the_lists_with_consent_are_kept():
    sent = {"consent": True, "answers": {"age_band": "25-34", "country": "DE", "language": "de",
                                         "chatbot_use": "weekly"}}
    assert q.read_answers(sent, ALL) == {"age_band": "25-34", "country": "DE", "language": "de", "chatbot_use": "weekly"}
    # only the questions asked; a skipped one and "prefer not to say" are missing values
    assert q.read_answers({"consent": True, "answers": {"age_band": q.PREFER_NOT, "country": "FR"}},
                          ["age_band", "chatbot_use"]) == {"age_band": None, "chatbot_use": None}


@pytest.mark.parametrize("consent", [False, None, "true", 1, [True], {"yes": True}])
def test_no_consent_no_answers(consent):
    sent = {"answers": {"age_band": "25-34"}} if consent is None else {"consent": consent, "answers": {"age_band": "25-34"}}
    assert q.read_answers(sent, ALL) is None


@pytest.mark.parametrize("sent", [None, "consent", 7, ["consent", True], True])
def test_a_submission_that_is_not_an_object_is_no_answer(sent):
    assert q.read_answers(sent, ALL) is None


@pytest.mark.parametrize("value", [
    "us", " US", "US ", "ＵＳ", "U\u200bS", "\u202eSU", "18-24\u200f", "65 +", "weekly" * 200_000, 7, 25.5, True, None,
    ["US"], {"US": "US"}, {"$ne": None}, "prefer not to say", "", "<script>alert(1)</script>", "=HYPERLINK(\"x\")",
])
def test_anything_off_the_closed_lists_is_ignored(value):
    answers = {name: value for name in ALL}
    assert q.read_answers({"consent": True, "answers": answers}, ALL) == dict.fromkeys(ALL)


def test_unasked_questions_and_other_fields_are_ignored():
    sent = {"consent": True, "answers": {"age_band": "65+", "income": "high", "worker_id": "someone_else"},
            "extra": "x" * 10_000, "worker_id": "someone_else"}
    assert q.read_answers(sent, ["age_band"]) == {"age_band": "65+"}
    assert q.read_answers({"consent": True, "answers": ["65+"]}, ["age_band"]) == {"age_band": None}


def test_the_option_is_off_by_default_and_checked():
    assert q.asked(OmegaConf.structured(q.QuestionnaireArgs())) == []
    assert q.page_options(OmegaConf.structured(q.QuestionnaireArgs())) == {}
    on = OmegaConf.structured(q.QuestionnaireArgs(enabled=True, questions=["chatbot_use", "age_band"]))
    assert q.page_options(on) == {"questionnaire": [
        {"name": "chatbot_use", "choices": ["never", "less_than_monthly", "monthly", "weekly", "daily"]},
        {"name": "age_band", "choices": ["18-24", "25-34", "35-44", "45-54", "55-64", "65+"]}]}
    for wrong in (["income"], [], ["age_band", "age_band"]):
        with pytest.raises(DialevalError, match="questionnaire.questions"):
            q.asked({"enabled": True, "questions": wrong})


def test_the_lists_are_the_standards_and_the_pages_name_every_answer():
    # ISO 3166-1 alpha-2 has 249 assigned codes, ISO 639-1 183 current ones (the page names both with Intl.DisplayNames)
    assert len(set(q.COUNTRIES)) == len(q.COUNTRIES) == 249 and all(len(c) == 2 and c.isupper() for c in q.COUNTRIES)
    assert len(set(q.LANGUAGES)) == len(q.LANGUAGES) == 183 and all(len(c) == 2 and c.islower() for c in q.LANGUAGES)
    assert {"US", "GB", "IL", "IN", "BR"} <= set(q.COUNTRIES) and {"en", "he", "hi", "pt", "zh"} <= set(q.LANGUAGES)
    for language in ("en", "he"):
        catalogue = json.loads((I18N / f"{language}.json").read_text())
        needed = [f"questionnaire.{name}" for name in ALL] + [
            f"questionnaire.{name}.{code}" for name in ("age_band", "chatbot_use") for code in q.CATALOGUE[name]]
        assert [key for key in needed if not catalogue.get(key)] == []


def test_every_chat_task_with_the_shared_submit_screen_has_the_option_off_by_default():
    from parlai_dialeval.crowdsourcing.platform.registry import get_task

    for task, group in (("arena", "arena"), ("pw_turn", "pw_turn"), ("live_chat_da", "live_chat"), ("sm_eval", "sm_eval")):
        config = OmegaConf.structured(get_task(task).config_class)
        args = OmegaConf.merge(config[group], {"questionnaire": {"enabled": True, "questions": ["country"]}})
        assert q.page_options(config[group].questionnaire) == {}
        assert q.page_options(args.questionnaire) == {"questionnaire": [{"name": "country", "choices": list(q.COUNTRIES)}]}


def test_participants_file_one_row_per_consenting_participant_read_by_the_analyses(tmp_path):
    units = [
        unit("alice", {"consent": True, "answers": {"age_band": "18-24", "country": "GB", "chatbot_use": "daily"}}),
        unit("bob", {"consent": False, "answers": {"age_band": "65+"}}),  # answers without consent: dropped
        unit("carol", None),  # never reached the questionnaire (or the task does not ask it)
        unit("=cmd|' /C calc'!A0", {"consent": True, "answers": {"age_band": "55-64", "language": "=1+1"}}),
        unit("alice", {"consent": True, "answers": {"age_band": "25-34", "country": "GB"}}, unit_id="2"),  # a later HIT
    ]
    rows, declined = q.participant_rows(units, ALL)
    assert declined == 1
    path = q.participants_path(tmp_path / "study" / "pairs.jsonl")
    assert path == tmp_path / "study" / "pairs.participants.csv"
    q.write_participants(rows, ALL, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with path.open(newline="") as handle:
        raw = list(csv.reader(handle))
    assert raw[0] == ["Participant id", "age_band", "country", "language", "chatbot_use"]
    assert raw[1:] == [["alice", "25-34", "GB", "", ""], ["'=cmd|' /C calc'!A0", "55-64", "", "", ""]]
    table = read_participants(path)
    assert list(table["worker_id"]) == ["alice", "=cmd|' /C calc'!A0"]  # restored after csv_safe, the join key
    assert table.set_index("worker_id").loc["alice", "age_band"] == "25-34"
    assert table["language"].isna().all()


def test_an_empty_questionnaire_still_writes_its_header(tmp_path):
    rows, declined = q.participant_rows([unit("bob", {"consent": False})], ["age_band"])
    q.write_participants(rows, ["age_band"], tmp_path / "p.csv")
    assert (rows, declined) == ([], 1)
    assert (tmp_path / "p.csv").read_text().splitlines() == ["Participant id,age_band"]
