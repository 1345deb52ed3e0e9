"""The edge sweep at size (issue 50): random small and degenerate studies (parlai_dialeval/testing/edge_studies.py)
through every analysis command's core (testing/edge_sweep.py), counted: studies, one-line refusals (a study the
command cannot analyse, said so), exceptions, reports with nan / inf / "a overall" in their words, verdicts that
contradict their tables, and level models ranked apart (issue 50 item 5, fixed by issue 56: counted apart).

Run: .venv/bin/python benchmarks/bench_edge_sweep.py [--studies 10000] [--processes 2]. The studies are split
over the commands, each command's share drawn by hypothesis in chunks of its own seed (one process per chunk).
Results in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing
import time
import warnings

import pandas as pd
from hypothesis import HealthCheck, given, seed, settings

COMMANDS = ("analyze_pairwise", "certify", "analyze_live_chat", "replicate", "analyze_single_model",
            "significance_time", "compare_protocols", "analyze_scales")
CHUNK = 50  # studies per hypothesis run


def sweep_chunk(job: tuple[str, int, int]) -> dict:
    command, number, studies = job
    warnings.simplefilter("ignore")
    from parlai_dialeval.testing import edge_sweep

    counts, examples = collections.Counter(), {}

    @seed(number)
    @settings(max_examples=studies, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(edge_sweep.SHAPES[command]())
    def check(shape):
        outcome = edge_sweep.run(command, shape)
        counts["studies"] += 1
        counts[outcome.status] += 1
        for kind, found in (("words", outcome.problems), ("contradictions", outcome.contradictions),
                            ("level_ranks", outcome.level_ranks)):
            if found:
                counts[kind] += 1
                examples.setdefault(kind, (found[0], shape))
        if outcome.status == "raised":
            examples.setdefault("raised", (outcome.message, shape))

    started = time.perf_counter()
    check()
    return {"command": command, "seconds": time.perf_counter() - started, "counts": counts, "examples": examples}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=10_000, help="studies in all, split over the commands")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    per_command = max(1, args.studies // len(COMMANDS))
    jobs = [(command, number, min(CHUNK, per_command - start))
            for command in COMMANDS for number, start in enumerate(range(0, per_command, CHUNK))]
    with multiprocessing.get_context("spawn").Pool(args.processes) as pool:
        results = pool.map(sweep_chunk, jobs, chunksize=1)
    rows, examples = {}, {}
    for result in results:
        row = rows.setdefault(result["command"], collections.Counter())
        row.update(result["counts"])
        row["seconds"] += result["seconds"]
        for kind, example in result["examples"].items():
            examples.setdefault((result["command"], kind), example)
    table = pd.DataFrame([{"command": command, **{k: row.get(k, 0) for k in (
        "studies", "ok", "refused", "raised", "words", "contradictions", "level_ranks")},
        "seconds per study": row["seconds"] / max(row["studies"], 1)} for command, row in rows.items()])
    print(table.to_string(index=False, float_format="{:.2f}".format))
    print(f"in all: {int(table['studies'].sum()):,} studies, {int(table['raised'].sum())} exceptions, "
          f"{int(table['words'].sum())} reports with nan / inf / 'a overall', "
          f"{int(table['contradictions'].sum())} verdicts contradicting their tables, "
          f"{int(table['level_ranks'].sum())} with level models ranked apart (issue 50 item 5)")
    for (command, kind), (what, shape) in examples.items():
        print(f"{command} {kind}: {what}\n    {shape}")


if __name__ == "__main__":
    main()
