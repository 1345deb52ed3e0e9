"""Records, studies and model names given more than once: the same conversation, comparison or rating twice
(two exports of one run, say) would be counted twice; a study declared again with other criteria or QC models made
the order of the files change the results; model names that differ only in case or white space read alike in a
report. The per-record checks live in validate.py."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from parlai_dialeval.data import schema
from parlai_dialeval.data.validate import is_missing
from parlai_dialeval.errors import DataError, location, record_line


def check_studies(studies: list[dict]) -> None:
    """A study declared twice (two exports of one run, say) must declare the same criteria and QC models where
    both declare them: the first declaration won silently, so the order of the files changed the results."""
    first: dict[str, dict] = {}
    for study in studies:
        earlier = first.setdefault(study.get("name"), study)
        for field, normal in (("criteria", _criteria_as_analysed), ("qc_models", sorted)):
            if earlier is not study and earlier.get(field) and study.get(field) \
                    and normal(earlier[field]) != normal(study[field]):
                raise DataError(study.get("_file"), f"study {study.get('name')!r} declared again with other {field} "
                                f"(first at {location(earlier.get('_file'), record_line(earlier.get('_line')))})",
                                line=record_line(study.get("_line")), field=field,
                                expected="one declaration of a study, or the same one again")


def _criteria_as_analysed(criteria: list) -> list:
    """What an analysis reads of a study's criteria (a label or question reworded by a later release is no
    conflict)."""
    return sorted(repr([c.get(k) for k in ("name", "positive", "scale", "min", "max")]) for c in criteria
                  if isinstance(c, dict))


class DataWarning(UserWarning):
    """Data the analysis runs on as they are but a reader of its reports may misread; the ``dialeval`` command
    shows it as one line (cli.py)."""


def check_unique(frames: dict[str, pd.DataFrame]) -> None:
    """No conversation id, comparison or rating (schema.UNIQUE_KEYS) twice: the error names both places. Then a
    warning for model names that look alike (``lookalike_models``)."""
    for record_type, key in schema.UNIQUE_KEYS.items():
        frame = frames.get(record_type)
        if frame is None or frame.empty:
            continue
        if record_type == "comparison" and "onboarding" in frame.columns:
            frame = frame[~frame["onboarding"].eq(True).to_numpy()]
        if record_type == "rating":
            exempt = frame["scale"].eq("best_worst") if "scale" in frame.columns else pd.Series(False, index=frame.index)
            if "check" in frame.columns:
                exempt |= frame["check"].notna()
            frame = frame[~exempt.to_numpy()]
        columns = [c for c in key if c in frame.columns]
        later = frame.duplicated(subset=columns, keep="first").to_numpy()
        if not later.any():
            continue
        second = frame.iloc[int(np.argmax(later))]
        target = _key(second, columns)
        first = next(row for _, row in frame.iterrows() if _key(row, columns) == target)
        what = (f"conversation id {first['id']!r}" if record_type == "conversation" else
                f"{record_type} " + ", ".join(f"{c}={first[c]!r}" for c in columns if not is_missing(first[c])))
        raise DataError(second["_file"], f"{what} given twice (first at "
                        f"{location(first['_file'], record_line(first['_line']))})", line=record_line(second["_line"]),
                        field=key[0] if len(key) == 1 else None,
                        expected="each record once: the same work counted twice changes every count and test")
    groups = lookalike_models(frames)
    if groups:
        warnings.warn("model names that differ only in case or white space are analysed as different models but "
                      "look alike in reports: " + "; ".join(", ".join(map(repr, g)) for g in groups)
                      + " (rename them in the data if each group is one model).", DataWarning, stacklevel=2)


def lookalike_models(frames: dict[str, pd.DataFrame]) -> list[list[str]]:
    """Groups of two or more model names (conversations' models, ratings' model, comparisons' model_a and model_b)
    equal once white space is collapsed and case ignored: " x", "x\t" and "X" all read as x in a report."""
    columns = {"conversation": ["models"], "rating": ["model"], "comparison": ["model_a", "model_b"]}
    names = set()
    for record_type, fields in columns.items():
        frame = frames.get(record_type)
        for field in fields if frame is not None else ():
            if field in frame.columns:
                values = frame[field].explode() if field == "models" else frame[field]
                names.update(v for v in values.dropna().unique() if isinstance(v, str))
    alike: dict[str, list[str]] = {}
    for name in sorted(names):
        alike.setdefault(" ".join(name.split()).casefold(), []).append(name)
    return [group for group in alike.values() if len(group) > 1]


def _key(row, columns) -> tuple:
    return tuple(None if is_missing(row[c]) else row[c] for c in columns)
