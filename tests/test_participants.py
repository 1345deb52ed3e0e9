"""parlai_dialeval.data.participants: Prolific's demographic export read as one row per participant (the join
key ``worker_id``), its markers for answers it cannot give as missing values, and one clear line for a file
that is not such an export."""
from __future__ import annotations

import pytest

from parlai_dialeval.data.participants import read_participants
from parlai_dialeval.errors import DialevalError

HEADER = ("Submission id,Participant id,Status,Started at,Completed at,Reviewed at,Archived at,Time taken,"
          "Completion code,Total approvals,Age,Sex,Ethnicity simplified,Country of birth,Country of residence,"
          "Nationality,Language,Student status,Employment status\n")


def test_one_row_per_participant_with_numbers_and_missing_values(tmp_path):
    path = tmp_path / "demographics.csv"
    path.write_text(HEADER
                    + "s1,PID_A,RETURNED,2026-01-01T10:00:00Z,,,,,,12,23,Female,White,UK,UK,UK,English,No,Full-Time\n"
                    + "s2,PID_A,APPROVED,2026-01-02T10:00:00Z,2026-01-02T10:20:00Z,,,1200,DE12,13,23,Female,White,UK,"
                      "UK,UK,English,No,Full-Time\n"
                    + "s3,PID_B,APPROVED,2026-01-01T11:00:00Z,,,,900,DE12,40,DATA_EXPIRED,CONSENT_REVOKED,,,,,,,\n")
    people = read_participants(path).set_index("worker_id")
    assert list(people.index) == ["PID_B", "PID_A"]  # by start; a resumed study's latest submission kept
    assert people.loc["PID_A", "submission_id"] == "s2" and people.loc["PID_A", "time_taken"] == 1200
    assert people.loc["PID_A", "age"] == 23 and people.loc["PID_A", "ethnicity_simplified"] == "White"
    assert people["age"].isna()["PID_B"] and people["sex"].isna()["PID_B"]  # Prolific's markers: missing
    assert {"country_of_residence", "employment_status", "total_approvals"} <= set(people.columns)


@pytest.mark.parametrize("text, said", [
    ("worker,age\nPID_A,23\n", "no 'Participant id' column: not a Prolific demographic export"),
    (HEADER + "s1,,APPROVED,,,,,,,,,,,,,,,,\n", "line 2: no participant id"),
])
def test_a_file_that_is_not_an_export_is_one_clear_line(tmp_path, text, said):
    path = tmp_path / "people.csv"
    path.write_text(text)
    with pytest.raises(DialevalError, match=said) as refused:
        read_participants(path)
    assert str(refused.value).startswith(str(path))
    with pytest.raises(DialevalError, match="not a readable CSV file"):
        read_participants(tmp_path / "missing.csv")
