"""Sharded scoring (parlai_dialeval/distributed.py): parts, restart, refusal of a foreign folder, and
``dialeval fed`` under torchrun with 2 gloo CPU processes writing the single-process output byte for byte."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

import psutil
import pytest
import torch

from parlai_dialeval.cli import main
from parlai_dialeval.distributed import ShardError, World, run_parts
from tiny_lm import CORPUS, build_gpt2

ITEMS = [{"id": str(i), "x": i} for i in range(11)]
IDENTITY = {"command": "test", "lm": "m1"}


def square(calls):
    def work(part):
        calls.append([item["id"] for item in part])
        return [{"id": item["id"], "y": item["x"] ** 2} for item in part]
    return work


def test_parts_in_memory_and_on_disk_give_the_same_rows(tmp_path):
    memory = run_parts(ITEMS, square([]), identity=IDENTITY, part_size=4, folder=None, world=World())
    disk = run_parts(ITEMS, square([]), identity=IDENTITY, part_size=4, folder=tmp_path / "s", world=World())
    assert memory == disk == [{"id": str(i), "y": i * i} for i in range(11)]
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "manifest.json", "part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"]


def test_a_crashed_run_resumes_without_rescoring_finished_parts(tmp_path):
    calls = []
    work = square(calls)

    def crashing(part):
        if part[0]["id"] == "8":
            raise RuntimeError("killed")
        return work(part)

    with pytest.raises(RuntimeError):
        run_parts(ITEMS, crashing, identity=IDENTITY, part_size=4, folder=tmp_path, world=World(), log=None)
    assert calls == [["0", "1", "2", "3"], ["4", "5", "6", "7"]]
    calls.clear()
    rows = run_parts(ITEMS, work, identity=IDENTITY, part_size=4, folder=tmp_path, world=World(), log=None)
    assert calls == [["8", "9", "10"]]  # only the part that was not written
    assert rows == [{"id": str(i), "y": i * i} for i in range(11)]


def test_a_folder_of_another_run_or_a_foreign_part_refuses_to_merge(tmp_path):
    run_parts(ITEMS, square([]), identity=IDENTITY, part_size=4, folder=tmp_path, world=World(), log=None)
    with pytest.raises(ShardError, match=r"different run \(differs in: lm\)"):
        run_parts(ITEMS, square([]), identity=IDENTITY | {"lm": "m2"}, part_size=4, folder=tmp_path,
                  world=World(), log=None)
    with pytest.raises(ShardError, match=r"differs in: items"):
        run_parts(ITEMS[:-1], square([]), identity=IDENTITY, part_size=4, folder=tmp_path, world=World(), log=None)
    # a part copied in from another run's folder
    other = tmp_path.parent / "other"
    run_parts(ITEMS, square([]), identity=IDENTITY | {"lm": "m2"}, part_size=4, folder=other, world=World(), log=None)
    (tmp_path / "part-00001.jsonl").write_bytes((other / "part-00001.jsonl").read_bytes())
    with pytest.raises(ShardError, match="part-00001.jsonl: part of a different run"):
        run_parts(ITEMS, square([]), identity=IDENTITY, part_size=4, folder=tmp_path, world=World(), log=None)


LINES = 160  # 80 parts of 2: the kill after 3 leaves most unwritten (each part takes a rank tens of ms)
PARTS = LINES // 2


@pytest.fixture(scope="module")
def fed_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("sharded-fed")
    build_gpt2(root / "lm")
    build_gpt2(root / "other-lm", seed=1)
    rng = random.Random(0)
    lines = [" <|endoftext|> ".join(rng.sample(CORPUS, rng.randint(1, 4))) for _ in range(LINES)]
    (root / "convs.txt").write_text("\n".join(lines) + "\n")
    return root


def _args(root, out, lm="lm", extra=()):
    return ["fed", "--data", str(root / "convs.txt"), "--data-format", "fed-text", "--out", str(root / out),
            "--lm", str(root / lm), "--part-size", "2", "--qualities", "turn", *extra]


def _torchrun(root, out, **popen):
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone",
                "-m", "parlai_dialeval.cli"]
    env = dict(os.environ, OMP_NUM_THREADS="1", TQDM_DISABLE="1")
    return subprocess.Popen(launcher + _args(root, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, **popen)


@pytest.fixture
def one_thread():
    # torchrun gives each of several ranks one thread; the single process does the same arithmetic.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_torchrun_two_gloo_processes_write_the_single_process_output(fed_setup, one_thread, capsys):
    root = fed_setup
    assert main(_args(root, "single.jsonl")) == 0
    expected = (root / "single.jsonl").read_bytes()
    assert len(expected.splitlines()) == LINES
    assert list(json.loads(expected.splitlines()[0])["scores"]) == [
        "interesting", "engaging", "specific", "relevant", "correct", "semantically appropriate",
        "understandable", "fluent"]

    # Killed (SIGKILL, the launcher and both ranks) once a few parts are written ...
    shards = root / "two.jsonl.shards"
    run = _torchrun(root, "two.jsonl")
    deadline = time.monotonic() + 240
    while len(list(shards.glob("part-*.jsonl"))) < 3 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    # torchrun starts each rank in a session of its own: kill the ranks by their ids, then the launcher.
    for process in psutil.Process(run.pid).children(recursive=True) + [psutil.Process(run.pid)]:
        process.kill()
    run.communicate()
    kept = {p.name: p.stat().st_mtime_ns for p in shards.glob("part-*.jsonl")}
    assert 3 <= len(kept) < PARTS and not (root / "two.jsonl").exists()
    # ... and relaunched: the finished parts are kept, not scored again, and the output is the single run's.
    again = _torchrun(root, "two.jsonl")
    out, err = again.communicate(timeout=300)
    # a rank's own error comes first in the launcher's stderr, torchrun's summary last; FED's progress bars
    # (shown whatever TQDM_DISABLE says: the command asks for them) would hide it
    told = "\n".join(line for line in err.splitlines() if line.strip() and not line.startswith("FED:"))
    assert again.returncode == 0, told if len(told) < 6000 else f"{told[:4000]}\n...\n{told[-2000:]}"
    assert (f"{PARTS} parts of up to 2 items, {len(kept)} already written, {PARTS - len(kept)} to score on 2 "
            "processes") in out
    assert {name: (shards / name).stat().st_mtime_ns for name in kept} == kept
    assert (root / "two.jsonl").read_bytes() == expected

    # The same folder for another model: refused, one line, exit 2, nothing written.
    capsys.readouterr()
    assert main(_args(root, "foreign.jsonl", lm="other-lm", extra=("--shard-dir", str(shards)))) == 2
    assert "shard folder of a different run (differs in: lm)" in capsys.readouterr().err
    assert not (root / "foreign.jsonl").exists()
