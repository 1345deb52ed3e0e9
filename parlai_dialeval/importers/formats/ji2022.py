"""Importers for Ji et al. (2022) live-chat direct assessment data (TianboJi/Dialogue-Eval).

Two formats, one canonical result (docs/live_chat_analysis.md, "Importing Ji et al. 2022"):

``ji2022-mturk``
    The raw MTurk batch CSVs, ``raw_mturk_csv/<run>/Combined_Batches_*.csv``: one row per assignment,
    the worker's six conversations and ratings inside the ``Answer.taskAnswers`` JSON. A folder or the
    CSV files may be given. This is the complete source: empty submissions, durations, seeds.
``ji2022-dialogues``
    The released per-dialogue JSON, ``dialogue_data/{pass,fail}_free(runN).json``. It lacks the empty
    submissions, durations and seeds, and its robotic and repetitive scores are already reversed
    (100 - x): the importer undoes that, so ratings always hold what the worker entered.

Canonical mapping (shared with this project's own live-chat task): one ``study`` per run, named
``ji2022-<run>`` (e.g. ``ji2022-FreeTopicRound1``), declaring the seven statements and
``qc_models: ["qc"]``; one ``conversation`` per slot (id ``<AssignmentId>_<slot>``, task
``live_chat_da``); seven raw ``rating`` records per conversation. Models keep the ParlAI names the
study used, with ``_p`` for the persona variant (seed <= 500), e.g. ``biencoder_p``; the paper's labels
(``Ap``) are in the study's ``meta.model_labels``. Empty submissions are skipped, reported, and listed
in the study's ``meta.empty_submissions`` so analyses can count their workers and assignments.
"""
from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from parlai_dialeval.errors import DataError
from parlai_dialeval.importers.registry import ImportReport, register_importer

MTURK = "ji2022-mturk"
DIALOGUES = "ji2022-dialogues"
TASK = "live_chat_da"
QC_MODEL = "qc"
SCALE_MIN, SCALE_MAX = 0, 100
SLOTS = 6
PERSONA_SEED_MAX = 500  # seed <= 500: the model was given a persona (the paper's "p" variant)

# The seven statements of the paper's Figure 1, in the paper's table order (Table 3).
CRITERIA = [
    {"name": "interesting", "label": "Interesting", "positive": True,
     "question": "The conversation with the chatbot was interesting."},
    {"name": "fun", "label": "Fun", "positive": True,
     "question": "The conversation with the chatbot was fun/enjoyable."},
    {"name": "consistent", "label": "Consistent", "positive": True,
     "question": "The chatbot was consistent throughout the conversation."},
    {"name": "fluent", "label": "Fluent", "positive": True,
     "question": "The chatbot's English was fluent and natural throughout the conversation."},
    {"name": "topic", "label": "Topic", "positive": True,
     "question": "The chatbot stays on topic."},
    {"name": "robotic", "label": "Robotic", "positive": False,
     "question": "It was obvious that I was talking to a chatbot as opposed to another human user."},
    {"name": "repetitive", "label": "Repetitive", "positive": False,
     "question": "I felt that the chatbot kept being repetitive during the conversation."},
]
for _criterion in CRITERIA:
    _criterion.update(scale="continuous", min=SCALE_MIN, max=SCALE_MAX)
NEGATIVE = {c["name"] for c in CRITERIA if not c["positive"]}
# Order of the seven numbers in the MTurk ``score{i}`` field: "r#i#f#c#fl#rep#t#".
MTURK_SCORE_ORDER = ("robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic")

# ParlAI model name -> (paper letter, description). Letters as in the paper's Table 3 caption.
MODELS = {
    "biencoder": ("A", "Bi-Encoder Transformer"),
    "polyencoder": ("B", "Poly-Encoder Transformer"),
    "kvmemnn": ("C", "Key-Value Memory Network"),
    "seq2seq": ("D", "Sequence to Sequence"),
    "lan_model": ("E", "LSTM-based language model"),
}
LETTER_TO_MODEL = {letter: name for name, (letter, _) in MODELS.items()}
RELEASE_QC_NAME = "QualityControl"


def model_labels() -> dict[str, str]:
    """Canonical model name -> the paper's label (``biencoder_p`` -> ``Ap``, ``qc`` -> ``QC``)."""
    labels = {}
    for name, (letter, _) in MODELS.items():
        labels[name], labels[f"{name}_p"] = letter, f"{letter}p"
    labels[QC_MODEL] = "QC"
    return labels


def model_descriptions() -> dict[str, str]:
    out = {}
    for name, (_, description) in MODELS.items():
        out[name] = f"{description} (ParlAI {name}), no persona"
        out[f"{name}_p"] = f"{description} (ParlAI {name}) with a persona"
    out[QC_MODEL] = "quality-control bot: random training-set responses with meaning distortion"
    return out


# Topic-change codes of the MTurk CSV and the sentences the released JSON uses for them.
TOPIC_CHANGES = {
    "bot change": "The chatbot changed the topic.",
    "user change next": "The user will change the topic in the next input.",
    "user change last": "The user changed the topic the last input.",
    "no change": "No topic change.",
}
TOPIC_CHANGE_CODES = {sentence: code for code, sentence in TOPIC_CHANGES.items()}

RUN_NAMES = {"free(run1)": "FreeTopicRound1", "free(run2)": "FreeTopicRound2",
             "icebreaker": "IceBreaker", "ice-breaker": "IceBreaker"}


def study_name(run: str) -> str:
    return f"ji2022-{run}"


def study_record(run: str, source: str, empty_submissions: list[dict] | None = None) -> dict:
    meta = {
        "source": source,
        "paper": "Ji et al. 2022, Achieving Reliable Human Assessment of Open-Domain Dialogue Systems (ACL)",
        "model_labels": model_labels(),
        "model_descriptions": model_descriptions(),
        "persona_rule": f"seed <= {PERSONA_SEED_MAX} means the model had a persona (name suffix _p)",
    }
    if empty_submissions is not None:
        meta["empty_submissions"] = empty_submissions
    return {
        "type": "study",
        "name": study_name(run),
        "description": f"Ji et al. 2022 live-chat direct assessment, run {run}: each assignment holds six "
                       "live conversations (five genuine models and the quality-control bot 'qc') "
                       "rated on seven 0-100 statements.",
        "criteria": [dict(c) for c in CRITERIA],
        "qc_models": [QC_MODEL],
        "meta": meta,
    }


@dataclass
class Ji2022Report(ImportReport):
    """ImportReport plus the units it counted (assignments, workers) for a readable summary."""

    unit: str = "assignments"
    workers_read: set = field(default_factory=set)
    workers_kept: set = field(default_factory=set)
    conversations: int = 0
    ratings: int = 0
    files: list[str] = field(default_factory=list)
    studies: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head, *skips = super().summary().split("\n")
        detail = [
            f"  read {self.read} {self.unit} from {len(self.workers_read)} workers in {len(self.files)} "
            f"file(s); studies: {', '.join(self.studies)}",
            f"  kept {self.kept} {self.unit} from {len(self.workers_kept)} workers: "
            f"{self.conversations} conversations, {self.ratings} ratings",
        ]
        return "\n".join([head] + detail + skips)


# ---------------------------------------------------------------------------------------------------
# ji2022-mturk: the raw MTurk batch CSVs
# ---------------------------------------------------------------------------------------------------

REQUIRED_COLUMNS = ("HITId", "AssignmentId", "WorkerId", "WorkTimeInSeconds", "Answer.taskAnswers")
_PAIR = re.compile(r"#(\d+)@([^#]*)")


def _mturk_csvs(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("Combined_Batches_*.csv")) or sorted(path.glob("*.csv"))
        if not files:
            raise DataError(path, "folder holds no MTurk batch CSV",
                            expected="Combined_Batches_*.csv files (Ji et al. raw_mturk_csv/<run>/)")
        return files
    return [path]


def _csv_header(path: Path) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            return next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _detect_mturk(path: Path) -> bool:
    if path.is_dir():
        files = sorted(path.glob("Combined_Batches_*.csv"))
        return bool(files) and _detect_mturk(files[0])
    if path.suffix.lower() != ".csv":
        return False
    header = _csv_header(path)
    return "Answer.taskAnswers" in header and "Input.u0" in header


def _pairs(text: str | None) -> list[tuple[int, str]]:
    """``"#0@coronavirus#2@poetry"`` -> [(0, "coronavirus"), (2, "poetry")]."""
    return [(int(r), value) for r, value in _PAIR.findall(text or "")]


def _align(items: list[tuple[int, str]], extra: list[tuple[int, str]]) -> list[str | None]:
    """The ``extra`` value for each item: by position when the rounds line up (a round may repeat,
    e.g. two topic changes in one round), else by round."""
    if [r for r, _ in items] == [r for r, _ in extra]:
        return [value for _, value in extra]
    by_round = dict(extra)
    return [by_round.get(r) for r, _ in items]


def _topic_meta(topics: list[tuple[int, str]], attitudes: list[tuple[int, str]],
                changes: list[tuple[int, str]], chatbot: list[tuple[int, str]]) -> tuple[list, list]:
    topic_list = [{"round": r, "topic": t, **({"attitude": a} if a is not None else {})}
                  for (r, t), a in zip(topics, _align(topics, attitudes))]
    change_list = [{"round": r, "change": c, **({"attitude": a} if a is not None else {})}
                   for (r, c), a in zip(changes, _align(changes, chatbot))]
    return topic_list, change_list


def _mturk_turns(text: str, model: str) -> list[dict]:
    turns = []
    for part in text.split("###"):
        if not part:
            continue
        if part.startswith("u: "):
            turns.append({"speaker": "human", "text": part[3:]})
        elif part.startswith("b: "):
            turns.append({"speaker": model, "text": part[3:]})
        elif turns:  # "###" inside a message: keep it with the message it belongs to
            turns[-1]["text"] += "###" + part
        else:
            turns.append({"speaker": "human", "text": part})
    return turns


_ERROR = re.compile(r"t(\d+)r(\d+)@@error@@(.*?)###url:(\S*)", re.S)


def _model_errors(text: str | None) -> dict[int, list[dict]]:
    """``error-message``: failed model calls, ``t<slot>r<round>@@error@@<input>###url:<url> || ...``."""
    out: dict[int, list[dict]] = {}
    for slot, rnd, user_input, url in _ERROR.findall(text or ""):
        out.setdefault(int(slot), []).append({"round": int(rnd), "input": user_input, "url": url})
    return out


def _int(value, path, row, column) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DataError(path, f"row {row}: not a number", line=row, field=column, expected="a number",
                        got=value) from None
    if not number.is_integer():
        raise DataError(path, f"row {row}: not a whole number", line=row, field=column,
                        expected="a whole number", got=value)
    return int(number)


def _scores(text, path, row, column) -> dict[str, int]:
    parts = [p for p in str(text or "").split("#") if p != ""]
    if len(parts) != len(MTURK_SCORE_ORDER):
        raise DataError(path, f"row {row}: score field does not hold seven ratings", line=row, field=column,
                        expected="'r#i#f#c#fl#rep#t#': seven numbers 0-100", got=text)
    values = {}
    for name, part in zip(MTURK_SCORE_ORDER, parts):
        value = _int(part, path, row, column)
        if not SCALE_MIN <= value <= SCALE_MAX:
            raise DataError(path, f"row {row}: rating outside 0-100", line=row, field=column,
                            expected="seven numbers 0-100", got=text)
        values[name] = value
    return values


def _run_of_csv(path: Path) -> str:
    return path.parent.name or path.stem


def _rating_records(study: str, conversation_id: str, worker: str, model: str, assignment: str,
                    values: dict[str, int]) -> list[dict]:
    return [{"type": "rating", "study": study, "conversation_id": conversation_id, "worker_id": worker,
             "model": model, "criterion": c["name"], "scale": "continuous", "scale_min": SCALE_MIN,
             "scale_max": SCALE_MAX, "value": values[c["name"]], "assignment_id": assignment}
            for c in CRITERIA]


def _model_name(task: str, seed: int | None) -> str:
    if task == QC_MODEL or seed is None:
        return task
    return f"{task}_p" if seed <= PERSONA_SEED_MAX else task


@register_importer(MTURK, detect=_detect_mturk,
                   help="Ji et al. 2022 raw MTurk batch CSVs (raw_mturk_csv/<run>/Combined_Batches_*.csv, "
                        "or the folder)")
def import_mturk(paths: Sequence[Path]) -> Ji2022Report:
    report = Ji2022Report(MTURK)
    by_run: dict[str, dict] = {}
    for given in paths:
        for path in _mturk_csvs(Path(given)):
            report.files.append(str(path))
            run = _run_of_csv(path)
            state = by_run.setdefault(run, {"records": [], "empty": [], "files": []})
            state["files"].append(str(path))
            _read_mturk_csv(path, study_name(run), state, report)
    for run, state in by_run.items():
        source = "TianboJi/Dialogue-Eval raw MTurk CSV: " + ", ".join(Path(f).name for f in state["files"])
        report.records.append(study_record(run, source, state["empty"]))
        report.records.extend(state["records"])
        report.studies.append(study_name(run))
    return report


def _read_mturk_csv(path: Path, study: str, state: dict, report: Ji2022Report) -> None:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        for column in REQUIRED_COLUMNS:
            if column not in header:
                raise DataError(path, f"row 1 (header): missing column '{column}'", line=1, field=column,
                                expected="the MTurk batch columns " + ", ".join(REQUIRED_COLUMNS))
        for row_number, row in enumerate(reader, start=2):
            _read_mturk_row(path, row_number, row, study, state, report)


def _read_mturk_row(path: Path, row_number: int, row: dict, study: str, state: dict,
                    report: Ji2022Report) -> None:
    report.read += 1
    for column in ("HITId", "AssignmentId", "WorkerId", "Answer.taskAnswers"):
        if not (row.get(column) or "").strip():
            raise DataError(path, f"row {row_number}: empty value in column '{column}'", line=row_number,
                            field=column, expected="a value")
    worker, assignment, hit = row["WorkerId"].strip(), row["AssignmentId"].strip(), row["HITId"].strip()
    report.workers_read.add(worker)
    try:
        answers = json.loads(row["Answer.taskAnswers"])
    except json.JSONDecodeError as error:
        raise DataError(path, f"row {row_number}: not valid JSON ({error.msg})", line=row_number,
                        field="Answer.taskAnswers", expected="a JSON array holding one object") from None
    if not (isinstance(answers, list) and len(answers) == 1 and isinstance(answers[0], dict)):
        raise DataError(path, f"row {row_number}: unexpected answer structure", line=row_number,
                        field="Answer.taskAnswers", expected="a JSON array holding one object", got=answers)
    answer = answers[0]
    duration = _int(row["WorkTimeInSeconds"], path, row_number, "WorkTimeInSeconds") \
        if (row.get("WorkTimeInSeconds") or "").strip() else None
    planned = [row.get(f"Input.u{i}") for i in range(SLOTS)]
    slots = [i for i in range(SLOTS) if f"task{i}" in answer]
    feedback = (answer.get("feedback") or "").strip() or None
    mturk_meta = {k: row[c] for k, c in (("assignment_status", "AssignmentStatus"),
                                         ("hit_type_id", "HITTypeId"), ("reward", "Reward"))
                  if (row.get(c) or "").strip()}
    if not slots:
        why = "empty submission: Answer.taskAnswers holds no conversations or ratings" + \
              (" (only feedback)" if feedback else "")
        report.skip(f"{path} row {row_number} (assignment {assignment}, worker {worker})", why)
        state["empty"].append({"assignment_id": assignment, "hit_id": hit, "worker_id": worker,
                               "models": [m for m in planned if m], "assignment_duration": duration,
                               "feedback": feedback, "file": str(path), "row": row_number, **mturk_meta})
        return
    errors = _model_errors(answer.get("error-message"))
    records = []
    for i in slots:
        column = f"Answer.taskAnswers[task{i}]"
        task = str(answer[f"task{i}"])
        seed = _int(answer[f"seed{i}"], path, row_number, f"Answer.taskAnswers[seed{i}]") \
            if answer.get(f"seed{i}") not in (None, "") else None
        if f"score{i}" not in answer or f"dialogue{i}" not in answer:
            raise DataError(path, f"row {row_number}: slot {i} lacks its score or dialogue", line=row_number,
                            field=column, expected=f"score{i} and dialogue{i}")
        values = _scores(answer[f"score{i}"], path, row_number, f"Answer.taskAnswers[score{i}]")
        model = _model_name(task, seed)
        cid = f"{assignment}_{i}"
        topics, changes = _topic_meta(_pairs(answer.get(f"topic{i}")), _pairs(answer.get(f"topic_opinion{i}")),
                                      _pairs(answer.get(f"topic_change_opinion{i}")),
                                      _pairs(answer.get(f"topic_chatbot_opinion{i}")))
        opening = next((t for t in topics if t["round"] == 0), topics[0] if topics else {})
        meta = {"parlai_model": task, "persona": task != QC_MODEL and seed is not None
                and seed <= PERSONA_SEED_MAX, "seed": seed, "label": model_labels().get(model, model),
                "topics": topics, "topic_changes": changes, **mturk_meta}
        if planned[i] and planned[i] != task:
            meta["planned_model"] = planned[i]
        if errors.get(i):
            meta["model_errors"] = errors[i]
        conversation = {"type": "conversation", "study": study, "id": cid, "models": [model],
                        "worker_id": worker, "assignment_id": assignment, "hit_id": hit, "slot": i,
                        "task": TASK, "turns": _mturk_turns(str(answer[f"dialogue{i}"]), model),
                        "status": "complete", "meta": meta}
        if opening.get("topic") is not None:
            conversation["topic"] = opening["topic"]
        if opening.get("attitude") is not None:
            conversation["topic_attitude"] = opening["attitude"]
        if duration is not None:
            conversation["assignment_duration"] = duration
        if feedback:
            conversation["feedback"] = feedback
        records.append(conversation)
        records.extend(_rating_records(study, cid, worker, model, assignment, values))
        report.conversations += 1
        report.ratings += len(CRITERIA)
    state["records"].extend(records)
    report.kept += 1
    report.workers_kept.add(worker)


# ---------------------------------------------------------------------------------------------------
# ji2022-dialogues: the released per-dialogue JSON
# ---------------------------------------------------------------------------------------------------

_RELEASE_FILE = re.compile(r"^(pass|fail)_(.+)\.json$")


def _release_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if _RELEASE_FILE.match(p.name))
        if not files:
            raise DataError(path, "folder holds no released dialogue JSON",
                            expected="pass_free(runN).json / fail_free(runN).json (Ji et al. dialogue_data/)")
        return files
    return [path]


def _detect_dialogues(path: Path) -> bool:
    if path.is_dir():
        return any(_RELEASE_FILE.match(p.name) for p in path.glob("*.json"))
    if path.suffix.lower() != ".json":
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return head.lstrip().startswith("[") and '"AssignmentId"' in head and '"data"' in head


def _run_of_release(path: Path) -> tuple[str, str | None]:
    """``pass_free(run1).json`` -> ("FreeTopicRound1", "pass")."""
    match = _RELEASE_FILE.match(path.name)
    if not match:
        return path.stem, None
    outcome, run = match.groups()
    return RUN_NAMES.get(run.lower(), run), outcome


def _release_model(name: str, path: Path, where: str) -> str:
    if name == RELEASE_QC_NAME:
        return QC_MODEL
    letter, _, suffix = name.partition("_")
    if letter not in LETTER_TO_MODEL or suffix not in ("", "p"):
        raise DataError(path, f"{where}: unknown model name", field="model",
                        expected="A-E, A_p-E_p or QualityControl", got=name)
    return LETTER_TO_MODEL[letter] + ("_p" if suffix else "")


@register_importer(DIALOGUES, detect=_detect_dialogues,
                   help="Ji et al. 2022 released dialogue JSON (dialogue_data/{pass,fail}_free(runN).json, "
                        "or the folder)")
def import_dialogues(paths: Sequence[Path]) -> Ji2022Report:
    report = Ji2022Report(DIALOGUES, unit="assignments")
    by_run: dict[str, list[dict]] = {}
    for given in paths:
        for path in _release_files(Path(given)):
            report.files.append(str(path))
            run, outcome = _run_of_release(path)
            by_run.setdefault(run, []).extend(_read_release(path, study_name(run), outcome, report))
    for run, records in by_run.items():
        report.records.append(study_record(run, "TianboJi/Dialogue-Eval released dialogue JSON "
                                                "(dialogue_data/); robotic and repetitive un-reversed"))
        report.records.extend(records)
        report.studies.append(study_name(run))
    return report


def _read_release(path: Path, study: str, outcome: str | None, report: Ji2022Report) -> Iterable[dict]:
    try:
        with open(path, encoding="utf-8") as handle:
            hits = json.load(handle)
    except json.JSONDecodeError as error:
        raise DataError(path, f"not valid JSON ({error.msg})", line=error.lineno,
                        expected="a JSON list of HITs") from None
    if not isinstance(hits, list):
        raise DataError(path, "not a list of HITs", expected="[{AssignmentId, HITId, WorkerId, data}, ...]")
    records = []
    for index, hit in enumerate(hits):
        where = f"HIT {index}"
        report.read += 1
        for key in ("AssignmentId", "HITId", "WorkerId", "data"):
            if key not in hit:
                raise DataError(path, f"{where}: missing key", field=key,
                                expected="AssignmentId, HITId, WorkerId, data")
        worker, assignment = hit["WorkerId"], hit["AssignmentId"]
        report.workers_read.add(worker)
        if not hit["data"]:
            report.skip(f"{path} {where} (assignment {assignment}, worker {worker})", "no conversations")
            continue
        for slot, item in enumerate(hit["data"]):
            records.extend(_release_conversation(path, f"{where} conversation {slot}", study, hit, slot, item,
                                                 outcome))
            report.conversations += 1
            report.ratings += len(CRITERIA)
        report.kept += 1
        report.workers_kept.add(worker)
    return records


def _release_conversation(path: Path, where: str, study: str, hit: dict, slot: int, item: dict,
                          outcome: str | None) -> list[dict]:
    model = _release_model(item.get("model", ""), path, where)
    raw = item.get("raw scores") or {}
    values = {}
    for criterion in CRITERIA:
        name = criterion["name"]
        if name not in raw:
            raise DataError(path, f"{where}: missing score", field=f"raw scores.{name}",
                            expected="the seven statements")
        value = raw[name]
        # The release stores negatively worded statements already reversed (100 - x); undo it so the
        # canonical rating is what the worker entered, as in the MTurk CSV.
        values[name] = SCALE_MAX - value if name in NEGATIVE else value
    turns = []
    for exchange in item.get("dialogue") or []:
        if exchange.get("user") is not None:
            turns.append({"speaker": "human", "text": exchange["user"]})
        if exchange.get("bot") is not None:
            turns.append({"speaker": model, "text": exchange["bot"]})
    topics = [{"round": t["round"], "topic": t["topic"], **({"attitude": t["attitude"]} if "attitude" in t else {})}
              for t in item.get("topic") or []]
    changes = [{"round": c["round"], "change": TOPIC_CHANGE_CODES.get(c.get("action"), c.get("action")),
                **({"attitude": c["attitude"]} if "attitude" in c else {})}
               for c in item.get("change of topic") or []]
    opening = next((t for t in topics if t["round"] == 0), topics[0] if topics else {})
    parlai_model = model[:-2] if model.endswith("_p") else model
    meta = {"parlai_model": parlai_model, "persona": model.endswith("_p"), "label": model_labels()[model],
            "topics": topics, "topic_changes": changes}
    if outcome:
        meta["released_qc"] = outcome
    cid = f"{hit['AssignmentId']}_{slot}"
    conversation = {"type": "conversation", "study": study, "id": cid, "models": [model],
                    "worker_id": hit["WorkerId"], "assignment_id": hit["AssignmentId"], "hit_id": hit["HITId"],
                    "slot": slot, "task": TASK, "turns": turns, "status": "complete", "meta": meta}
    if opening.get("topic") is not None:
        conversation["topic"] = opening["topic"]
    if opening.get("attitude") is not None:
        conversation["topic_attitude"] = opening["attitude"]
    feedback = item.get("feedback")
    if isinstance(feedback, str) and feedback.strip() and feedback != "None":  # the release writes "None"
        conversation["feedback"] = feedback.strip()
    return [conversation] + _rating_records(study, cid, hit["WorkerId"], model, hit["AssignmentId"], values)
