"""Who took part in a study: Prolific's demographic export (``POST studies/{id}/demographic-export/``, Prolific's
CLI ExportDemographics; docs "Export demographic data": the base fields of every participant who took the
study), fetched for each study of a task and stored beside it: ``<mephisto data>/prolific/demographics/
TASK.csv``, readable by its owner only (a folder of mode 0700, a file of mode 0600, written whole or not at all).

It is personal data: it never goes into the votes file (``dialeval export`` does not read it) nor into a
published dataset; an analysis joins it only when asked, through ``parlai_dialeval.data.participants``
(which documents its columns).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from parlai_dialeval.csv_safe import write_csv
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.providers.prolific import common


def studies_of(db, name: str) -> list[dict]:
    """The studies rows of task ``name`` (a resumed run shares its study: once), or of study id ``name``."""
    rows = common.datastore(db).all("SELECT * FROM studies WHERE (task_name = ? OR study_id = ?) AND study_id IS NOT "
                                    "NULL ORDER BY rowid", name, name)
    if not rows:
        raise DialevalError(f"no Prolific study of task (or with id) {name!r} in {common.datastore(db).path}")
    return list({row["study_id"]: row for row in rows}.values())


def fetch(db, name: str, data_dir, out=None) -> tuple[Path, int]:
    """Fetch the export of every study of ``name`` into one CSV (Prolific's header, rows of all studies); returns
    (its path, the participant rows written)."""
    header, rows = None, []
    for study in studies_of(db, name):
        client = common.client_for(study["requester_name"], study["api_base_url"])
        try:
            text = client.demographic_export(study["study_id"])
        finally:
            client.close()
        table = list(csv.reader(io.StringIO(text)))
        if not table:
            continue
        if header is not None and table[0] != header:
            raise DialevalError(f"the demographic exports of {name!r}'s studies have different columns; fetch each "
                                "study by its id (`dialeval prolific demographics STUDY_ID --out ...`)")
        header = table[0]
        rows += table[1:]
    path = Path(out) if out else Path(data_dir) / common.PROVIDER_TYPE / "demographics" / f"{name}.csv"
    # participants' answers are strangers' text: written safe for a spreadsheet, owner-only, whole or not at all
    write_csv(pd.DataFrame(rows, columns=header or [], dtype=object), path)
    return path, len(rows)
