"""Small pairwise analyses with text columns in Python strings (what importing parlai_dialeval.data sets) against
pandas 3's default Arrow strings (the baseline), on the same studies in the same run.

    .venv/bin/python benchmarks/bench_string_storage.py [--studies 30] [--repeats 2]

The studies are the edge sweep's analyze_pairwise studies (testing/edge_sweep.py, hypothesis-drawn, derandomised:
the same in both arms), each analysed as the test suite does. Each arm runs in a process of its own, the arms
alternating ``--repeats`` times; an untimed study first does the imports. Printed: CPU seconds a study in each arm
and their ratio. Result in benchmarks/README.md ("The test suite").
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ARM = """
import sys, time
import pandas as pd
from hypothesis import HealthCheck, Phase, given, settings
from parlai_dialeval.testing import edge_sweep  # imports parlai_dialeval.data: Python strings
storage, studies = sys.argv[1], int(sys.argv[2])
pd.set_option("mode.string_storage", storage)
shapes = []
@settings(max_examples=studies, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate))
@given(edge_sweep.SHAPES["analyze_pairwise"]())
def draw(shape):
    shapes.append(shape)
draw()
edge_sweep.run("analyze_pairwise", shapes[0])
start = time.process_time()
outcomes = [edge_sweep.run("analyze_pairwise", shape) for shape in shapes]
assert all(outcome.clean for outcome in outcomes)
print((time.process_time() - start) / len(shapes))
"""


def arm(storage: str, studies: int) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, "-c", ARM, storage, str(studies)], capture_output=True, text=True,
                          env=env, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main(studies: int, repeats: int) -> None:
    print(f"load {os.getloadavg()[0]:.1f}; {studies} analyze_pairwise studies of the edge sweep, {repeats} runs of "
          "each arm")
    seconds: dict[str, list[float]] = {"pyarrow": [], "python": []}
    start = time.monotonic()
    for _ in range(repeats):
        for storage in seconds:
            seconds[storage].append(arm(storage, studies))
            print(f"  {storage:8s} {seconds[storage][-1]:.3f} CPU-s a study")
    arrow, python = (min(values) for values in seconds.values())
    print(f"Arrow strings (baseline) {arrow:.3f} CPU-s a study, Python strings {python:.3f}: "
          f"{arrow / python:.2f}x faster (best of {repeats}); {time.monotonic() - start:.0f} s in all; "
          f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--studies", type=int, default=30, help="edge-sweep studies per run")
    options.add_argument("--repeats", type=int, default=2, help="runs of each arm, alternating")
    chosen = options.parse_args()
    main(chosen.studies, chosen.repeats)
