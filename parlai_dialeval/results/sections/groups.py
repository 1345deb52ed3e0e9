"""Results by the people who judged (analysis/groups.py, analysis/raking.py): with ``--participants F.csv`` (Prolific's
demographic export, data/participants.py), rankings per group of ``--by ATTRIBUTE`` with intervals corrected for the
number of groups and a test of whether the groups disagree, and with ``--weights TARGETS.csv`` the ranking weighted to
the target population beside the unweighted one. Nothing without ``--participants``.

Privacy: the attributes are joined here only, never written per worker; the tables hold group-level numbers, and a
group of fewer than ``--min-group-workers`` workers is neither ranked nor counted."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from parlai_dialeval.errors import DataError, DialevalError, record_line
from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section
from parlai_dialeval.results.sections.style import given

PARTICIPANTS_HELP = ("Prolific's demographic export (dialeval prolific demographics TASK) or the study's own questionnaire "
                     "(FILE.participants.csv beside dialeval export's FILE.jsonl), joined on worker_id for --by and "
                     "--weights; its attributes stay out of every table (group-level numbers only)")
BY_HELP = ("rankings per group of this column of --participants, intervals corrected for the number of groups "
           "(Bonferroni), and a permutation test of whether the groups disagree; a number in bands: age alone is "
           "under 18, 18-29, 30-49, 50+; NAME:18,30,50 gives the bands' lower edges")
WEIGHTS_HELP = ("CSV attribute,level,share: the target population's margins (attribute as in --by, e.g. age:18,30,50 "
                "or sex); workers are weighted by raking to them, and the weighted ranking is shown beside the "
                "unweighted one with Kish's effective sample size")


@dataclass
class Weighting:
    targets: pd.DataFrame  # attribute, level, share, line
    weights: pd.Series  # per worker id (the notebook's; never written)
    effective_workers: float  # Kish
    workers: int
    left_out: int  # workers without every raked attribute
    rankings: pd.DataFrame


@dataclass
class Groups:
    by: str | None
    result: object  # analysis.groups.GroupResult, or None without --by
    weighting: Weighting | None
    min_workers: int
    not_described: int  # workers of the votes the participants file does not describe
    sentences: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    measure: str = ("Bradley-Terry log-strengths per group (mean 0), intervals clustered by item and worker at the "
                    "Bonferroni level in column confidence")


def participants_of(value) -> pd.DataFrame:
    """The participants from a CSV's path or a DataFrame with a worker_id per row (checked as the file is)."""
    from parlai_dialeval.data.participants import read_participants
    from parlai_dialeval.results.user_files import is_path

    if is_path(value):
        return read_participants(value)
    if not isinstance(value, pd.DataFrame):
        raise DialevalError(f"--participants {type(value).__name__}: expected a file's path or a DataFrame")
    if "worker_id" not in value.columns:
        raise DialevalError("--participants (the DataFrame given): no worker_id column (columns: "
                            f"{', '.join(map(str, value.columns[:8])) or 'none'})")
    if value["worker_id"].isna().any():
        raise DialevalError(f"--participants (the DataFrame given), row {value.index[value['worker_id'].isna()][0]!r}: "
                            "no worker_id")
    return value.assign(worker_id=value["worker_id"].astype(str))


def described(workers, participants: pd.DataFrame) -> int:
    """How many of ``workers`` the participants file does not describe; an error where it describes none (ids
    pseudonymised by publishing, or another study's file)."""
    missing = int((~pd.Index(workers).isin(participants["worker_id"].astype(str))).sum())
    if len(workers) and missing == len(workers):
        raise DialevalError(f"none of the votes' {len(workers)} workers is in the participants file: its "
                            "'Participant id' must be the votes' worker_id (Prolific's participant ids, as exported "
                            "before dialeval publish pseudonymises them)")
    return missing


def spec(text: str, participants: pd.DataFrame, where: str = "--by"):
    """A By for ``text``: its column must be in the participants file; a numeric column is banded."""
    from parlai_dialeval.analysis.groups import parse_by

    name = str(text).partition(":")[0].strip()
    if name not in participants.columns or name == "worker_id":
        raise DialevalError(f"{where} {text}: the participants file has no column {name!r} (columns: "
                            f"{', '.join(c for c in participants.columns if c != 'worker_id')})")
    return parse_by(text, pd.api.types.is_numeric_dtype(participants[name]))


def weighting(path, participants: pd.DataFrame, comparisons: pd.DataFrame, alpha: float) -> Weighting:
    from parlai_dialeval.analysis import groups, raking
    from parlai_dialeval.results.user_files import is_path, read_targets

    targets = read_targets(path)  # a path or a DataFrame, checked alike
    source = str(path) if is_path(path) else "--weights (the DataFrame given)"
    workers = pd.unique(comparisons["worker_id"].astype(str))
    levels = {}
    for attribute, rows in targets.groupby("attribute", sort=False):
        line = record_line(rows["line"].iloc[0])
        try:
            by = spec(attribute, participants, "targets' attribute")
        except DialevalError as error:
            raise DataError(source, str(error), line, "attribute") from None
        levels[attribute] = found = groups.worker_levels(workers, participants, by)
        for row in rows.itertuples():
            if row.share > 0 and not found.eq(row.level).any():
                known = sorted(set(found) - {groups.NOT_GIVEN})
                raise DataError(source, f"no worker of the votes has {attribute} {row.level!r}", row.line, "level",
                                f"one of {', '.join(known) or 'no level'}", row.level)
    table = pd.DataFrame(levels)
    complete = ~table.eq(groups.NOT_GIVEN).any(axis=1)
    wanted = {a: dict(zip(rows["level"], rows["share"])) for a, rows in targets.groupby("attribute", sort=False)}
    weights = pd.Series(raking.rake(table[complete], wanted), index=table.index[complete])
    return Weighting(targets, weights, raking.kish(weights), int(complete.sum()), int((~complete).sum()),
                     groups.weighted_rankings(comparisons, weights, alpha))


def compute(inputs, config, done: dict) -> Groups | None:
    from parlai_dialeval.analysis import groups

    if not given(config.participants):
        if given(config.by) or given(config.weights):
            raise DialevalError("--by and --weights need --participants F.csv (Prolific's demographic export: "
                                "dialeval prolific demographics TASK; or the questionnaire's FILE.participants.csv "
                                "beside dialeval export's FILE.jsonl)")
        return None
    if not given(config.by) and not given(config.weights):
        raise DialevalError("--participants: say what to do with it: --by ATTRIBUTE (rankings per group) and/or "
                            "--weights TARGETS.csv (the ranking weighted to a target population)")
    participants = participants_of(config.participants)
    comparisons = inputs.comparisons
    workers = pd.unique(comparisons["worker_id"].astype(str))
    not_described = described(workers, participants)
    result = None
    if given(config.by):
        by = spec(config.by, participants)
        result = groups.group_rankings(comparisons, groups.worker_levels(workers, participants, by), config.alpha,
                                       config.min_group_workers, config.group_permutations, config.seed)
    weighted = weighting(config.weights, participants, comparisons, config.alpha) if given(config.weights) else None
    part = Groups(str(config.by) if given(config.by) else None, result, weighted, config.min_group_workers,
                  not_described)
    words(part, config.alpha)
    return part


def _member(attribute: str, level: str) -> str:
    return f"aged {level}" if attribute == "age" else f"with {attribute} {level}"


def _p(value: float) -> str:
    return f"p = {value:.2g}"


def words(part: Groups, alpha: float) -> None:
    """The part's sentences, and on the first screen (``verdicts``) what changes the conclusion: a group led by
    another model than everyone together where the groups disagree, a weighted leader that is not the unweighted
    one; otherwise one sentence that the groups agree."""
    from parlai_dialeval.analysis.groups import NOT_GIVEN, leader

    result, said, verdicts = part.result, part.sentences, part.verdicts
    attribute = (part.by or "").partition(":")[0]
    if part.not_described:
        said.append(f"{part.not_described} worker(s) of the votes are not in the participants file: they count as "
                    f"'{NOT_GIVEN}'.")
    if result is not None:
        small = result.groups[result.groups["status"] != "fitted"]
        if len(small):
            said.append(f"{len(small)} group(s) have fewer than {part.min_workers} workers in a question: neither "
                        "ranked nor counted, so that no one is recognisable from a small group (--min-group-workers).")
        if result.groups["group"].eq(NOT_GIVEN).any():
            said.append(f"'{NOT_GIVEN}' holds the workers without a {attribute} (no answer, or not in the file): ranked "
                        "where large enough, never part of the test of whether the groups disagree.")
        for test in result.tests.itertuples():
            where = f"'{test.question}' ({test.unit})"
            if not np.isfinite(test.p_value):
                said.append(f"{where}: {test.note}.")
                continue
            ranked = result.rankings[(result.rankings["question"] == test.question)
                                     & (result.rankings["unit"] == test.unit)]
            others = [(name, leader(rows)) for name, rows in ranked.groupby("group", sort=False)
                      if name != NOT_GIVEN and leader(rows) not in (None, test.leader)]
            if test.p_value < alpha and others:
                among = "; ".join(f"among participants {_member(attribute, name)}, {model} leads"
                                  for name, model in others)
                verdicts.append(f"{where}: {among} ({test.leader} leads overall); the groups by {attribute} disagree "
                                f"(permutation test, {_p(test.p_value)}).")
            elif test.p_value < alpha:
                verdicts.append(f"{where}: the groups by {attribute} ({test.groups}) disagree on the models' strengths "
                                f"(permutation test, {_p(test.p_value)}), but {test.leader} leads in every group.")
            else:
                verdicts.append(f"{where}: the groups by {attribute} ({test.groups}) agree: no evidence that they rank "
                                f"the models differently (permutation test, {_p(test.p_value)}).")
    weighting = part.weighting
    if weighting is not None:
        attributes = ", ".join(pd.unique(weighting.targets["attribute"]))
        size = (f"effective sample size {weighting.effective_workers:.1f} of {weighting.workers} workers (Kish)"
                + (f"; {weighting.left_out} worker(s) without every attribute left out of both rankings"
                   if weighting.left_out else ""))
        for (question, unit), rows in weighting.rankings.groupby(["question", "unit"], sort=False):
            plain = leader(rows)
            weighted = leader(rows.drop(columns="bt").rename(columns={"bt_weighted": "bt"}))
            if weighted != plain:
                verdicts.append(f"'{question}' ({unit}): weighted to the target population ({attributes}), {weighted} "
                                f"leads, where {plain} leads unweighted; {size}.")
            else:
                said.append(f"'{question}' ({unit}): weighted to the target population ({attributes}), {plain} still "
                            f"leads; {size}.")


def tables(part: Groups) -> dict:
    out = {}
    if part.result is not None:
        out.update({"group_rankings": part.result.rankings, "groups": part.result.groups,
                    "group_tests": part.result.tests})
    if part.weighting is not None:
        out["weighted_rankings"] = part.weighting.rankings
    return out


def summary(part: Groups) -> dict:
    out = {"by": part.by, "min_group_workers": part.min_workers, "workers_not_in_participants": part.not_described,
           "sentences": part.sentences + part.verdicts}
    if part.result is not None:
        out["tests"] = part.result.tests.to_dict(orient="records")
    if part.weighting is not None:
        w = part.weighting
        out["weighting"] = {"targets": w.targets.drop(columns="line").to_dict(orient="records"),
                            "effective_sample_size": w.effective_workers, "workers": w.workers,
                            "workers_left_out": w.left_out}
    return {"groups": out}


SECTION = Section(
    "groups", compute, tables=tables, summary=summary, sentences=lambda part: part.verdicts + part.sentences,
    title="Results by the people who judged",
    config=(("participants", str | None, option(None, PARTICIPANTS_HELP, metavar="F.csv")),
            ("by", str | None, option(None, BY_HELP, metavar="ATTRIBUTE[:EDGES]")),
            ("weights", str | None, option(None, WEIGHTS_HELP, metavar="TARGETS.csv")),
            ("min_group_workers", int, option(10, "workers a group needs to be ranked and shown (fewer: suppressed)",
                                              kind="positive_int")),
            ("group_permutations", int, option(999, "permutations of the test of whether the groups disagree",
                                               kind="positive_int"))))
