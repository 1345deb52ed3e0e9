"""The short, optional questionnaire a chat task can ask before its final submit (issue 54): who the
participant is (age band, country, language, how often they use chatbots), asked only with their consent,
kept apart from the votes, exported to its own owner-only file that ``--participants`` reads.

``<task>.questionnaire.enabled=true`` turns it on (off by default); ``questions`` picks from the catalogue
below. Every answer is one of a closed list, or none (skipped, or "prefer not to say"). The page sends the
answers with the unit's final submit (``questionnaire`` in Mephisto's ``final_submission``: never in the
world's record, so never in a comparison or conversation); ``read_answers`` keeps what was consented and is on
the lists and ignores the rest, whatever a hostile page sends. ``dialeval export`` writes them beside the
export as ``<out>.participants.csv`` (``participants_path``), one row per consenting participant, in the
format ``parlai_dialeval.data.participants`` reads (a ``Participant id`` column, the join key).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from parlai_dialeval.errors import DialevalError

AGE_BANDS = ("18-24", "25-34", "35-44", "45-54", "55-64", "65+")
CHATBOT_USE = ("never", "less_than_monthly", "monthly", "weekly", "daily")
# ISO 3166-1 alpha-2, the 249 codes of tzdata's iso3166.tab (2026); the page names them in its language
COUNTRIES = tuple("""
AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY
BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK
FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR
IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK
ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM
PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF
TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW""".split())
# ISO 639-1, its 183 current codes; the page names them in its language (Intl.DisplayNames)
LANGUAGES = tuple("""
aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en
eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja
jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb
nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq
sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu""".split())
# question -> its closed list of answers; the name is the participants file's column
CATALOGUE = {"age_band": AGE_BANDS, "country": COUNTRIES, "language": LANGUAGES, "chatbot_use": CHATBOT_USE}
PREFER_NOT = "prefer_not_to_say"  # an answer the page offers on every question; exported as a missing value
KEY = "questionnaire"  # its field in the final submission and in frontend_task_opts
PARTICIPANT_ID = "Participant id"  # the join key's header, as in Prolific's demographic export


@dataclass
class QuestionnaireArgs:
    enabled: bool = field(default=False, metadata={
        "help": "ask each participant, before the final submit, a short optional questionnaire (with their consent; "
                "every question skippable); the answers are exported apart from the votes to "
                "<export>.participants.csv, for `analyze_pairwise --participants F --by QUESTION`"})
    questions: list = field(default_factory=lambda: list(CATALOGUE), metadata={
        "help": f"which questions, from the catalogue: {', '.join(CATALOGUE)} (each a closed list of answers plus "
                "'prefer not to say')"})


def questionnaire_field():
    return field(default_factory=QuestionnaireArgs, metadata={
        "help": "optional participant questionnaire (age band, country, language, chatbot use): off by default"})


def asked(args) -> list[str]:
    """The questions a task's ``questionnaire`` config asks ([] when off); DialevalError for a name outside the
    catalogue, a repeated one or an empty list."""
    if not args or not args.get("enabled"):
        return []
    questions = [str(q) for q in args.get("questions") or []]
    unknown = [q for q in questions if q not in CATALOGUE]
    if unknown or not questions or len(set(questions)) < len(questions):
        raise DialevalError(f"questionnaire.questions={questions}: expected one or more of {', '.join(CATALOGUE)}, "
                            "each once")
    return questions


def page_options(args) -> dict:
    """What a chat page's ``frontend_task_opts`` carry of the questionnaire: each question asked with its answers
    (the page offers nothing else); {} when it is off."""
    questions = asked(args)
    return {KEY: [{"name": q, "choices": list(CATALOGUE[q])} for q in questions]} if questions else {}


def read_answers(submitted, questions: list[str]) -> dict | None:
    """The answers a page submitted (``final_submission[KEY]``) to ``questions``: None without consent
    (``consent`` not exactly true; nothing sent; not an object); else {question: answer, or None where it was
    skipped, "prefer not to say", or anything not on the question's list}. Other keys are ignored."""
    if not isinstance(submitted, dict) or submitted.get("consent") is not True:
        return None
    answers = submitted.get("answers")
    answers = answers if isinstance(answers, dict) else {}
    return {q: (value if isinstance(value := answers.get(q), str) and value in CATALOGUE[q] else None)
            for q in questions}


def asked_in_db(db, task_name: str) -> list[str]:
    """The questions the task's launches asked (catalogue order; [] when none did): each launch records them in
    its run's marker (platform/runner.py, platform/resume.py), as Mephisto keeps only its own part of the config."""
    from parlai_dialeval.crowdsourcing.platform.resume import read_marker

    named = set()
    for task in db.find_tasks(task_name=task_name):
        for run in db.find_task_runs(task_id=task.db_id):
            named.update((read_marker(run) or {}).get(KEY) or [])
    return [q for q in CATALOGUE if q in named]


def participant_rows(units, questions: list[str]) -> tuple[list[dict], int]:
    """(one row per participant who consented: ``Participant id`` and each question's answer, the latest unit's
    where one answered in several; how many submissions declined). ``units``: platform.export.UnitData."""
    rows, declined = {}, 0
    for unit in units:
        outputs = unit.state.get("outputs") if isinstance(unit.state, dict) else None
        final = outputs.get("final_submission") if isinstance(outputs, dict) else None
        submitted = final.get(KEY) if isinstance(final, dict) else None
        if submitted is None:
            continue
        answers = read_answers(submitted, questions)
        if answers is None:
            declined += 1
            continue
        rows[unit.worker_id] = {PARTICIPANT_ID: unit.worker_id, **answers}
    return list(rows.values()), declined


def participants_path(out) -> Path:
    """Where ``dialeval export --out OUT`` writes the questionnaire's answers: OUT's name with
    ``.participants.csv`` in place of its suffix."""
    out = Path(out)
    return out.with_name(out.stem + ".participants.csv")


def write_participants(rows: list[dict], questions: list[str], path) -> None:
    """``rows`` as the participants CSV (csv_safe: no cell runs as a formula; 0600, atomically)."""
    import pandas as pd

    from parlai_dialeval.csv_safe import write_csv

    write_csv(pd.DataFrame(rows, columns=[PARTICIPANT_ID, *questions]), path)
