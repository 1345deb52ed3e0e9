"""Load through the real router: live-chat workers speaking the worker page's protocol to the node router.

`dialeval launch live_chat_da conf=offline_small` runs as it would for real (LocalArchitect: the Mephisto
server process + the node router on 127.0.0.1; offline bots: QC bot, TF-IDF retrieval, repeat_query).
Each simulated worker does what the page does (tests/crowdsourcing/page_client.py: mephisto-task 2.0.4 plus
the router's session token and the server's acknowledgements of stored messages). It drives a whole HIT from the server's state only (3 conversations of INPUTS messages, ratings,
feedback), waiting for each reply and thinking about THINK s before typing again; if its socket drops it
reloads (a new /request_agent, retried every 2 s) and carries on from whatever state the server sends.

Run 1 (one launch): 1 worker alone (the baseline), then WORKERS workers at once, each bounded by
DURATION s. Run 2 (a second task): WORKERS workers; after KILL_AFTER s the server and the router are
killed (SIGKILL, as in a crash) and `dialeval launch` is started again on the same data; the workers
reload until it answers. Prints reply latency p50/p95/p99 (send -> reply on the socket), messages sent,
confirmed by the server (what the page shows as sent) and stored (the export's worker turns, matched by
text): a confirmed message not stored is a lost one, router and server memory at start and end, and,
for run 2, what the workers saw. Traffic goes to 127.0.0.1 only; every loop is bounded.

    .venv/bin/python benchmarks/bench_router_load.py [--workers 50] [--port 3350] [--part load|restart]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import psutil

import load_generator  # benchmarks/, beside this script

SLOTS = 3


PageClient = load_generator.PageClient


def memory_mb(pid: int | None) -> float:
    """RSS of a process and its children (the server's launch process, or the node router)."""
    try:
        process = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)]) / 2**20
    except (psutil.Error, TypeError, ValueError):
        return float("nan")


def clients_for(names, args, deadline: float, first: int = 0) -> list[PageClient]:
    """Workers, each from a loopback address of its own (the router's budgets are per address); ``first``: the
    index of the first one's address (a second wave takes addresses of its own too)."""
    return [PageClient(name, args.port, args.inputs, args.think, deadline, address=load_generator.own_address(first + i))
            for i, name in enumerate(names)]


async def wave(clients, during=None):
    """Run the clients to the end or their deadline; ``during`` runs alongside (the mid-run kill)."""
    async def work(client):
        async with client.http_client() as http:  # its connections come from its own address
            await client.run(http)

    start = time.time()
    await asyncio.gather(*map(work, clients), *([during()] if during else []))
    return time.time() - start


def describe(label: str, clients, wall: float, human: Counter) -> np.ndarray:
    lat = np.array([x for c in clients for x in c.latencies]) * 1000
    sent = [t for c in clients for t in c.sent]
    confirmed = [t for c in clients for t in c.confirmed]
    lost = [t for t in confirmed if t not in human]
    unconfirmed_lost = [t for t in sent if t not in human and t not in confirmed]
    doubled = sum(n > 1 for n in human.values())
    quantiles = "p50 / p95 / p99 " + " / ".join(f"{np.percentile(lat, q):.0f}" for q in (50, 95, 99)) + " ms" \
        if len(lat) else "no replies"
    print(f"{label}: {wall:.1f} s, {sum(c.done for c in clients)}/{len(clients)} HITs submitted; reply latency "
          f"{quantiles} ({len(lat)} replies); messages sent {len(sent)}, confirmed by the server {len(confirmed)}, "
          f"stored {sum(human[t] > 0 for t in sent)}; confirmed but lost {len(lost)}, never confirmed and not "
          f"stored {len(unconfirmed_lost)}; stored twice {doubled}")
    return lat


async def load_run(args, tmp: Path, CliRun) -> None:
    task = "bench_router_load"
    (tmp / "load").mkdir()
    run = CliRun("live_chat_da", tmp / "load", launch_overrides(args, task, args.workers + 1))
    memory = {"start": (memory_mb(run.router_pid), memory_mb(run.proc.pid))}
    try:
        alone = clients_for(["alone"], args, time.time() + args.duration)
        alone_wall = await wave(alone)
        loaded = clients_for([f"w{i:02d}" for i in range(args.workers)], args, time.time() + args.duration)
        load_wall = await wave(loaded)
        memory["end"] = (memory_mb(run.router_pid), memory_mb(run.proc.pid))
        try:
            await asyncio.to_thread(run.proc.wait, 60)  # every unit submitted: the run ends by itself
        except subprocess.TimeoutExpired:
            print("the launch was still running 60 s after the last worker: stopped with Ctrl-C")
    finally:
        run.stop()
    report, convs, human = load_generator.stored_texts(task, run.data_dir, tmp / "load.jsonl")
    lat1 = describe("1 worker alone", alone, alone_wall, human)
    latn = describe(f"{args.workers} workers at once", loaded, load_wall, human)
    if len(lat1) and len(latn):
        print("ratio under load / alone: " + ", ".join(
            f"p{q} {np.percentile(latn, q) / np.percentile(lat1, q):.1f}x" for q in (50, 95, 99)))
    print("memory (RSS, MB) router / server: start {:.0f} / {:.0f}, end {:.0f} / {:.0f}".format(
        *memory["start"], *memory.get("end", (float("nan"),) * 2)))
    print(f"stored: {len(convs)} conversations, {sum(c['status'] == 'complete' for c in convs)} complete; "
          + report.summary().replace("\n", "; "))
    problems = [f"{c.name}: {', '.join(c.seen)}" for c in alone + loaded if c.seen]
    print("workers saw: " + ("; ".join(problems) if problems else "nothing unusual"))


async def restart_run(args, tmp: Path, CliRun) -> None:
    task = "bench_router_restart"
    overrides = launch_overrides(args, task, args.workers)
    folder = tmp / "restart"
    folder.mkdir()
    run = CliRun("live_chat_da", folder, overrides)
    runs = [run]
    start_memory = (memory_mb(run.router_pid), memory_mb(run.proc.pid))
    killed: dict = {}
    # bounded: until the relaunch answers (its start-up takes minutes on a busy machine), then DURATION more
    clients = clients_for([f"r{i:02d}" for i in range(args.workers)], args, time.time() + args.kill_after + 600)

    async def crash_and_relaunch():
        await asyncio.sleep(args.kill_after)
        killed["at"] = time.time()
        again = await load_generator.crash_and_relaunch(run, lambda: CliRun("live_chat_da", folder, overrides))
        runs.append(again)
        killed["back_after"] = time.time() - killed["at"]
        for client in clients:
            client.deadline = time.time() + args.duration

    try:
        wall = await wave(clients, crash_and_relaunch)
        end_memory = (memory_mb(runs[-1].router_pid), memory_mb(runs[-1].proc.pid))
    finally:
        for launched in runs:
            launched.stop()
    resumed = "resum" in (folder / "launch.log").read_text().lower() if (folder / "launch.log").exists() else False
    report, convs, human = load_generator.stored_texts(task, runs[-1].data_dir, tmp / "restart.jsonl")
    print(f"\nserver + router killed after {args.kill_after:.0f} s; relaunched, answering again after "
          f"{killed.get('back_after', float('nan')):.1f} s; the relaunch said it resumed: {resumed}")
    describe(f"{args.workers} workers across the restart", clients, wall, human)
    lost = [c.sent_at[t] - killed["at"] for c in clients for t in c.sent if t not in human]
    if lost:
        print(f"the messages not stored were sent {', '.join(f'{x:+.1f}' for x in sorted(lost))} s from the kill "
              "(none was confirmed: the page never showed it as sent)")
    print("memory (RSS, MB) router / server: start {:.0f} / {:.0f}, end (relaunched) {:.0f} / {:.0f}".format(
        *start_memory, *end_memory))
    statuses = Counter(c["status"] for c in convs)
    print(f"stored: {len(convs)} conversations ({dict(statuses)}); " + report.summary().replace("\n", "; "))
    seen = Counter(event for c in clients for event in c.seen)
    print("workers saw: " + "; ".join(f"{n} x {event}" for event, n in sorted(seen.items())))


def launch_overrides(args, task: str, units: int) -> list[str]:
    return ["conf=offline_small", f"mephisto.architect.port={args.port}", f"mephisto.task.task_name={task}",
            f"mephisto.blueprint.num_conversations={units}", "mephisto.task.max_num_concurrent_units=0",
            f"live_chat.min_inputs={args.inputs}", "live_chat.seed=0"]


def add_wave_args(parser: argparse.ArgumentParser, workers: int, duration: float, port: int) -> None:
    """The workers' options (bench_router_flood.py takes the same)."""
    parser.add_argument("--workers", type=int, default=workers)
    parser.add_argument("--inputs", type=int, default=4, help="worker messages per conversation")
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds between a reply and the next message")
    parser.add_argument("--duration", type=float, default=duration, help="bound on each wave, seconds")
    parser.add_argument("--port", type=int, default=port)


def start(args, prefix: str):
    """(a fresh folder, the tests' CliRun), the machine line printed."""
    random.seed(0)
    print(f"machine: {os.cpu_count()} CPU cores, no GPU, load average {os.getloadavg()[0]:.1f} at start; "
          f"{SLOTS} conversations x {args.inputs} messages per HIT, think time ~{args.think:.1f} s")
    return Path(tempfile.mkdtemp(prefix=prefix)), load_generator.test_helper("protocol_harness").CliRun


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_wave_args(parser, workers=50, duration=240, port=3350)
    parser.add_argument("--kill-after", type=float, default=20, help="seconds into run 2 when the server is killed")
    parser.add_argument("--part", choices=("both", "load", "restart"), default="both",
                        help="run 1 (load), run 2 (restart) or both")
    args = parser.parse_args()
    tmp, CliRun = start(args, "bench_router_")
    if args.part in ("both", "load"):
        asyncio.run(load_run(args, tmp, CliRun))
    if args.part in ("both", "restart"):
        asyncio.run(restart_run(args, tmp, CliRun))
    return 0


if __name__ == "__main__":
    sys.exit(main())
