"""The suite's xdist scheduler (tests/file_scheduling.py) driven through a whole run by simulated workers that
behave as xdist's do: a worker runs a test only once it holds the next one, or once told to stop."""
from __future__ import annotations

import heapq
from types import SimpleNamespace

from file_scheduling import CpuAwareFileScheduling, merge_recorded, read_timings

# (wall seconds, CPU seconds, tests) per file: two cores' worth of computing and browser-like waiting
FILES = {f"tests/compute_{i}.py": (30.0, 27.0, 3) for i in range(6)}
FILES |= {f"tests/wait_{i}.py": (60.0 + i, 6.0, 1) for i in range(6)}
FILES |= {"tests/new_file.py": (None, None, 4)}  # not in the timings: half a second a test, computing


class Worker:
    def __init__(self, name: str):
        self.name, self.held, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indexes) -> None:
        self.held += indexes

    def shutdown(self) -> None:
        self.shutting_down = True

    def runnable(self) -> bool:
        return len(self.held) >= 2 or (self.shutting_down and bool(self.held))

    def __repr__(self) -> str:
        return self.name


def scheduled(workers: int, cores: int = 2):
    """(scheduler, collection, workers) once xdist has handed out the first files, as at a run's start."""
    collection = [f"{file}::test_{n}" for file, (_, _, tests) in FILES.items() for n in range(tests)]
    timings = {file: (wall, cpu) for file, (wall, cpu, _) in FILES.items() if wall is not None}
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], option=SimpleNamespace(loadscopereorder=False))
    scheduler = CpuAwareFileScheduling(config, timings=timings, cores=cores)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    return scheduler, collection, nodes


def run_suite(workers: int, cores: int = 2):
    """Drive the scheduler through a run in simulated time; return what ran, when, where, and the stops."""
    scheduler, collection, nodes = scheduled(workers, cores)
    ran, clock, events, running, stopped_early = [], 0.0, [], set(), []

    def start(node):
        if node.runnable() and node not in running:
            file = collection[node.held[0]].split("::")[0]
            running.add(node)
            heapq.heappush(events, (clock + scheduler.expected(file)[0] / FILES[file][2], node.name, node))

    for node in nodes:
        start(node)
    while events:
        clock, _, node = heapq.heappop(events)
        running.discard(node)
        index = node.held.pop(0)
        ran.append((clock, node.name, collection[index]))
        if node.shutting_down and scheduler.workqueue and node.name not in dict(stopped_early):
            stopped_early.append((node.name, list(scheduler.workqueue)))
        scheduler.mark_test_complete(node, index)
        if node.shutting_down and not node.held:
            scheduler.remove_node(node)
        for other in nodes:
            start(other)
    return scheduler, collection, ran, stopped_early


def test_every_test_runs_once_and_the_run_ends():
    scheduler, collection, ran, _ = run_suite(workers=5)
    assert sorted(nodeid for _, _, nodeid in ran) == sorted(collection)
    assert scheduler.tests_finished and not scheduler.workqueue


def test_each_file_runs_whole_on_one_worker_and_in_its_own_order():
    _, _, ran, _ = run_suite(workers=5)
    workers_of = {}
    for _, worker, nodeid in ran:
        workers_of.setdefault(nodeid.split("::")[0], set()).add(worker)
    assert all(len(workers) == 1 for workers in workers_of.values())
    compute_0 = [nodeid for _, _, nodeid in ran if nodeid.startswith("tests/compute_0.py")]
    assert compute_0 == [f"tests/compute_0.py::test_{n}" for n in range(3)]


def test_the_first_files_fill_the_two_cores_and_the_other_workers_wait_on_pages():
    """Five workers on two cores: two computing files (0.9 of a core each) and three waiting ones, longest first
    (xdist's loadfile hands out the first five in collection order: five computing files on two cores)."""
    scheduler, _, nodes = scheduled(workers=5)
    first = {next(iter(scheduler.assigned_work[node])) for node in nodes}
    assert first == {"tests/compute_5.py", "tests/compute_4.py", "tests/wait_5.py", "tests/wait_4.py", "tests/wait_3.py"}


def test_once_only_computing_files_are_left_the_workers_beyond_the_cores_stop():
    _, _, _, stopped_early = run_suite(workers=5)
    assert stopped_early, "every worker kept taking computing files onto two full cores"
    for worker, left in stopped_early:
        assert left and all(file.startswith(("tests/compute_", "tests/new_file")) for file in left), (worker, left)
    assert len(stopped_early) <= 3  # two stay for the two cores


def test_the_committed_timings_name_files_that_exist():
    """A renamed or deleted file's figures would linger unread; a file missing from them still runs (as
    computing). Refresh: ``pytest tests -n 7 --dist loadfile --record-file-timings tests/file_timings.json``."""
    from conftest import REPO

    timings = read_timings()
    assert timings, "tests/file_timings.json is missing or empty"
    gone = sorted(file for file in timings if not (REPO / file).is_file())
    assert not gone, f"tests/file_timings.json names files that no longer exist: {gone}"
    assert all(wall >= 0 and cpu >= 0 for wall, cpu in timings.values())


def test_a_file_split_over_workers_records_the_sum_of_their_figures(tmp_path):
    # without --dist loadfile one file's tests run on several workers: the last shard's share (7.3 of about 85
    # CPU-s for test_edge_sweep.py) was written as the file's figure
    path = tmp_path / "timings.json"
    (tmp_path / "timings.json.gw0").write_text('{"tests/a.py": [10.0, 4.0], "tests/b.py": [1.0, 1.0]}')
    (tmp_path / "timings.json.gw1").write_text('{"tests/a.py": [5.0, 3.5]}')
    merge_recorded(path)
    assert read_timings(path) == {"tests/a.py": (15.0, 7.5), "tests/b.py": (1.0, 1.0)}
    assert not list(tmp_path.glob("timings.json.gw*"))
