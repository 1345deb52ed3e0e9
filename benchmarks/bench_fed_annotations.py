"""The FED annotation analysis's outlier rule (Mehri & Eskenazi 3.4) on the paper's 23,583 labels: the rule for every
(item, question) at once (``fed_annotations.apply_outlier_rule``) against ``outlier_mask``, the rule as the paper
states it, applied group by group (as apply_outlier_rule did before). Same labels, same run; the masks must agree.

    .venv/bin/python benchmarks/bench_fed_annotations.py [--repeats 3]

Needs ../shared/data/fed/fed_data.json (or $DIALEVAL_SHARED_DATA). Result in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from parlai_dialeval.analysis import fed_annotations as fed  # noqa: E402
from parlai_dialeval.importers import load  # noqa: E402
from parlai_dialeval.shared_data import shared_data_dir  # noqa: E402


def group_by_group(ratings) -> np.ndarray:
    kept = np.ones(len(ratings), dtype=bool)
    graded = np.flatnonzero(~fed.is_binary(ratings).to_numpy())
    labels = ratings["value"].to_numpy(dtype=float)
    for rows in ratings.iloc[graded].reset_index(drop=True).groupby(["conversation_id", "criterion"]).indices.values():
        kept[graded[rows]] = fed.outlier_mask(labels[graded[rows]])
    return kept


def cpu_seconds(function, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.process_time()
        result = function()
        times.append(time.process_time() - start)
    return float(np.median(times)), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = load([shared_data_dir() / "fed" / "fed_data.json"], log=None)
    ratings = fed.with_level(data.ratings, data.conversations)
    loop, expected = cpu_seconds(lambda: group_by_group(ratings), args.repeats)
    at_once, got = cpu_seconds(lambda: fed.apply_outlier_rule(ratings)["kept"].to_numpy(), args.repeats)
    assert (expected == got).all(), "the two masks differ"
    print(f"{len(ratings):,} labels, {(~got).sum():,} dropped by both; group by group {loop:.3f} CPU-s, "
          f"all at once {at_once:.4f} CPU-s: {loop / at_once:.0f}x")


if __name__ == "__main__":
    main()
