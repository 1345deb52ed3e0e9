"""The canonical format's versions: what each meant, and records of an earlier one read as they were meant.

The version changes whenever a field's meaning changes, not only when a field is added (docs/data_model.md,
"Format versions"). A reader knows every version this project ever wrote and refuses any other in one line.

- ``1.0`` (every release up to commit d138b2d): a conversation's ``submission`` did not exist until commit
  f0ee1d4, which added it under the same stamp. The live-chat export of the releases before f0ee1d4 said what
  became of a HIT only in ``meta.agent_status``, Mephisto's agent status: a participant who left wrote
  ``"status": "incomplete"``, ``meta.agent_status: "disconnect"`` and no ``submission``. Read as meant: where a
  1.0 conversation has no ``submission`` and a ``meta.agent_status``, the submission is that status's.
- ``1.1``: ``submission`` says what became of the assignment, and its absence means submitted (imported data
  and tasks that have no assignments). ``meta.agent_status`` is a note kept from Mephisto, not read.
"""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.data.schema import FORMAT_VERSION

VERSIONS = ("1.0", "1.1")  # every version this project wrote, oldest first; FORMAT_VERSION is the last
assert VERSIONS[-1] == FORMAT_VERSION

# Mephisto agent statuses of a submitted assignment, and of one not submitted -> the canonical `submission`
FINISHED_AGENT_STATUSES = frozenset({"completed", "approved", "rejected", "soft_rejected"})
NOT_SUBMITTED_AGENT_STATUSES = {"returned": "returned", "expired": "returned", "disconnect": "disconnected",
                                "partner disconnect": "disconnected", "timeout": "timed_out"}


def submission_of(agent_status: str) -> str:
    """What became of the assignment: submitted, returned, disconnected, timed_out, else working (the
    agent still holds it: accepted, onboarding, waiting, in task)."""
    if agent_status in FINISHED_AGENT_STATUSES:
        return "submitted"
    return NOT_SUBMITTED_AGENT_STATUSES.get(agent_status, "working")


def known(version) -> bool:
    return isinstance(version, str) and version in VERSIONS


# what a reader says of a version it does not know, in its one line
EXPECTED = (f"one of {', '.join(VERSIONS)}, the versions this release reads (a newer dialeval wrote the file? "
            "upgrade parlai_dialeval to read it)")


def read_as_meant(record_type: str, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (records of one type as parsed, ``format_version`` per row) in the current version's meaning,
    stamped with it. Only rows of an earlier version change."""
    if "format_version" not in frame or frame.empty:
        return frame
    old = frame["format_version"].eq("1.0").to_numpy()
    if not old.any():
        return frame
    frame = frame.copy()
    if record_type == "conversation":
        if "submission" not in frame:
            frame["submission"] = None
        meta = frame["meta"] if "meta" in frame else pd.Series(None, index=frame.index, dtype=object)
        status = meta.map(lambda m: m.get("agent_status") if isinstance(m, dict) else None)
        derive = old & frame["submission"].isna().to_numpy() & status.map(lambda s: isinstance(s, str)).to_numpy()
        frame["submission"] = frame["submission"].astype(object)
        frame.loc[derive, "submission"] = status[derive].map(submission_of)
    frame.loc[old, "format_version"] = FORMAT_VERSION
    return frame
