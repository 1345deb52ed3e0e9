"""``ji2022-dialogues``: the released per-dialogue JSON (see the package docstring)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable, Sequence

from parlai_dialeval.errors import DataError
from parlai_dialeval.importers.formats.ji2022.study import (CRITERIA, DIALOGUES, LETTER_TO_MODEL, NEGATIVE,
                                                            QC_MODEL, RELEASE_QC_NAME, RUN_NAMES, SCALE_MAX, SCALE_MIN,
                                                            TASK, TOPIC_CHANGE_CODES, Ji2022Report, model_labels,
                                                            rating_records, study_name, study_record)
from parlai_dialeval.importers.registry import register_importer, unexpected_content

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
    letter, _, suffix = str(name).partition("_")
    if not isinstance(name, str) or letter not in LETTER_TO_MODEL or suffix not in ("", "p"):
        raise DataError(path, "unknown model name", line=where, field="model",
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
        with unexpected_content(path, f"HIT {index}", DIALOGUES):
            records += _read_hit(path, f"HIT {index}", hit, study, outcome, report)
    return records


def _read_hit(path: Path, where: str, hit, study: str, outcome: str | None, report: Ji2022Report) -> list[dict]:
    records: list[dict] = []
    report.read += 1
    for key in ("AssignmentId", "HITId", "WorkerId", "data"):
        if not isinstance(hit, dict) or key not in hit:
            raise DataError(path, "missing key", line=where, field=key,
                            expected="an object with AssignmentId, HITId, WorkerId, data")
    worker, assignment = hit["WorkerId"], hit["AssignmentId"]
    report.workers_read.add(worker)
    if not hit["data"]:
        report.skip(f"{path} {where} (assignment {assignment}, worker {worker})", "no conversations")
        return records
    for slot, item in enumerate(hit["data"]):
        place = f"{where} conversation {slot}"
        with unexpected_content(path, place, DIALOGUES):
            for record in _release_conversation(path, place, study, hit, slot, item, outcome):
                records.append(dict(record, _file=str(path), _line=place))
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
            raise DataError(path, "missing score", line=where, field=f"raw scores.{name}",
                            expected="the seven statements")
        value = raw[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not SCALE_MIN <= value <= SCALE_MAX:
            raise DataError(path, "score is not a number 0-100", line=where, field=f"raw scores.{name}",
                            expected=f"a number {SCALE_MIN}-{SCALE_MAX}", got=value)
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
    return [conversation] + rating_records(study, cid, hit["WorkerId"], model, hit["AssignmentId"], values)
