"""Sharded scoring on torch.distributed: every process scores its share of fixed-size parts.

Launched by ``torchrun`` (or ``accelerate launch``, or any launcher that sets ``RANK``/``WORLD_SIZE``
/``MASTER_ADDR``), each process takes the unfinished parts ``rank, rank + N, ...``, writes each part
atomically to the shard folder, and rank 0 merges the parts in input order once all are written. The
launcher schedules and restarts processes; this module only splits the work, checks the folder and
merges. A restarted run skips the parts already written. Parts are the same fixed slices of the input
whatever the number of processes (a single process scores them one after another), so the merged
output equals a single-process run's.

The folder's ``manifest.json`` records what its parts were computed from (model, settings, a digest of
the input); a folder made for anything else is refused, as is a part whose header disagrees.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Callable, Sequence

from parlai_dialeval.atomic import atomic_open
from parlai_dialeval.errors import DialevalError

MANIFEST = "manifest.json"
# Ranks wait for the slowest one at the end; scoring a large input can take many hours.
COLLECTIVE_TIMEOUT = timedelta(hours=48)


class ShardError(DialevalError):
    """A shard folder that does not belong to this run, or a part that is damaged."""


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_world() -> World:
    """This process's place among the launched ones (one process, rank 0, when not launched).

    Coordination uses the gloo backend whatever the device: the ranks exchange only a few small
    Python objects (errors, the list of finished parts), never tensors."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return World()
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", timeout=COLLECTIVE_TIMEOUT)
        # A rank that exits with its group still open can abort its peers' gloo threads.
        atexit.register(dist.destroy_process_group)
    return World(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def device_for(world: World, device: str | None) -> str | None:
    """One model copy per GPU: rank ``local_rank`` of a node takes GPU ``local_rank`` (unless a device
    was named). ``None`` keeps the scorer's own choice (CUDA when present, else CPU)."""
    if device is not None or world.size <= 1:
        return device
    import torch

    if torch.cuda.is_available():
        return f"cuda:{world.local_rank % torch.cuda.device_count()}"
    return "cpu"


def add_shard_args(parser) -> None:
    """--shard-dir and --part-size, shared by every command that scores in parts."""
    group = parser.add_argument_group("Sharding (launch with torchrun for several processes or GPUs)")
    group.add_argument("--shard-dir", default=None, metavar="DIR",
                       help="folder of finished parts: a rerun skips them (default with several processes: "
                            "OUT.shards; on several nodes it must be on a filesystem every node sees)")
    group.add_argument("--part-size", type=int, default=256, metavar="N",
                       help="items per part (the unit of work shared out and of restart)")


def shard_folder(opt, world: World) -> str | None:
    return opt.get("shard_dir") or (f"{opt['out']}.shards" if world.size > 1 else None)


def digest(value) -> str:
    """sha256 of a JSON-able value (keys sorted), to tell inputs and settings apart."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _everyone(world: World, value):
    """Every rank's ``value`` (a list of one per rank); just ``[value]`` in a single process."""
    if world.size <= 1:
        return [value]
    import torch.distributed as dist

    gathered = [None] * world.size
    dist.all_gather_object(gathered, value)
    return gathered


def _raise_any(world: World, error: str | None) -> None:
    errors = [e for e in _everyone(world, error) if e]
    if errors:
        raise ShardError(errors[0])


def split(items: Sequence, part_size: int) -> list[list]:
    if part_size < 1:
        raise DialevalError(f"--part-size must be at least 1 (got {part_size})")
    return [list(items[start: start + part_size]) for start in range(0, len(items), part_size)]


class ShardFolder:
    """``manifest.json`` plus ``part-00000.jsonl`` ...: a header line ``{"part", "run", "items"}``,
    then one JSON object per item."""

    def __init__(self, path: str | os.PathLike, identity: dict, n_parts: int):
        self.path = Path(path)
        self.identity = json.loads(json.dumps(identity))  # as the manifest will read back (tuples -> lists)
        self.run = digest(identity)
        self.n_parts = n_parts

    def part_path(self, index: int) -> Path:
        return self.path / f"part-{index:05d}.jsonl"

    def check_manifest(self, create: bool) -> None:
        """Refuse a folder made for another model, setting or input, naming what differs."""
        manifest = self.path / MANIFEST
        if manifest.exists():
            try:
                recorded = json.loads(manifest.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                raise ShardError(f"{manifest}: not valid JSON; remove the shard folder {self.path} "
                                 f"to start again") from None
            theirs = recorded.get("identity", {}) if isinstance(recorded, dict) else {}
            differ = sorted(k for k in set(theirs) | set(self.identity) if theirs.get(k) != self.identity.get(k))
            if differ:
                raise ShardError(f"{self.path}: shard folder of a different run (differs in: "
                                 f"{', '.join(differ)}); refusing to merge its parts: use another "
                                 f"folder, or remove this one to start again")
        elif create:
            self.path.mkdir(parents=True, exist_ok=True)
            with atomic_open(manifest) as handle:
                json.dump({"run": self.run, "parts": self.n_parts, "identity": self.identity}, handle, indent=1)
                handle.write("\n")

    def finished(self) -> list[int]:
        """Parts already written (each checked to belong to this run)."""
        return [i for i in range(self.n_parts) if self.part_path(i).exists() and self.read(i) is not None]

    def write(self, index: int, rows: list[dict]) -> None:
        with atomic_open(self.part_path(index)) as handle:
            handle.write(json.dumps({"part": index, "run": self.run, "items": len(rows)}) + "\n")
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")

    def read(self, index: int, expected: int | None = None) -> list[dict]:
        path = self.part_path(index)
        lines = path.read_text(encoding="utf-8").splitlines()
        try:
            header = json.loads(lines[0]) if lines else {}
            rows = [json.loads(line) for line in lines[1:]]
        except json.JSONDecodeError as error:
            raise ShardError(f"{path}: damaged part ({error.msg}); remove it to score it again") from None
        if header.get("run") != self.run or header.get("part") != index:
            raise ShardError(f"{path}: part of a different run (header {lines[0][:120] if lines else ''}); "
                             f"refusing to merge")
        if header.get("items") != len(rows) or (expected is not None and len(rows) != expected):
            raise ShardError(f"{path}: {len(rows)} items, expected {expected or header.get('items')}; "
                             f"remove it to score it again")
        return rows


def run_parts(items: Sequence, work: Callable[[list], list[dict]], *, identity: dict, part_size: int,
              folder: str | os.PathLike | None, world: World, log=print) -> list[dict] | None:
    """Score ``items`` part by part with ``work`` (a part's items -> one JSON-able row per item).

    Without ``folder`` (single process only) the parts are scored in memory. With it, finished parts
    are skipped, the others shared out among the ranks, and rank 0 returns the merged rows (the
    other ranks ``None``)."""
    parts = split(items, part_size)
    if folder is None:
        if world.size > 1:
            raise DialevalError("several processes need a shard folder (--shard-dir) to share their parts")
        return [row for part in parts for row in _checked(work, part)]
    shards = ShardFolder(folder, identity | {"items": len(items), "part_size": part_size}, len(parts))
    error = None
    if world.main:
        try:
            shards.check_manifest(create=True)
        except ShardError as problem:
            error = str(problem)
    _raise_any(world, error)
    error, done = None, []
    try:
        done = shards.finished()
    except ShardError as problem:
        error = str(problem)
    _raise_any(world, error)
    todo = [i for i in range(len(parts)) if i not in set(done)]
    if world.main and log is not None:
        log(f"{shards.path}: {len(parts)} parts of up to {part_size} items, {len(done)} already written, "
            f"{len(todo)} to score on {world.size} process{'es' if world.size > 1 else ''}")
    error = None
    try:
        for index in todo[world.rank:: world.size]:
            shards.write(index, _checked(work, parts[index]))
    except DialevalError as problem:
        error = f"rank {world.rank}: {problem}"
    _raise_any(world, error)
    merged, error = None, None
    if world.main:
        try:
            merged = [row for index, part in enumerate(parts) for row in shards.read(index, expected=len(part))]
        except ShardError as problem:
            error = str(problem)
    _raise_any(world, error)  # no rank leaves before the merge is done
    return merged


def _checked(work, part: list) -> list[dict]:
    rows = work(part)
    if len(rows) != len(part):
        raise DialevalError(f"scored {len(rows)} rows for a part of {len(part)} items")
    return rows
