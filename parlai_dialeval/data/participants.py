"""Who took part: a Prolific demographic export (``dialeval prolific demographics TASK``) read as one row per
participant, for an analysis to join on ``worker_id`` (the votes' worker id is the Prolific participant id
before publishing pseudonymises it) when, and only when, it is asked to (``--participants F.csv``).

Columns (Prolific's header, docs "Export demographic data" and its web export, as snake_case):

=======================  ===================================================================
``worker_id``            the Prolific participant id ("Participant id"): the join key
``submission_id``        the participant's submission in the study ("Submission id")
``status``               the submission's status (APPROVED, RETURNED, ...)
``started_at``,          when the submission started / was completed / reviewed / archived
``completed_at``,        (UTC, ISO 8601, as Prolific writes them)
``reviewed_at``,
``archived_at``
``time_taken``           seconds (a number)
``completion_code``      the code the submission was completed with
``total_approvals``      the participant's approved submissions on Prolific (a number)
``age``                  years (a number)
``sex``, ``ethnicity_simplified``, ``country_of_birth``, ``country_of_residence``, ``nationality``,
``language``, ``student_status``, ``employment_status``: Prolific's answers, as text
=======================  ===================================================================

Any other column Prolific adds (a filter's answers) comes along in snake_case. Prolific's markers for an answer
it cannot give (``DATA_EXPIRED``, ``CONSENT_REVOKED``) become missing values. A participant with several
submissions in the file (a resumed study) keeps the latest started.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from parlai_dialeval.csv_safe import restore
from parlai_dialeval.errors import DialevalError

NUMBERS = ("age", "time_taken", "total_approvals")
MISSING = ("DATA_EXPIRED", "CONSENT_REVOKED", "")
KEY = "worker_id"


def snake(header: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(header).strip().lower()).strip("_")


def read_participants(path: str | Path) -> pd.DataFrame:
    """The export at ``path``, one row per participant (``worker_id`` unique), columns as documented above."""
    path = Path(path)
    try:
        table = restore(pd.read_csv(path, dtype=str, keep_default_na=False))  # as fetched, before neutralising
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise DialevalError(f"{path}: not a readable CSV file ({error})") from None
    table.columns = [snake(c) for c in table.columns]
    table = table.rename(columns={"participant_id": KEY})
    if KEY not in table.columns:
        raise DialevalError(f"{path}: no 'Participant id' column: not a Prolific demographic export (columns: "
                            f"{', '.join(table.columns[:8]) or 'none'})")
    table = table.replace(list(MISSING), pd.NA)
    if table[KEY].isna().any():
        line = int(table.index[table[KEY].isna()][0]) + 2  # the header is line 1
        raise DialevalError(f"{path}, line {line}: no participant id")
    for column in NUMBERS:
        if column in table.columns:
            table[column] = pd.to_numeric(table[column], errors="coerce")
    if "started_at" in table.columns:
        table = table.sort_values("started_at", na_position="first", kind="stable")
    return table.drop_duplicates(KEY, keep="last").reset_index(drop=True)
