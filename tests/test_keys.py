"""analysis.keys.first_seen_codes against what it replaces, pandas' groupby(sort=False, dropna=False).ngroup(), on
any mix of values a study's columns hold: missing ones of every kind, numbers that are equal across types, text."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from parlai_dialeval.analysis.keys import first_seen_codes

VALUES = st.sampled_from([None, np.nan, pd.NA, "", "a", "b", "1", 1, 1.0, 2, True, "\u202eq"])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3).flatmap(lambda width: st.lists(st.lists(VALUES, min_size=width, max_size=width),
                                                        min_size=0, max_size=25)), st.booleans())
def test_codes_number_the_groups_as_groupby_does(rows, as_text):
    width = len(rows[0]) if rows else 1
    frame = pd.DataFrame(rows, columns=[f"c{k}" for k in range(width)], dtype=object)
    if as_text:  # the string dtype pandas reads text columns as
        frame["c0"] = frame["c0"].astype("str")
    columns = list(frame.columns)
    expected = frame.groupby(columns, sort=False, dropna=False).ngroup().to_numpy()
    assert first_seen_codes([frame[column] for column in columns]).tolist() == expected.tolist()


def test_integer_keys_of_a_million_rows_stay_exact():
    # the mixed-radix key is renumbered after each column: four columns of a million distinct values (10^24 combinations) do not overflow int64
    rng = np.random.default_rng(0)
    columns = [rng.permutation(1_000_000) for _ in range(4)]
    codes = first_seen_codes(columns)
    assert codes.max() == 999_999 and np.array_equal(codes, np.arange(1_000_000))
