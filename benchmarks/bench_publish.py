"""dialeval publish on a large pairwise study: N votes (default 1,000,000) as a dataset folder, against writing
the same data as canonical JSON Lines (what `dialeval export` / `convert` write) in the same run.

The study: 5 models, every pair on its own A/B items (3 votes each, clustered, parlai_dialeval/testing/
clustered_votes.py), each item with its own prompt and two responses (short sentences, one in 50 holding an
e-mail address and one in 50 a phone number, so the scrubber has something to find); 500 workers. Timed: the
whole of ``publish`` (pseudonyms, scrubbing, Parquet through ``datasets``, preference pairs, card) from the
loaded data; the headline analysis and loading are not part of it (the analyses have their own benchmarks).

    .venv/bin/python benchmarks/bench_publish.py [--votes 1000000]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def study(votes: int):
    from parlai_dialeval.data import from_records
    from parlai_dialeval.testing.clustered_votes import clustered_study

    items_per_pair = max(1, votes // (10 * 3))
    frame = clustered_study(np.random.default_rng(0), models=5, items_per_pair=items_per_pair, votes_per_item=3,
                            workers=500, worker_sd=0.3)
    number = frame["item_id"].astype(str).str.extract(r"(\d+)$")[0].astype(int)
    item = frame["item_id"].astype(str).str.translate(str.maketrans("0123456789", "abcdefghij"))  # chat has few digits
    frame["context"] = "What do you think about topic " + item + "?"
    frame["response_a"] = "I like it, says " + frame["model_a"] + " on " + item + "."
    frame["response_b"] = np.where(number % 50 == 0, "Write to me at someone" + item.str.replace(r"\W", "", regex=True)
                                   + "@example.org", "Not much, says " + frame["model_b"] + ".")
    frame.loc[number % 50 == 1, "response_b"] = "Call +1 212 555 0" + (number % 1000).astype(str).str.zfill(3)
    frame["study"] = "bench"
    records = [{"type": "study", "name": "bench"}] + [{"type": "comparison", **r} for r in frame.to_dict("records")]
    return from_records(records, validate=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    args = parser.parse_args()
    from parlai_dialeval.publish.folder import PublishOptions, publish
    from parlai_dialeval.publish.privacy import Scrubber

    Scrubber()  # imports phonenumbers and datasets outside the timings
    __import__("datasets")
    data = study(args.votes)
    print(f"{len(data.comparisons):,} votes")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        data.save(Path(tmp) / "export.jsonl")
        baseline = time.perf_counter() - start
        start = time.perf_counter()
        published = publish(data, Path(tmp) / "published", b"k" * 64, PublishOptions(statement="benchmark"),
                            {"qc": {"rule": "", "workers_checked": 0, "flagged": 0, "records_excluded": 0},
                             "headline": []})
        took = time.perf_counter() - start
    print(published.summary())
    print(f"canonical JSON Lines (baseline): {baseline:.1f} s; publish: {took:.1f} s ({took / baseline:.1f}x); "
          f"target for 1,000,000 votes: under 60 s")


if __name__ == "__main__":
    main()
