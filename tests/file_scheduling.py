"""Hand test files to xdist workers by what they take of the CPU (``--dist loadfile``), and record what they took.

Half of this suite's time goes to files that mostly wait (a person's pace in a browser, a server's timeouts: 5-20%
of a core) and half to files that compute. xdist hands files out in one fixed order, so with 3 workers the two
cores idled while workers waited, and with more the computing files met and slowed each other down. Here each
time a worker needs a file, it gets the longest computing file the cores have room for beside what the other
workers run, else the longest waiting file; once only computing files are left and the cores are full, a worker
stops. No maintained xdist scheduler weighs CPU (pytest-xdist 3.8 has load, loadscope, loadfile, loadgroup and
worksteal), hence this one.

What each file takes comes from ``file_timings.json`` beside this module: wall seconds and CPU seconds of the
worker's whole process tree (its servers and browsers included), measured by ``--record-file-timings PATH``. A
file missing there counts as computing, half a second per test. Stale figures cost speed, never a test.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import psutil
from xdist.scheduler import LoadFileScheduling

TIMINGS = Path(__file__).with_name("file_timings.json")
WAITING = 0.35  # a file using less than this share of a core mostly waits
UNKNOWN_SECONDS_PER_TEST = 0.5


def read_timings(path: Path = TIMINGS) -> dict[str, tuple[float, float]]:
    if not path.is_file():
        return {}
    return {file: (float(wall), float(cpu)) for file, (wall, cpu) in json.loads(path.read_text()).items()}


class CpuAwareFileScheduling(LoadFileScheduling):
    """``--dist loadfile`` (whole files to one worker each), choosing which file by the CPU left free."""

    def __init__(self, config, log=None, timings: dict[str, tuple[float, float]] | None = None,
                 cores: int | None = None):
        super().__init__(config, log)
        self.timings = read_timings() if timings is None else timings
        self.cores = cores or len(os.sched_getaffinity(0))

    def expected(self, file: str) -> tuple[float, float]:
        """(wall, cpu) seconds the file is expected to take."""
        if file in self.timings:
            return self.timings[file]
        guess = UNKNOWN_SECONDS_PER_TEST * len(self.workqueue.get(file, ())) or UNKNOWN_SECONDS_PER_TEST
        return guess, guess

    def demand(self, file: str) -> float:
        wall, cpu = self.expected(file)
        return cpu / wall if wall > 0 else 1.0

    def _wall_then_name(self, file: str) -> tuple[float, str]:
        """The key that puts the longest file last (``max``); ties by name, so every run chooses alike."""
        return self.expected(file)[0], file

    def _current(self, node) -> str | None:
        """The file a worker is busy with from now on: the last one given to it with tests still to run."""
        unfinished = [file for file, tests in self.assigned_work.get(node, {}).items() if not all(tests.values())]
        return unfinished[-1] if unfinished else None

    def choose(self, node) -> str | None:
        """The next file for ``node``, or None where it should stop (only computing files left, cores full)."""
        others = [other for other in self.assigned_work if other is not node and not other.shutting_down]
        load = sum(self.demand(file) for file in map(self._current, others) if file)
        room = self.cores - load
        computing = [file for file in self.workqueue if self.demand(file) >= WAITING]
        waiting = [file for file in self.workqueue if self.demand(file) < WAITING]
        fitting = [file for file in computing if self.demand(file) <= room]
        longest = self._wall_then_name
        if fitting:
            return max(fitting, key=longest)
        if waiting:
            return max(waiting, key=longest)
        if len(others) >= self.cores:
            return None
        return max(computing, key=longest)

    def _assign_work_unit(self, node) -> None:
        file = self.choose(node)
        if file is None:
            node.shutdown()  # runs the test it holds, then leaves the files to the others
            return
        self.workqueue.move_to_end(file, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        # a worker runs a test once it holds the next one (pytest's teardown needs it): the next file is
        # chosen when only the current file's last test is left, not two tests ahead as loadfile does
        if self._pending_of(self.assigned_work[node]) <= 1:
            self._assign_work_unit(node)


class FileTimingRecorder:
    """Worker side of ``--record-file-timings``: wall and process-tree CPU per file, written at the end as
    ``PATH.<worker>``; the controller merges them into ``PATH``."""

    def __init__(self, path: Path, worker: str):
        self.path, self.worker = path, worker
        self.me = psutil.Process()
        self.totals: dict[str, list[float]] = {}

    def tree_cpu(self) -> float:
        """CPU seconds of this process, its reaped children and its living descendants."""
        processes = [self.me]
        try:
            processes += self.me.children(recursive=True)
        except psutil.Error:
            pass
        total = 0.0
        for process in processes:
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system + times.children_user + times.children_system
        return total

    def measure(self, nodeid: str):
        file = nodeid.split("::", 1)[0]
        start_wall, start_cpu = time.monotonic(), self.tree_cpu()
        yield
        totals = self.totals.setdefault(file, [0.0, 0.0])
        totals[0] += time.monotonic() - start_wall
        # a process alive at the start and gone by the end without a reaper in the tree (a previous file's
        # server killed meanwhile) takes its CPU with it: a test never counts less than none
        totals[1] += max(0.0, self.tree_cpu() - start_cpu)

    def write(self) -> None:
        Path(f"{self.path}.{self.worker}").write_text(json.dumps(self.totals))


def merge_recorded(path: Path) -> None:
    """The workers' figures in one file; a test file whose tests ran on several workers (a run without
    ``--dist loadfile``) gets the sum of their figures, not the last worker's share."""
    merged: dict[str, list[float]] = {}
    for shard in sorted(path.parent.glob(f"{path.name}.*")):
        for file, (wall, cpu) in json.loads(shard.read_text()).items():
            total = merged.setdefault(file, [0.0, 0.0])
            total[0], total[1] = total[0] + wall, total[1] + cpu
        shard.unlink()
    write_timings(path, {file: [round(wall, 1), round(cpu, 1)] for file, (wall, cpu) in merged.items()})


def write_timings(path: Path, timings: dict) -> None:
    """One line per file, so that a new measurement's diff reads file by file."""
    lines = [f"{json.dumps(file)}: {json.dumps(list(figures))}" for file, figures in sorted(timings.items())]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")
