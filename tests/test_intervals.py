"""Student t intervals of means (parlai_dialeval.analysis.intervals) against scipy computed by hand."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from parlai_dialeval.analysis.intervals import mean_intervals, t_interval


def test_missing_values_are_left_out_and_not_counted():
    # A conversation without a score (e.g. a NaN z) must not wipe out its model's interval or count in n:
    # the interval is the one of the scores present, [1, 2, 3] (mean 2, SE 1/sqrt(3), t with 2 df).
    frame = pd.DataFrame({"model": ["x"] * 4 + ["y"] * 3, "score": [1.0, 2.0, np.nan, 3.0, 4.0, 5.0, 6.0]})
    table = mean_intervals(frame, "model", "score").set_index("model")
    half = stats.t.ppf(0.975, 2) / np.sqrt(3)
    assert table.loc["x", "n"] == 3
    assert table.loc["x", "mean"] == pytest.approx(2.0)
    assert (table.loc["x", "ci_low"], table.loc["x", "ci_high"]) == pytest.approx((2 - half, 2 + half))
    assert (table.loc["y", "ci_low"], table.loc["y", "ci_high"]) == pytest.approx((5 - half, 5 + half))
    assert t_interval([1.0, np.nan, 3.0, 2.0]) == pytest.approx((2 - half, 2 + half))
    assert np.isnan(t_interval([1.0, np.nan])).all()
