"""Benchmark: how long a `dialeval` command takes before it does anything (issue 21, start-up).

Each command class is timed twice in the same run, as subprocesses: through `dialeval` (plugin commands
dispatched straight to their module, the command list cached) and through ParlAI's own superscript with
every plugin script registered, which is how every command ran before (the baseline).
Targets: an analysis command's --help and its errors under 1.5 s, `dialeval help` under 2 s.

``--launch-baseline DIR`` times ``dialeval launch live_chat_da conf=offline_small`` until it prints its worker
URL instead (wall, and CPU of the launch process): this checkout against the source tree DIR (an earlier
commit: ``git archive COMMIT | tar -x -C DIR``, with DIR/crowdsourcing's node_modules and frontend build
linked from this checkout), the two alternating in the same run.
Usage: .venv/bin/python benchmarks/bench_startup.py [--repeat N] [--launch-baseline DIR]
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from parlai_dialeval.testing.ports import free_port

DIALEVAL = Path(sys.executable).with_name("dialeval")
HERE = Path(__file__).resolve().parents[1]
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


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process and its waited-for children (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def launch_costs(src: Path, env: dict) -> tuple[float, float]:
    """Wall and CPU seconds of `dialeval launch` from the source tree ``src`` until its worker URL."""
    folder = Path(tempfile.mkdtemp())
    log = folder / "launch.log"
    command = [sys.executable, "-m", "parlai_dialeval.cli", "launch", "live_chat_da", "conf=offline_small",
               f"mephisto.architect.port={free_port()}", "--mephisto-data", str(folder / "mephisto")]
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=src,
                                env={**env, "PYTHONPATH": str(src), "DIALEVAL_SRC_ROOT": str(src)})
    while "in your browser" not in log.read_text():
        if proc.poll() is not None or time.perf_counter() - start > 300:
            raise SystemExit(f"the launch from {src} printed no worker URL:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    wall, cpu = time.perf_counter() - start, process_cpu(proc.pid)
    named = re.search(r"messages go to (\S+\.log)", log.read_text())
    router = re.search(r"Server running locally with pid (\d+)", Path(named[1]).read_text()) if named else None
    for _ in range(2):  # Ctrl-C twice, as a researcher stops it
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
    proc.wait(60)
    if router:
        try:
            os.kill(int(router[1]), signal.SIGTERM)
        except ProcessLookupError:
            pass
    return wall, cpu


def compare_launches(baseline: Path, repeat: int, env: dict) -> None:
    runs = {"this checkout": [], f"baseline {baseline}": []}
    for _ in range(repeat):
        for label, src in zip(runs, (HERE, baseline)):
            runs[label].append(launch_costs(src, env))
    print(f"dialeval launch live_chat_da conf=offline_small until its worker URL; median of {repeat} runs")
    for label, costs in runs.items():
        walls, cpus = zip(*costs)
        print(f"{label:40} wall {statistics.median(walls):6.2f}s  CPU {statistics.median(cpus):6.2f}s  "
              f"(CPU of each run: {', '.join(f'{c:.2f}' for c in cpus)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command and path (median reported)")
    parser.add_argument("--launch-baseline", type=Path, default=None, metavar="DIR",
                        help="time `dialeval launch` against the source tree DIR instead (see above)")
    args = parser.parse_args()
    env = {**os.environ, "XDG_CACHE_HOME": tempfile.mkdtemp()}
    if args.launch_baseline:
        return compare_launches(args.launch_baseline.resolve(), args.repeat, env)
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
