"""A `dialeval judge` output read back: the judge's records for ``--judge`` of the analysis commands,
`dialeval plan` and an adaptive launch with a judge (docs/ppi.md)."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.errors import DataError, DialevalError

JUDGE_PREFIX = "judge:"


def load_judge(path: str, kind: str) -> pd.DataFrame:
    """The judge's ``kind`` records ("comparisons" or "ratings"); refused when the file holds none or
    holds records of people (a worker_id without the ``judge:`` prefix)."""
    from parlai_dialeval.importers.registry import CANONICAL, load

    data = load([path], fmt=CANONICAL, log=None)
    records = getattr(data, kind)
    if records.empty:
        raise DialevalError(f"{path}: no {kind} records: --judge needs a `dialeval judge` output of the "
                            f"same protocol as --data")
    workers = records["worker_id"].astype(str)
    people = records[~workers.str.startswith(JUDGE_PREFIX)]
    if len(people):
        row = people.iloc[0]
        raise DataError(row.get("_file", path), "a record of a person in the judge file", row.get("_line"),
                        "worker_id", f"'{JUDGE_PREFIX}<judge name>' as `dialeval judge` writes", row["worker_id"])
    return records
