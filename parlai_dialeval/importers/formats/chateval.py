"""Importer ``chateval-ab``: ChatEval 2018 A/B next-utterance comparisons (folders ``AMT_*``).

Each comparison folder holds ``order.txt`` (model A's then model B's response file), ``results.txt``
(blocks of ``Source:``, two ``Candidate target:`` lines and ``Winner is....: [votes]`` with 0 = A,
1 = B, -1 = tie, or ``It's a tie!`` for identical responses) and
``amt_hit_responses.converted.json`` (every MTurk assignment with its worker and answers).

Mapping (docs/pairwise_analysis.md): one ``comparison`` per worker vote, worker and assignment taken
from the JSON; ``results.txt`` is authoritative for which votes count, so a JSON answer that has no
matching vote left in ``results.txt`` is skipped with a reason. Identical responses become ONE
comparison per item (``choice`` tie, ``automatic`` true, worker ``automatic``): no worker saw them, so
they carry no vote slots. Model names come from the response file names (see ``model_name``).
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from parlai_dialeval.errors import DataError
from parlai_dialeval.importers.registry import ImportReport, register_importer

FORMAT = "chateval-ab"
STUDY_PREFIX = "chateval-ab-2018/"  # one study per comparison folder: each was its own MTurk run
RESULTS, ORDER, RESPONSES = "results.txt", "order.txt", "amt_hit_responses.converted.json"
AUTOMATIC_WORKER = "automatic"
_VOTE_CHOICE = {0: "a", 1: "b", -1: "tie"}
_JSON_CHOICE = {0: "a", 1: "b", "tie": "tie"}
# The four human-readable response files of the NCM evaluation set, named as the folder names do.
_KNOWN_FILES = {
    "neural_conv_model_eval_responses.txt": "NCM",
    "neural_conv_model_cakechat_responses.txt": "Cakechat",
    "neural_conv_model_joao_responses.txt": "Human1",
    "neural_conv_model_eval_responses_human_2.txt": "Human2",
}
_BLOCK = re.compile(r"Source: ?(?P<source>.*)\nCandidate target: ?(?P<a>.*)\nCandidate target: ?(?P<b>.*)\n"
                    r"Winner is\.\.\.\.: (?P<winner>.*)")


def model_name(response_file: str) -> str:
    """A model name from a response file path: a known NCM file's name, else the file's base name
    without the ``pred.txt.`` prefix and the training-metrics tail (``_acc_..``) OpenNMT appends."""
    base = Path(response_file.strip()).name
    if base in _KNOWN_FILES:
        return _KNOWN_FILES[base]
    base = base.removeprefix("pred.txt.")
    return base.split("_acc_")[0]


def _is_comparison_folder(path: Path) -> bool:
    return path.is_dir() and (path / RESULTS).is_file() and (path / ORDER).is_file()


def _folders(path: Path) -> list[Path]:
    if _is_comparison_folder(path):
        return [path]
    if path.is_dir():
        return sorted(p for p in path.iterdir() if _is_comparison_folder(p))
    return []


def detect(path: Path) -> bool:
    return bool(_folders(path))


def parse_results(path: Path) -> list[dict]:
    """results.txt -> one dict per prompt: source, a, b, votes (list of ints) or None for identical,
    and the line its block starts on."""
    text = _read_text(path)
    items = []
    for match in _BLOCK.finditer(text):
        winner = match["winner"].strip()
        line = text.count("\n", 0, match.start()) + 1
        if winner.startswith("It's a tie"):
            votes = None
        else:
            try:
                votes = json.loads(winner)
            except json.JSONDecodeError:
                votes = None
            if not isinstance(votes, list) or any(type(v) is not int or v not in _VOTE_CHOICE for v in votes):
                raise DataError(path, "unreadable vote list", line=line + 3, field="Winner is....",
                                expected="[v, ...] with v in 0, 1, -1 or It's a tie!", got=winner)
        items.append({"source": match["source"], "a": match["a"], "b": match["b"], "votes": votes, "line": line})
    if not items:
        raise DataError(path, "no comparison blocks found", expected="Source:/Candidate target:/Winner is....")
    return items


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise DataError(path, f"not UTF-8 text ({error.reason} at byte {error.start})",
                        expected="UTF-8 text") from None


def _answers(folder: Path) -> dict[int, list[dict]]:
    """Prompt index -> JSON answers (worker, assignment, choice) in submission order."""
    path = folder / RESPONSES
    by_item: dict[int, list[dict]] = defaultdict(list)
    if not path.is_file():
        return by_item
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as error:
        raise DataError(path, f"not valid JSON ({error.msg})", line=error.lineno) from None
    assignments = data.get("assignments") if isinstance(data, dict) else None
    if not isinstance(assignments, list) or not all(isinstance(a, dict) for a in assignments):
        raise DataError(path, "no list of assignments", field="assignments",
                        expected='{"assignments": [{WorkerId, AssignmentId, answers}, ...]}', got=data)
    for position, assignment in sorted(enumerate(assignments), key=lambda a: str(a[1].get("SubmitTime") or "")):
        where = f"assignment {position}"
        for key in ("WorkerId", "AssignmentId"):
            if not isinstance(assignment.get(key), str) or not assignment[key].strip():
                raise DataError(path, "missing worker or assignment", line=where, field=key,
                                expected="a non-empty string", got=assignment.get(key))
        answers = assignment.get("answers", [])
        if not isinstance(answers, list):
            raise DataError(path, "answers is not a list", line=where, field="answers", expected="a list",
                            got=answers)
        for answer in answers:
            example = str(answer.get("example", "")) if isinstance(answer, dict) else ""
            choice = answer.get("choice") if isinstance(answer, dict) else None
            if not re.fullmatch(r"ex-\d+", example) or type(choice) not in (int, str) or choice not in _JSON_CHOICE:
                raise DataError(path, "unreadable answer", line=where, field="answers",
                                expected="{example: ex-NNN, choice: 0|1|tie}", got=answer)
            by_item[int(example[3:])].append({
                "worker_id": assignment["WorkerId"], "assignment_id": assignment["AssignmentId"],
                "hit_id": assignment.get("HITId"),
                "submit_time": assignment["SubmitTime"] if isinstance(assignment.get("SubmitTime"), str) else None,
                "choice": _JSON_CHOICE[choice]})
    return by_item


def convert_folder(folder: Path, report: ImportReport) -> None:
    order = [line for line in _read_text(folder / ORDER).splitlines() if line.strip()]
    if len(order) != 2:
        raise DataError(folder / ORDER, "expected two response files", expected="2 lines", got=len(order))
    model_a, model_b = model_name(order[0]), model_name(order[1])
    eval_set = folder.name.split("_")[1] if folder.name.count("_") >= 2 else folder.name
    items = parse_results(folder / RESULTS)
    answers = _answers(folder)
    report.records.append({"type": "study", "name": STUDY_PREFIX + folder.name,
                           "description": f"ChatEval 2018 A/B next-utterance comparison {model_a} vs {model_b} "
                                          f"on the {eval_set} prompts (MTurk, 3 votes per prompt; identical "
                                          "responses are automatic ties)"})
    for index, item in enumerate(items):
        item_id = f"{folder.name}/ex-{index:03d}"
        base = {"_file": str(folder / RESULTS), "_line": item["line"], "type": "comparison",
                "study": STUDY_PREFIX + folder.name, "item_id": item_id, "model_a": model_a,
                "model_b": model_b, "context": item["source"], "response_a": item["a"],
                "response_b": item["b"],
                "meta": {"folder": folder.name, "eval_set": eval_set, "prompt_index": index,
                         "response_file_a": order[0].strip(), "response_file_b": order[1].strip()}}
        given = answers.pop(index, [])
        report.read += len(given)
        if item["votes"] is None:
            report.records.append({**base, "worker_id": AUTOMATIC_WORKER, "choice": "tie", "automatic": True})
            report.read += 1
            report.kept += 1
            for answer in given:
                report.skip(f"{folder.name} {answer['assignment_id']} ex-{index:03d}",
                            "answer to an item with identical responses (results.txt: automatic tie)")
            continue
        remaining = [_VOTE_CHOICE[v] for v in item["votes"]]
        for answer in given:
            if answer["choice"] in remaining:
                remaining.remove(answer["choice"])
                report.records.append({**base, "worker_id": answer["worker_id"], "choice": answer["choice"],
                                       "assignment_id": answer["assignment_id"],
                                       "meta": {**base["meta"], "hit_id": answer["hit_id"],
                                                **({"submit_time": answer["submit_time"]} if answer["submit_time"]
                                                   else {})}})
                report.kept += 1
            else:
                report.skip(f"{folder.name} {answer['assignment_id']} ex-{index:03d}",
                            f"vote '{answer['choice']}' not in results.txt {item['votes']} (results.txt is "
                            "authoritative: the answer arrived after the authors compiled results)")
        # Votes in results.txt with no answer in the JSON still count; their worker is unknown.
        for choice in remaining:
            report.records.append({**base, "worker_id": f"{folder.name}/unknown", "choice": choice,
                                   "meta": {**base["meta"], "worker": "not in " + RESPONSES}})
            report.read += 1
            report.kept += 1
    for index, given in answers.items():
        for answer in given:
            report.read += 1
            report.skip(f"{folder.name} {answer['assignment_id']} ex-{index:03d}", "no such prompt in results.txt")


@register_importer(FORMAT, detect=detect,
                   help="ChatEval 2018 A/B folders AMT_* (results.txt, order.txt, amt_hit_responses); "
                        "one folder, several, or their parent")
def import_chateval_ab(paths) -> ImportReport:
    report = ImportReport(FORMAT)
    folders = []
    for path in map(Path, paths):
        found = _folders(path)
        if not found:
            raise DataError(path, "no ChatEval A/B comparison folder here",
                            expected=f"a folder with {RESULTS} and {ORDER}, or a folder of such folders")
        folders += found
    for folder in folders:
        convert_folder(folder, report)
    return report
