"""``ji2022-mturk``: the raw MTurk batch CSVs (see the package docstring)."""
from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path
from typing import Sequence

from parlai_dialeval.errors import DataError
from parlai_dialeval.importers.formats.ji2022.study import (CRITERIA, MTURK, MTURK_SCORE_ORDER, PERSONA_SEED_MAX,
                                                            QC_MODEL, SCALE_MAX, SCALE_MIN, SLOTS, TASK,
                                                            Ji2022Report, model_labels, rating_records, study_name,
                                                            study_record)
from parlai_dialeval.importers.registry import register_importer, unexpected_content

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
        raise DataError(path, "not a number", line=f"row {row}", field=column, expected="a number",
                        got=value) from None
    if not number.is_integer():
        raise DataError(path, "not a whole number", line=f"row {row}", field=column,
                        expected="a whole number", got=value)
    return int(number)


def _scores(text, path, row, column) -> dict[str, int]:
    parts = [p for p in str(text or "").split("#") if p != ""]
    if len(parts) != len(MTURK_SCORE_ORDER):
        raise DataError(path, "score field does not hold seven ratings", line=f"row {row}", field=column,
                        expected="'r#i#f#c#fl#rep#t#': seven numbers 0-100", got=text)
    values = {}
    for name, part in zip(MTURK_SCORE_ORDER, parts):
        value = _int(part, path, row, column)
        if not SCALE_MIN <= value <= SCALE_MAX:
            raise DataError(path, "rating outside 0-100", line=f"row {row}", field=column,
                            expected="seven numbers 0-100", got=text)
        values[name] = value
    return values


def _run_of_csv(path: Path) -> str:
    return path.parent.name or path.stem


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
            with unexpected_content(path, f"row {row_number}", MTURK):
                _read_mturk_row(path, row_number, row, study, state, report)


def _read_mturk_row(path: Path, row_number: int, row: dict, study: str, state: dict,
                    report: Ji2022Report) -> None:
    report.read += 1
    for column in ("HITId", "AssignmentId", "WorkerId", "Answer.taskAnswers"):
        if not (row.get(column) or "").strip():
            raise DataError(path, f"empty value in column '{column}'", line=f"row {row_number}",
                            field=column, expected="a value")
    worker, assignment, hit = row["WorkerId"].strip(), row["AssignmentId"].strip(), row["HITId"].strip()
    report.workers_read.add(worker)
    try:
        answers = json.loads(row["Answer.taskAnswers"])
    except json.JSONDecodeError as error:
        raise DataError(path, f"not valid JSON ({error.msg})", line=f"row {row_number}",
                        field="Answer.taskAnswers", expected="a JSON array holding one object") from None
    if not (isinstance(answers, list) and len(answers) == 1 and isinstance(answers[0], dict)):
        raise DataError(path, "unexpected answer structure", line=f"row {row_number}",
                        field="Answer.taskAnswers", expected="a JSON array holding one object", got=answers)
    answer = answers[0]
    duration = _int(row["WorkTimeInSeconds"], path, row_number, "WorkTimeInSeconds") \
        if (row.get("WorkTimeInSeconds") or "").strip() else None
    if duration is not None and duration < 0:  # MTurk counts up from accepting: a negative time is corrupt
        raise DataError(path, "negative work time", line=f"row {row_number}", field="WorkTimeInSeconds",
                        expected="seconds, 0 or more", got=row["WorkTimeInSeconds"])
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
        task = answer[f"task{i}"]
        # The model's name: str() of a list or an empty name would become a model ("['x']_p", "_p")
        if not isinstance(task, str) or not task.strip():
            raise DataError(path, "not a model name", line=f"row {row_number}", field=column,
                            expected="the ParlAI model's name, a non-empty string", got=task)
        seed = _int(answer[f"seed{i}"], path, row_number, f"Answer.taskAnswers[seed{i}]") \
            if answer.get(f"seed{i}") not in (None, "") else None
        if f"score{i}" not in answer or f"dialogue{i}" not in answer:
            raise DataError(path, f"slot {i} lacks its score or dialogue", line=f"row {row_number}",
                            field=column, expected=f"score{i} and dialogue{i}")
        if not isinstance(answer[f"dialogue{i}"], str):
            raise DataError(path, "not a dialogue text", line=f"row {row_number}",
                            field=f"Answer.taskAnswers[dialogue{i}]", expected="'u: ...###b: ...###'",
                            got=answer[f"dialogue{i}"])
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
                        "task": TASK, "turns": _mturk_turns(answer[f"dialogue{i}"], model),
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
        records.extend(rating_records(study, cid, worker, model, assignment, values))
        report.conversations += 1
        report.ratings += len(CRITERIA)
    for record in records:  # validation errors then name the CSV row
        record["_file"], record["_line"] = str(path), f"row {row_number}"
    state["records"].extend(records)
    report.kept += 1
    report.workers_kept.add(worker)
