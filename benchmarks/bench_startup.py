"""Benchmark: how long a `dialeval` command takes before it does anything (issue 21, start-up).

Each command class is timed twice in the same run, as subprocesses: through `dialeval` (plugin commands
dispatched straight to their module, the command list cached) and through ParlAI's own superscript with
every plugin script registered, which is how every command ran before (the baseline).
Targets: an analysis command's --help and its errors under 1.5 s, `dialeval help` under 2 s.
Usage: .venv/bin/python benchmarks/bench_startup.py [--repeat N]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DIALEVAL = Path(sys.executable).with_name("dialeval")
BASELINE = "import sys; from parlai_dialeval.cli import main, run_through_parlai; run_through_parlai(sys.argv[1:])"
CASES = [
    ("analysis --help", ["analyze_pairwise", "--help"]),
    ("analysis, missing file", ["analyze_live_chat", "--data", "/nonexistent.jsonl", "--out", "/tmp/x"]),
    ("validate, missing file", ["validate", "--data", "/nonexistent.jsonl"]),
    ("launch --list", ["launch", "--list"]),
    ("dialeval help", ["help"]),
    ("ParlAI command --help", ["display_data", "--help"]),
]


def seconds(argv: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=env, timeout=300)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command and path (median reported)")
    args = parser.parse_args()
    env = {**os.environ, "XDG_CACHE_HOME": tempfile.mkdtemp()}
    subprocess.run([str(DIALEVAL), "help"], capture_output=True, env=env, timeout=300)  # fills the list cache
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; median of {args.repeat} runs")
    print(f"{'command':28} {'dialeval':>9} {'baseline':>9} {'ratio':>6}")
    for label, command in CASES:
        ours = statistics.median(seconds([str(DIALEVAL), *command], env) for _ in range(args.repeat))
        base = statistics.median(seconds([sys.executable, "-c", BASELINE, *command], env)
                                 for _ in range(args.repeat))
        print(f"{label:28} {ours:8.2f}s {base:8.2f}s {base / ours:5.1f}x")


if __name__ == "__main__":
    main()
