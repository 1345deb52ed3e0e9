"""The edge sweep at size (issue 50): random small and degenerate studies (parlai_dialeval/testing/edge_studies.py)
through every analysis command's core (testing/edge_sweep.py), counted: studies, one-line refusals (a study the
command cannot analyse, said so), exceptions, reports with nan / inf / "a overall" in their words, verdicts that
contradict their tables, and level models ranked apart (issue 50 item 5, fixed by issue 56: counted apart).

Run: .venv/bin/python benchmarks/bench_edge_sweep.py [--studies 10000] [--processes 2]. The studies are split
over the commands, each command's share drawn by hypothesis in chunks of its own seed (one process per chunk).
Each process may hold ``--memory-gb`` of data and each study may take ``--study-seconds``: a study past either is
counted as raised (MemoryError, TimeoutError) with its shape, instead of the kernel killing the sweep (a 3,200-study
run's workers grew to 14 and 23 GB). The slowest study of each command is printed. Results in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing
import resource
import signal
import time
import warnings

import pandas as pd
from hypothesis import HealthCheck, given, seed, settings

COMMANDS = ("analyze_pairwise", "certify", "analyze_live_chat", "replicate", "analyze_single_model",
            "significance_time", "compare_protocols", "analyze_scales")
CHUNK = 50  # studies per hypothesis run


def limit_process(memory_gb: float) -> None:
    """A pool worker's data (heap and anonymous maps) bounded: past it, allocations raise MemoryError."""
    limit = int(memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _too_long(signum, frame):
    raise TimeoutError("the study ran past --study-seconds")


def sweep_chunk(job: tuple[str, int, int, int]) -> dict:
    command, number, studies, study_seconds = job
    warnings.simplefilter("ignore")
    from parlai_dialeval.testing import edge_sweep

    counts, examples, slowest = collections.Counter(), {}, (0.0, None)
    signal.signal(signal.SIGALRM, _too_long)

    @seed(number)
    @settings(max_examples=studies, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(edge_sweep.SHAPES[command]())
    def check(shape):
        nonlocal slowest
        started = time.perf_counter()
        signal.alarm(study_seconds)
        try:
            outcome = edge_sweep.run(command, shape)
        finally:
            signal.alarm(0)
        slowest = max(slowest, (time.perf_counter() - started, shape), key=lambda pair: pair[0])
        counts["studies"] += 1
        counts[outcome.status] += 1
        for kind, found in (("words", outcome.problems), ("contradictions", outcome.contradictions),
                            ("level_ranks", outcome.level_ranks)):
            if found:
                counts[kind] += 1
                examples.setdefault(kind, (found[0], shape))
        if outcome.status == "raised":
            examples.setdefault("raised", (outcome.message, shape))

    started, cpu = time.perf_counter(), time.process_time()
    check()
    return {"command": command, "seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu,
            "counts": counts, "examples": examples, "slowest": slowest}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=10_000, help="studies in all, split over the commands")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--memory-gb", type=float, default=6.0, help="data each process may hold")
    parser.add_argument("--study-seconds", type=int, default=300, help="wall seconds a study may take")
    parser.add_argument("--commands", nargs="+", choices=COMMANDS, default=list(COMMANDS),
                        help="the commands swept (default: all); --studies is split over these")
    args = parser.parse_args()
    per_command = max(1, args.studies // len(args.commands))
    jobs = [(command, number, min(CHUNK, per_command - start), args.study_seconds)
            for command in args.commands for number, start in enumerate(range(0, per_command, CHUNK))]
    with multiprocessing.get_context("spawn").Pool(args.processes, initializer=limit_process,
                                                   initargs=(args.memory_gb,)) as pool:
        results = pool.map(sweep_chunk, jobs, chunksize=1)
    rows, examples, slowest = {}, {}, {}
    for result in results:
        slowest[result["command"]] = max(slowest.get(result["command"], (0.0, None)), result["slowest"],
                                         key=lambda pair: pair[0])
        row = rows.setdefault(result["command"], collections.Counter())
        row.update(result["counts"])
        row["seconds"] += result["seconds"]
        row["cpu"] += result["cpu"]
        for kind, example in result["examples"].items():
            examples.setdefault((result["command"], kind), example)
    table = pd.DataFrame([{"command": command, **{k: row.get(k, 0) for k in (
        "studies", "ok", "refused", "raised", "words", "contradictions", "level_ranks")},
        "wall s a study": row["seconds"] / max(row["studies"], 1), "CPU-s a study": row["cpu"] / max(row["studies"], 1)}
        for command, row in rows.items()])
    print(table.to_string(index=False, float_format="{:.2f}".format))
    print(f"in all: {int(table['studies'].sum()):,} studies, {int(table['raised'].sum())} exceptions, "
          f"{int(table['words'].sum())} reports with nan / inf / 'a overall', "
          f"{int(table['contradictions'].sum())} verdicts contradicting their tables, "
          f"{int(table['level_ranks'].sum())} with level models ranked apart (issue 50 item 5)")
    for (command, kind), (what, shape) in examples.items():
        print(f"{command} {kind}: {what}\n    {shape}")
    for command, (seconds, shape) in slowest.items():
        print(f"{command} slowest study: {seconds:.1f} s\n    {shape}")


if __name__ == "__main__":
    main()
